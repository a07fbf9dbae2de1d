#!/usr/bin/env bash
# Regenerate the expected metrics of every fixture trace with the oracle and compare
# them with the committed files in tests/fixtures/expected/.  Exit 1 on any
# difference (or a missing/extra file), 0 when they match.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

shopt -s nullglob
traces=("$root"/tests/fixtures/traces/*.json.gz "$root"/tests/fixtures/traces/*.json)
if [ ${#traces[@]} -eq 0 ]; then
  echo "check_expected: no traces in tests/fixtures/traces" >&2
  exit 1
fi
"$python" "$root/tests/oracle/trace_oracle.py" "${traces[@]}" --out-dir "$tmp"

if diff -ru "$root/tests/fixtures/expected" "$tmp"; then
  echo "check_expected: ${#traces[@]} expectation files match the oracle"
else
  echo "check_expected: tests/fixtures/expected differs from the oracle output" >&2
  exit 1
fi
