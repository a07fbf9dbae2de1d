#!/usr/bin/env bash
# The whole test suite: dependencies, build, every GoogleTest/ctest test, then a short bounded
# fuzz run of the trace and profile parsers. Exits non-zero when anything fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${LIBREYOLO_SKIP_FUZZ:-0}" != "1" ]; then
  # The same inputs on every machine (--ci); LIBREYOLO_FUZZ_SECONDS=N explores instead.
  if [ -n "${LIBREYOLO_FUZZ_SECONDS:-}" ]; then
    bash scripts/run-fuzz.sh "${LIBREYOLO_FUZZ_SECONDS}"
  else
    bash scripts/run-fuzz.sh --ci
  fi
fi
