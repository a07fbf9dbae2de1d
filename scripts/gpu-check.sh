#!/usr/bin/env bash
# The GPU check in one call: profiles LibreYOLO9 on a CUDA device with what was built here and
# writes profiles, traces, logs and one comparison table (gpu-report.md) under --out.
#
#   bash scripts/gpu-check.sh --bundle            # here: pack build/gpu-bundle and build/gpu-extra
#   bash scripts/gpu-check.sh --device 0 --out $OUT   # on the GPU host (runs the bundle)
#   bash scripts/gpu-check.sh --device cpu --out DIR  # dry run on any machine (the test suite's)
#   (--build DIR: the build folder, default ./build; --quick: tiny sizes and no overhead probe
#   before the two training steps, for the dry run: it checks the script's plumbing, the infer
#   steps keep their probe and the report's overhead row; the probes of `run` cost ~50 s there)
#
# The device call carries at most 64 MiB, so the pack is two folders, one per call (the machine
# keeps an earlier call's ignored folders while it stays warm): build/gpu-extra (the weights and
# the Python LibreYOLO's wheels, ~17 MB) with a first, empty command, then build/gpu-bundle
# (binaries and libraries as one xz archive, ~51 MB) with this script.
#
# Why build here and carry the binaries: the GPU host we borrow has torch 2.11.0+cu130, CMake,
# ninja and nvcc but no Debian packages (gRPC, Protobuf, Abseil, OpenCV, yaml-cpp) and no network,
# and 15 minutes of device time in all; building the engine takes ~25 minutes on 2 cores here.
# The bundle holds our binaries and the non-system libraries they link, except LibTorch and the
# CUDA libraries, which the host's own torch 2.11.0+cu130 wheel provides (same build as ours).
#
# Steps on the device (each logged under --out/logs, a failure does not stop the others):
#   env       nvidia-smi, the host's torch
#   unit      engine_cuda_runtime_test (real device properties, allocator, CUDA events)
#   infer     libreyolo profile infer --device D            (fp32, CUPTI collector)
#   half      libreyolo profile infer --device D --half     (float16 autocast: Tensor Cores)
#   run       libreyolo profile run synthetic --device D    (training step, fused SGD)
#   kineto    libreyolo-engine infer --kineto-trace ...     (LibTorch's own trace, same window)
#   infer_lt  infer again with --collector libtorch         (the CPU collector native replaced)
#   run_lt    run again with --collector libtorch
#   twice     two identical `profile infer` jobs on one libreyolod, so in one engine worker (one
#             process, two CUPTI collections): their kernel times must agree (issue 23 item 10)
#   ddp       profile run synthetic --devices D: a data-parallel gang of one, c10d's NCCL on a
#             GPU (Gloo on the CPU) and DDP's Reducer in a world of one; the cross-rank view of
#             its prof/ folder in the report (issue 21 §4)
#   export    profile infer --weights yolox.torchscript --device D: a TorchScript export made
#             with the Python LibreYOLO on the CPU (carried in gpu-extra), run on the device
#             (issue 20 §2; an export traced on the CPU may bake a "cpu" device into its graph)
#   python    the Python LibreYOLO's `profile infer` on the same device (wheels carried along)
#   attach    a torch loop on the device started with `profile attach --env`'s environment, run
#             by the host's Python, attached by pid for 1 s with --activities cpu,cuda (issue 37):
#             the job must succeed and, on a GPU, its profile list CUDA kernels (Kineto's CUPTI
#             in that process); ~25 s (the poll, the shared start, 5 s of Kineto's warm-up)
#   report    scripts/gpu_report.py -> gpu-report.md
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

device=0
out=""
bundle_only=0
build="$root/build"
bundle=""
imgsz=640
runs=100
steps=10
batch=16
run_probe=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --bundle) bundle_only=1; shift ;;
    --bundle-dir) bundle="$2"; shift 2 ;;
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --quick) imgsz=64; runs=6; steps=2; batch=2; run_probe=(--no-probe-overhead); shift ;;
    -h|--help) sed -n 2,26p "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bundle="${bundle:-$build/gpu-bundle}"
extra="$(dirname "$bundle")/gpu-extra"

# ---- Packing, here --------------------------------------------------------------------------
if [ "$bundle_only" = 1 ]; then
  set -e
  bins=("$build/client/libreyolo" "$build/server/daemon/libreyolod"
        "$build/server/worker/libreyolod-worker" "$build/bench/libreyolo-engine"
        "$build/tests/engine/engine_cuda_runtime_test")
  for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "gpu-check: $b is not built (bash scripts/build.sh)" >&2; exit 2; }
  done
  rm -rf "$bundle" "$extra"
  mkdir -p "$bundle/bin" "$bundle/lib" "$extra/wheels"
  cp "${bins[@]}" "$bundle/bin/"
  # Libraries from this Debian that the host lacks; never glibc, libstdc++ or the GPU stack
  # (LibTorch, CUDA, cuDNN, NCCL, CUPTI come from the host's torch wheel and driver).
  skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libgomp|libtorch|libc10|libcu|libnv|libcudnn|libnccl|libcupti|libshm|libtriton)'
  for b in "${bins[@]}"; do
    ldd "$b" | awk '/=> \// {print $1, $3}'
  done | sort -u | while read -r name path; do
    if ! [[ "$name" =~ $skip ]]; then cp -L "$path" "$bundle/lib/$name"; fi
  done
  strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null || true
  # The Python LibreYOLO for the host's Python 3.12 (its image has torch, torchvision, typer,
  # opencv, ...; these three it lacks).
  venv="$(bash scripts/python-env.sh)"
  "$venv/bin/pip" download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$extra/wheels" \
    libreyolo==1.6.0 mss==10.1.0 pycocotools==2.0.10 || echo "gpu-check: wheels not fetched"
  cp "$root/../shared/fixtures/models/libreyolo9t_seed1234.pt" "$extra/" 2>/dev/null || true
  # A TorchScript export of another family (~3 MB), made with the Python tool's own export.
  "$venv/bin/python" "$root/tests/engine/torchscript/make_exports.py" "$extra/exports" \
    --families yolox --no-npy > /dev/null || echo "gpu-check: the yolox export was not made"
  # What travels: the binaries and libraries compressed (OpenCV's codecs pull in GDAL, ICU, x265,
  # ... ~190 MB uncompressed), the weights and the wheels as they are.
  (cd "$bundle" && tar cf - bin lib | xz -9e -T2 > bundle.tar.xz && rm -rf bin lib)
  du -sh "$bundle" "$extra"
  for d in "$bundle" "$extra"; do
    total=$(du -sb "$d" | cut -f1)
    if [ "$total" -gt $((60 * 1024 * 1024)) ]; then
      echo "gpu-check: WARNING: $d is $((total / 1048576)) MiB; with the working tree it may" \
        "pass the device's 64 MiB carry limit" >&2
    fi
  done
  echo "gpu-check: call 1 carries ${extra#$root/} (command: true);" \
    "call 2 carries ${bundle#$root/}: bash scripts/gpu-check.sh --device 0 --out \$OUT"
  exit 0
fi

# ---- The check ------------------------------------------------------------------------------
[ -n "$out" ] || { echo "gpu-check: --out DIR is required" >&2; exit 2; }
mkdir -p "$out/logs"
out="$(cd "$out" && pwd)"
status="$out/steps.tsv"
printf 'step\trc\tseconds\n' > "$status"

if [ -f "$bundle/bundle.tar.xz" ] && [ ! -x "$bundle/bin/libreyolo" ]; then
  tar xJf "$bundle/bundle.tar.xz" -C "$bundle"
fi
if [ -x "$bundle/bin/libreyolo" ]; then
  bin="$bundle/bin"
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  bin="$out/bin"; mkdir -p "$bin"
  for b in client/libreyolo server/daemon/libreyolod server/worker/libreyolod-worker \
           bench/libreyolo-engine tests/engine/engine_cuda_runtime_test; do
    [ -x "$build/$b" ] && ln -sf "$build/$b" "$bin/"
  done
fi
# LibTorch and the CUDA libraries: the project's environment here, the host's torch there.
py="python3"
[ -x "$(bash scripts/python-env.sh 2>/dev/null)/bin/python" ] && py="$(bash scripts/python-env.sh)/bin/python"
torch_lib="$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)"
if [ -n "$torch_lib" ]; then
  site="$(dirname "$(dirname "$torch_lib")")"
  libpath="$torch_lib"
  for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib; do [ -d "$d" ] && libpath="$libpath:$d"; done
  export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export LIBREYOLOD="$bin/libreyolod"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$out/run}" XDG_STATE_HOME="$out/state"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
weights="$extra/libreyolo9t_seed1234.pt"
[ -f "$weights" ] || weights="$root/../shared/fixtures/models/libreyolo9t_seed1234.pt"

step() {  # step NAME COMMAND...: runs, logs, records rc and seconds; never aborts the script
  local name="$1"; shift
  local t0; t0=$(date +%s%N)
  echo "== $name: $*" | tee -a "$out/logs/all.log"
  "$@" >"$out/logs/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s\t%d\t%d.%d\n' "$name" "$rc" $((ms / 1000)) $((ms % 1000 / 100)) >> "$status"
  tail -n 3 "$out/logs/$name.log" | sed 's/^/   /'
  return 0
}

gpu_flags=()
case "$device" in cpu) ;; *) gpu_flags=(--half) ;; esac

step env bash -c "nvidia-smi 2>&1 || echo 'nvidia-smi: not available (no GPU here)'; \
  $py -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"available\", torch.cuda.is_available())'"
[ -x "$bin/engine_cuda_runtime_test" ] &&
  step unit "$bin/engine_cuda_runtime_test" --gtest_output="json:$out/unit.json"
common=(--device "$device" --weights "$weights" --imgsz "$imgsz" --warmup 10 --runs "$runs")
step infer "$bin/libreyolo" profile infer "${common[@]}" --project "$out/infer"
if [ ${#gpu_flags[@]} -gt 0 ]; then
  step half "$bin/libreyolo" profile infer "${common[@]}" --half --project "$out/half"
fi
step run "$bin/libreyolo" profile run synthetic --device "$device" --weights "$weights" \
  --imgsz "$imgsz" --batch "$batch" --steps "$steps" --warmup 3 --workers 2 "${run_probe[@]}" \
  --project "$out/run"
step kineto "$bin/libreyolo-engine" infer "${common[@]}" --project "$out/kineto" \
  --kineto-trace "$out/kineto/kineto_trace.json"
# The profiler's cost with each CPU collector, same device, same run (issue 13's 1 % and 2 %).
step infer_lt "$bin/libreyolo" profile infer "${common[@]}" --collector libtorch \
  --project "$out/infer_lt"
step run_lt "$bin/libreyolo" profile run synthetic --device "$device" --weights "$weights" \
  --imgsz "$imgsz" --batch "$batch" --steps "$steps" --warmup 3 --workers 2 \
  --collector libtorch "${run_probe[@]}" --project "$out/run_lt"
# Two identical jobs in one engine worker: a daemon serving the device, the same job twice back to
# back; gpu_report.py compares their kernel times and counts (issue 23 item 10).
twice() {
  local sock="$XDG_RUNTIME_DIR/twice.sock" rc=0 i dpid
  mkdir -p "$out/twice"
  "$bin/libreyolod" --listen "unix:$sock" --device "$device" --state-dir "$out/twice/state" \
    --store-dir "$out/twice/store" --models-dir "$(dirname "$weights")" \
    > "$out/twice/daemon.log" 2>&1 &
  dpid=$!
  for _ in $(seq 1 600); do
    "$bin/libreyolo" jobs list --remote "unix:$sock" > /dev/null 2>&1 && break
    kill -0 "$dpid" 2>/dev/null || { echo "libreyolod exited"; return 1; }
    sleep 0.2
  done
  for i in 1 2; do
    "$bin/libreyolo" profile infer --device "$device" --weights "$(basename "$weights")" \
      --imgsz "$imgsz" --warmup 10 --runs "$runs" --remote "unix:$sock" \
      --project "$out/twice/job$i" || rc=1
  done
  kill -TERM "$dpid"; wait "$dpid" || true
  # One worker for both: a restart would start a second process.
  if grep -qi "restart\|died\|killed" "$out/twice/daemon.log"; then
    echo "the engine worker was replaced between the jobs"; rc=1
  fi
  return $rc
}
step twice twice
# Data-parallel training on the device: one rank per listed slot (a gang of one here, NCCL).
step ddp "$bin/libreyolo" profile run synthetic --devices "$device" --weights "$weights" \
  --imgsz "$imgsz" --batch "$batch" --steps "$steps" --warmup 3 --workers 2 --project "$out/ddp" \
  --json
# Another family through its TorchScript export (made at --bundle; the dry run makes its own).
export_file="$extra/exports/yolox.torchscript"
if [ ! -f "$export_file" ] && [ "$device" = cpu ] && "$py" -c 'import libreyolo' 2>/dev/null; then
  "$py" "$root/tests/engine/torchscript/make_exports.py" "$out/exports" --families yolox \
    --no-npy > "$out/logs/make_exports.log" 2>&1 && export_file="$out/exports/yolox.torchscript"
fi
if [ -f "$export_file" ]; then
  step export "$bin/libreyolo" profile infer --weights "$export_file" --device "$device" \
    --warmup 10 --runs "$runs" --project "$out/export"
fi
# The Python LibreYOLO on the same device, weights and size (wheels carried in gpu-extra).
if ! "$py" -c 'import libreyolo' 2>/dev/null && ls "$extra"/wheels/*.whl >/dev/null 2>&1; then
  "$py" -m pip install -q --no-index --no-deps --target "$out/site" "$extra"/wheels/*.whl \
    >"$out/logs/pip.log" 2>&1 && export PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}"
fi
if "$py" -c 'import libreyolo' 2>/dev/null; then
  step python env HF_HUB_OFFLINE=1 "$py" -c \
    'import sys; from libreyolo.cli import entrypoint; sys.argv = ["libreyolo"] + sys.argv[1:]; sys.exit(entrypoint())' \
    profile infer --weights "$weights" --device "$device" --imgsz "$imgsz" --warmup 10 \
    --runs "$runs" --project "$out/python"
fi
# A running PyTorch process attached by pid: a daemon with an attach endpoint, a loop started with
# the environment it prints, `profile attach --pid` with CUDA activities (issue 37 §6).
attach() {
  local sock="$XDG_RUNTIME_DIR/attach.sock" dir="$out/attach" dpid lpid rc=0 id dev
  mkdir -p "$dir"
  "$bin/libreyolod" --listen "unix:$sock" --device "$device" --state-dir "$dir/state" \
    --store-dir "$dir/store" --attach-dir "$dir/sockets" > "$dir/daemon.log" 2>&1 &
  dpid=$!
  for _ in $(seq 1 300); do
    "$bin/libreyolo" jobs list --remote "unix:$sock" > /dev/null 2>&1 && break
    kill -0 "$dpid" 2>/dev/null || { echo "libreyolod exited"; cat "$dir/daemon.log"; return 1; }
    sleep 0.2
  done
  case "$device" in cpu) dev=cpu ;; *) dev="cuda:${device#cuda:}" ;; esac
  env $("$bin/libreyolo" profile attach --env --remote "unix:$sock") "$py" -c "
import time, torch
x = torch.randn(512, 512, device='$dev')
end = time.time() + 90
while time.time() < end:
    y = x @ x
    if x.is_cuda: torch.cuda.synchronize()
    time.sleep(0.005)
" > "$dir/loop.log" 2>&1 &
  lpid=$!
  for _ in $(seq 1 100); do
    "$bin/libreyolo" profile attach --list --remote "unix:$sock" 2>/dev/null | grep -qw "$lpid" && break
    sleep 0.2
  done
  "$bin/libreyolo" profile attach --pid "$lpid" --duration-ms 1000 --activities cpu,cuda \
    --remote "unix:$sock" --project "$dir/proj" --json > "$dir/job.json" || rc=1
  id=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("job_id", ""))' \
    "$dir/job.json" 2>/dev/null)
  [ -n "$id" ] && "$bin/libreyolo" profile summary "job:$id" --remote "unix:$sock" || rc=1
  if [ "$device" != cpu ] && [ $rc -eq 0 ]; then
    "$py" - "$dir/proj/attach/profile.json" <<'PY' || rc=1
import json, sys
kernels = json.load(open(sys.argv[1])).get("kernels") or []
print(f"attach: {len(kernels)} CUDA kernel(s) in the job's profile")
sys.exit(0 if kernels else 1)
PY
  fi
  kill "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null
  kill -TERM "$dpid"; wait "$dpid" || true
  return $rc
}
step attach attach
step report "$py" "$root/scripts/gpu_report.py" --out "$out" --libreyolo "$bin/libreyolo"
cat "$out/gpu-report.md" 2>/dev/null
# The dry run fails when our own steps fail (the Python peer and nvidia-smi are optional).
failed=$(awk -F'\t' 'NR > 1 && $2 != 0 && $1 != "python" && $1 != "env" {print $1}' "$status")
if [ -n "$failed" ]; then
  echo "gpu-check: failed steps: $failed (logs under $out/logs)" >&2
  exit 1
fi
echo "gpu-check: done; $out/gpu-report.md"
