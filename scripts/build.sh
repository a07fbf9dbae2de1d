#!/usr/bin/env bash
# Installs the dependencies (a no-op when present), configures and builds into ./build against
# the LibTorch inside the project's Python environment (scripts/python-env.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLIBREYOLO_PYTHON_ENV="$(bash scripts/python-env.sh)" \
  -DLIBREYOLO_BUILD_TESTS=ON -DLIBREYOLO_BUILD_BENCH=ON >/dev/null
ninja -C build -j"$(nproc)" "$@"
