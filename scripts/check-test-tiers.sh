#!/usr/bin/env bash
# Every ctest test in BUILD_DIR carries exactly one tier label (cmake/LibreyoloTest.cmake):
# prints the count per tier, lists the tests that carry none or two, and exits 1 when there
# are any. Usage: scripts/check-test-tiers.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, sys
tiers = ["unit", "engine", "daemon_process", "python_peer", "browser"]
count = {t: 0 for t in tiers}
wrong = []
for test in json.load(sys.stdin)["tests"]:
    labels = next((p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"), [])
    mine = [l for l in labels if l in tiers]
    if len(mine) != 1:
        wrong.append("%s (tiers: %s)" % (test["name"], ", ".join(mine) or "none"))
    else:
        count[mine[0]] += 1
for t in tiers:
    print("  %-15s %4d tests" % (t, count[t]))
if wrong:
    print("check-test-tiers: %d tests without exactly one tier:" % len(wrong), file=sys.stderr)
    for w in wrong:
        print("  " + w, file=sys.stderr)
    print("give each test one tier: libreyolo_add_test(... TIER t) or libreyolo_test_tier(t name)",
          file=sys.stderr)
    sys.exit(1)
print("check-test-tiers: %d tests, each in one tier" % sum(count.values()))
'
