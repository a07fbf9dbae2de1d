#!/usr/bin/env bash
# Installs every build, test and benchmark dependency:
# 1. Debian 12 packages (apt-get update first);
# 2. the project's Python environment (scripts/python-env.sh names it; outside the checkout, so
#    every clone reuses it): the torch wheel from PyPI, whose LibTorch 2.11 (CUDA 13.0, Kineto)
#    the engine is built against, and the real peers (Python LibreYOLO, HTA), all pinned.
# Each part is a no-op when already present.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang-14 libclang-rt-14-dev            # libFuzzer targets
  lld                                    # the linker (CMakeLists.txt: LIBREYOLO_USE_LLD)
  rapidjson-dev zlib1g-dev libabsl-dev
  libsimdjson-dev libisal-dev            # the trace reader: simdjson parse, igzip inflate
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libopencv-dev libyaml-cpp-dev          # image decode/augment, dataset YAML
  libgloo-dev                            # gloo's headers, which c10d's ProcessGroupGloo.hpp wants
  python3 python3-venv python3-grpcio    # the Python environment; the Python client example
  openssl time
  chromium                               # headless browser tests of the HTML report
  slurm-wlm munge                        # deploy/slurm's recipes under a real one-node Slurm
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The Python environment. A marker written last says it is complete: an interrupted install
# (full disk, lost network) is redone from scratch, never half-used.
venv="$(bash "$here/python-env.sh")"
if [ -f "$venv/.complete" ]; then
  echo "install-deps: Python environment present ($venv)"
  exit 0
fi
echo "install-deps: making the Python environment $venv (torch wheel and its CUDA libraries: ~5 GB)"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir \
  -r "$here/python-requirements.txt" -c "$here/python-constraints.txt"
"$venv/bin/python" -c 'import torch, libreyolo, hta' >/dev/null
touch "$venv/.complete"
echo "install-deps: Python environment ready"
