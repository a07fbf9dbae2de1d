#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang++-14 in build-fuzz/ and runs each one for
# SECONDS (default 60) on a temporary copy of its seed corpus.
#
#   scripts/run-fuzz.sh [SECONDS]
#
# Exits non-zero when a target finds a crash, timeout, leak or out-of-memory input (or does not
# build); the reproducer paths are printed, and the work directory is kept. Replay one with
#   build-fuzz/tests/fuzz/<target> <reproducer>
# Environment: JOBS (build parallelism, default 2), FUZZ_BUILD_DIR (default <repo>/build-fuzz).
set -euo pipefail

secs="${1:-60}"
if ! [[ "${secs}" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS]   (a positive whole number of seconds per target)" >&2
  exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FUZZ_BUILD_DIR:-${root}/build-fuzz}"
jobs="${JOBS:-2}"
fuzz_src="${root}/tests/fuzz"

command -v clang++-14 >/dev/null || { echo "run-fuzz: clang++-14 not found" >&2; exit 2; }

cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLIBREYOLO_BUILD_FUZZERS=ON \
  -DLIBREYOLO_BUILD_TESTS=ON \
  -DLIBREYOLO_BUILD_BENCH=OFF \
  -DLIBREYOLO_PYTHON_ENV="$(bash "${root}/scripts/python-env.sh")"
cmake --build "${build}" -j "${jobs}" --target trace_reader_fuzzer profile_json_fuzzer \
  checkpoint_fuzzer

work="$(mktemp -d "${TMPDIR:-/tmp}/libreyolo-fuzz.XXXXXX")"
failed=0
summary=()

# run_target <binary name> <seed corpus dir name> [dictionary, default trace.dict]
run_target() {
  local name="$1" seeds="$2" dict="${3:-trace.dict}"
  local bin="${build}/tests/fuzz/${name}"
  local dir="${work}/${name}"
  mkdir -p "${dir}/corpus" "${dir}/artifacts"
  cp -R "${fuzz_src}/corpus/${seeds}/." "${dir}/corpus/"
  echo "=== ${name}: ${secs}s, log ${dir}/fuzz.log"
  local rc=0
  # The outer timeout only guards against libFuzzer itself wedging; -max_total_time ends the run.
  ( cd "${dir}" &&
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    timeout --kill-after=30 "$((secs + 120))" "${bin}" \
      -max_total_time="${secs}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -dict="${fuzz_src}/${dict}" -artifact_prefix="${dir}/artifacts/" \
      -print_final_stats=1 corpus ) >"${dir}/fuzz.log" 2>&1 || rc=$?
  local execs rate
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${dir}/fuzz.log" | tail -n1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "${dir}/fuzz.log" | tail -n1)"
  summary+=("${name}: ${execs:-?} execs, ${rate:-?} exec/s, exit ${rc}")
  local found
  found="$(find "${dir}/artifacts" -type f | sort)"
  if [[ "${rc}" -ne 0 || -n "${found}" ]]; then
    failed=1
    echo "!!! ${name} FAILED (exit ${rc}); from ${dir}/fuzz.log:" >&2
    # The first report and the top of its stack (the full log has the rest).
    awk '/runtime error|ERROR: (Address|Leak|Undefined)|ERROR: libFuzzer|round trip failed|readers differ/ \
         { on = 1 } on && n++ < 14' "${dir}/fuzz.log" >&2
    if [[ -n "${found}" ]]; then
      echo "!!! reproducer(s) (replay: ${bin} <file>):" >&2
      echo "${found}" | sed 's/^/    /' >&2
    fi
  fi
}

run_target trace_reader_fuzzer trace
run_target profile_json_fuzzer profile
run_target checkpoint_fuzzer checkpoint checkpoint.dict

echo "=== summary"
printf '  %s\n' "${summary[@]}"
if [[ "${failed}" -ne 0 ]]; then
  echo "run-fuzz: FAILED; work directory kept: ${work}" >&2
  exit 1
fi
rm -rf "${work}"
echo "run-fuzz: OK (no crash, timeout or leak)"
