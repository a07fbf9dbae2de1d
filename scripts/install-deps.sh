#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian 12 packages.
# A no-op (no apt-get at all) when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang-14 libclang-rt-14-dev            # libFuzzer targets
  rapidjson-dev zlib1g-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libtorch-dev libopenblas0-pthread      # the engine; OpenBLAS, not the reference BLAS
  libopencv-dev libyaml-cpp-dev          # image decode/augment, dataset YAML
  python3 python3-grpcio python3-torch   # oracle, cross-checks, the Python client example
  openssl time
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
