#!/usr/bin/env bash
# The whole test suite: dependencies, build, every GoogleTest/ctest test, then a short bounded
# fuzz run of the trace and profile parsers. Exits non-zero when anything fails.
# The tests run in tiers (cmake/LibreyoloTest.cmake): `unit` first, stopping at its first
# failure (a broken build or a wrong number fails in a minute, not after the slow tiers), then
# engine, daemon_process, python_peer and browser together. LIBREYOLO_TEST_TIERS=unit runs the
# first tier alone (a quick check while working).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
bash scripts/check-test-tiers.sh build
# A clean build has no ctest timing yet: seed it, so the longest tests start first.
costs=build/Testing/Temporary/CTestCostData.txt
if [ ! -s "$costs" ]; then
  mkdir -p "$(dirname "$costs")" && { grep -v '^#' tests/ctest-costs.txt; echo ---; } > "$costs"
fi
ctest --test-dir build --output-on-failure -j"$(nproc)" -L '^unit$' --stop-on-failure
if [ "${LIBREYOLO_TEST_TIERS:-all}" = "unit" ]; then exit 0; fi
ctest --test-dir build --output-on-failure -j"$(nproc)" -LE '^unit$'
if [ "${LIBREYOLO_SKIP_FUZZ:-0}" != "1" ]; then
  # The same inputs on every machine (--ci); LIBREYOLO_FUZZ_SECONDS=N explores instead.
  if [ -n "${LIBREYOLO_FUZZ_SECONDS:-}" ]; then
    bash scripts/run-fuzz.sh "${LIBREYOLO_FUZZ_SECONDS}"
  else
    bash scripts/run-fuzz.sh --ci
  fi
fi
