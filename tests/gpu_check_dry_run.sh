#!/usr/bin/env bash
# ctest gpu_check_dry_run: scripts/gpu-check.sh --device cpu --quick, then checks its table:
# every step of ours exited 0, the report names the collector and has numbers from the profiles
# (latency, overhead), and GPU-only numbers read n/a on a CPU run, never 0.
set -euo pipefail
build="$1"
out="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rm -rf "$out"
# The Python processes (the Python LibreYOLO's step, the attach step's loop, the export) wait
# passively like our engine workers do (they re-exec so): on a busy 2-core box a spinning OpenMP
# team made the Python step's forward 100x slower (18 ms -> 1.7 s a step, that step 11 -> 42 s).
export OMP_WAIT_POLICY=PASSIVE
bash "$root/scripts/gpu-check.sh" --device cpu --quick --build "$build" --out "$out"
report="$out/gpu-report.md"
fail() { echo "gpu_check_dry_run: $*" >&2; cat "$report" >&2 || true; exit 1; }
[ -s "$report" ] || fail "no report"
for step in infer run kineto twice ddp export attach report; do
  awk -F'\t' -v s="$step" '$1 == s && $2 == 0 {found=1} END {exit !found}' "$out/steps.tsv" ||
    fail "step $step did not exit 0"
done
[ -s "$out/kineto/infer/kineto_trace.json" ] || [ -n "$(find "$out/kineto" -name kineto_trace.json -size +0)" ] ||
  fail "LibTorch's own Kineto trace was not saved"
grep -q '| GPU collector (infer / run) | none / none |' "$report" || fail "collector row"
grep -Eq '\| infer fp32: profiler overhead \| -?[0-9]+\.[0-9] % \|' "$report" || fail "overhead row"
grep -Eq '\| latency p50: ours vs Python LibreYOLO \(fp32\) \| [0-9]+\.[0-9]+ ms vs ' "$report" ||
  fail "latency row"
grep -q '| kernels/step: ours vs Kineto | n/a vs n/a | equal |' "$report" || fail "a CPU run's kernels are n/a"
grep -q '| infer --half: Tensor Core share | n/a | > 0 |' "$report" || fail "no --half step on a CPU"
grep -q '| two jobs in one worker: kernels/step, job 1 vs job 2 | n/a vs n/a | equal |' "$report" ||
  fail "two jobs in one worker: a CPU run's kernels are n/a"
grep -q '| ddp: world size, backend | 1, gloo | nccl on a GPU |' "$report" || fail "ddp: a gang of one on gloo"
grep -Eq '\| ddp: all-reduce bytes/step, algbw, busbw \| [0-9]+ B, ' "$report" || fail "ddp: all-reduce bytes"
grep -q '| export (yolox): model, precision | LibreYOLOXn, fp32 |' "$report" || fail "export row"
grep -Eq '\| engine_cuda_runtime_test \| ([0-9]+)/\1 passed' "$report" || fail "CUDA runtime unit test"
echo "gpu_check_dry_run: ok"
