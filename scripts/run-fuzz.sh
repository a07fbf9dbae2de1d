#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang++-14 in build-fuzz/ and runs each one on a
# temporary copy of its seed corpus.
#
#   scripts/run-fuzz.sh [SECONDS]   exploring: SECONDS (default 60) per target, a random seed
#                                   (printed; FUZZ_SEED=N repeats it)
#   scripts/run-fuzz.sh --ci        the test suite's run: seed 1 and a fixed number of inputs per
#                                   target, so every machine tries the same inputs (a fast one
#                                   does not find what a slow one cannot); about 30 s a target here
#
# Exits non-zero when a target finds a crash, timeout, leak or out-of-memory input (or does not
# build); the reproducer paths are printed, small ones also in base64 (a CI log is enough to
# replay one), and the work directory is kept. Replay one with
#   build-fuzz/tests/fuzz/<target> <reproducer>
# Environment: JOBS (build parallelism, default 2), FUZZ_BUILD_DIR (default <repo>/build-fuzz),
# FUZZ_SEED (a positive whole number).
set -euo pipefail

ci=0
secs=60
if [[ "${1:-}" == "--ci" ]]; then
  ci=1
  secs=600  # only the guard: the inputs bound the run
elif [[ -n "${1:-}" ]]; then
  secs="$1"
fi
if ! [[ "${secs}" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS | --ci]   (SECONDS: a positive whole number of seconds per target)" >&2
  exit 2
fi
seed="${FUZZ_SEED:-}"
if [[ "${ci}" -eq 1 && -z "${seed}" ]]; then seed=1; fi
if [[ -n "${seed}" && ! "${seed}" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzz: FUZZ_SEED must be a positive whole number, not '${seed}'" >&2
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
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DLIBREYOLO_BUILD_FUZZERS=ON \
  -DLIBREYOLO_BUILD_TESTS=ON \
  -DLIBREYOLO_BUILD_BENCH=OFF \
  -DLIBREYOLO_PYTHON_ENV="$(bash "${root}/scripts/python-env.sh")"
cmake --build "${build}" -j "${jobs}" --target trace_reader_fuzzer profile_json_fuzzer \
  checkpoint_fuzzer kineto_ipc_fuzzer

work="$(mktemp -d "${TMPDIR:-/tmp}/libreyolo-fuzz.XXXXXX")"
failed=0
summary=()

# run_target <binary name> <seed corpus dir name> <inputs with --ci> [dictionary, default trace.dict]
# Runs one target; its exit status lands in <work>/<name>/rc for report_target.
run_target() {
  local name="$1" seeds="$2" ci_runs="$3" dict="${4:-trace.dict}"
  local bin="${build}/tests/fuzz/${name}"
  local dir="${work}/${name}"
  mkdir -p "${dir}/corpus" "${dir}/artifacts"
  cp -R "${fuzz_src}/corpus/${seeds}/." "${dir}/corpus/"
  local bound=(-max_total_time="${secs}")
  if [[ "${ci}" -eq 1 ]]; then bound=(-runs="${ci_runs}"); fi
  local seeding=()
  if [[ -n "${seed}" ]]; then seeding=(-seed="${seed}"); fi
  echo "=== ${name}: ${bound[*]} ${seeding[*]}, log ${dir}/fuzz.log"
  local rc=0
  # The outer timeout only guards against libFuzzer itself wedging; -max_total_time ends the run.
  ( cd "${dir}" &&
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    timeout --kill-after=30 "$((secs + 120))" "${bin}" \
      "${bound[@]}" "${seeding[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -dict="${fuzz_src}/${dict}" -artifact_prefix="${dir}/artifacts/" \
      -print_final_stats=1 corpus ) >"${dir}/fuzz.log" 2>&1 || rc=$?
  echo "${rc}" > "${dir}/rc"
}

# report_target <binary name>: its summary line, and on a failure its first report and
# reproducers.
report_target() {
  local name="$1"
  local bin="${build}/tests/fuzz/${name}"
  local dir="${work}/${name}"
  local rc
  rc="$(cat "${dir}/rc" 2>/dev/null || echo 1)"
  local execs rate
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${dir}/fuzz.log" | tail -n1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "${dir}/fuzz.log" | tail -n1)"
  local used_seed
  used_seed="$(sed -n 's/^INFO: Seed: *\([0-9]*\).*/\1/p' "${dir}/fuzz.log" | head -n1)"
  summary+=("${name}: ${execs:-?} execs, ${rate:-?} exec/s, seed ${used_seed:-?}, exit ${rc}")
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
      local f
      while IFS= read -r f; do
        if [[ "$(stat -c %s "${f}")" -le 4096 ]]; then
          echo "!!! $(basename "${f}") in base64 (base64 -d > repro):" >&2
          base64 -w 100 "${f}" | sed 's/^/    /' >&2
        fi
      done <<< "${found}"
    fi
  fi
}

# Inputs per target with --ci: ~30 s each on this project's 2-core machines. With --ci the
# targets run side by side (each one process; their input counts are fixed, so what each
# explores does not depend on it); a timed exploration (N seconds) runs them one after another,
# each with the whole machine. They report in this order.
launch() { if [[ "${ci}" -eq 1 ]]; then "$@" & else "$@"; fi; }
targets=(trace_reader_fuzzer profile_json_fuzzer checkpoint_fuzzer kineto_ipc_fuzzer)
launch run_target trace_reader_fuzzer trace 30000
launch run_target profile_json_fuzzer profile 150000
launch run_target checkpoint_fuzzer checkpoint 200000 checkpoint.dict
launch run_target kineto_ipc_fuzzer kineto_ipc 20000000 kineto_ipc.dict
wait
for t in "${targets[@]}"; do report_target "${t}"; done

echo "=== summary"
printf '  %s\n' "${summary[@]}"
if [[ "${failed}" -ne 0 ]]; then
  echo "run-fuzz: FAILED; work directory kept: ${work}" >&2
  exit 1
fi
rm -rf "${work}"
echo "run-fuzz: OK (no crash, timeout or leak)"
