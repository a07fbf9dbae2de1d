#!/usr/bin/env bash
# ctest engine_hta_test: records an infer window (with LibTorch's own Kineto export of it,
# --kineto-trace) and a training window on the CPU with libreyolo-engine, then loads our traces
# with HTA (hta_check.py): every analysis that works on Kineto's export must work on ours,
# CallGraph included. The training trace is held to what worked on the infer Kineto export.
set -euo pipefail
engine="$1"; python="$2"; work="$3"; weights="$4"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work" && mkdir -p "$work"
export OMP_WAIT_POLICY=PASSIVE
"$engine" infer --device cpu --weights "$weights" --imgsz 96 --warmup 1 --runs 3 \
  --profiled-runs 3 --threads 1 --overhead-budget 100 --project "$work/p" \
  --kineto-trace "$work/kineto.json" > "$work/infer.log" 2>&1 || { cat "$work/infer.log"; exit 1; }
"$python" "$here/hta_check.py" "$work/p/infer/profile_trace.json" --kineto "$work/kineto.json"
"$engine" run synthetic:8 --device cpu --weights "$weights" --imgsz 64 --batch 2 --steps 2 \
  --warmup 1 --workers 0 --threads 1 --overhead-budget 100 --project "$work/p" \
  > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
"$python" "$here/hta_check.py" "$work/p/prof/profile_trace.json" --kineto "$work/kineto.json"
