#!/usr/bin/env bash
# Installs the dependencies (a no-op when present), configures and builds into ./build against
# the LibTorch inside the project's Python environment (scripts/python-env.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
# -g1 (line tables: backtraces and profilers still name file and line) instead of -g: full debug
# info of LibTorch's templates is a third of each engine TU's compile time (infer_job.cc: 30 s
# with -g, 22 s with -g1, on a 2-core box). CMAKE_CXX_FLAGS_RELWITHDEBINFO=... overrides it.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${CMAKE_CXX_FLAGS_RELWITHDEBINFO:--O2 -g1 -DNDEBUG}" \
  -DLIBREYOLO_PYTHON_ENV="$(bash scripts/python-env.sh)" \
  -DLIBREYOLO_BUILD_TESTS=ON -DLIBREYOLO_BUILD_BENCH=ON >/dev/null
ninja -C build -j"$(nproc)" "$@"
