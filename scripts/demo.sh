#!/usr/bin/env bash
# The main job on an embedded default: build the client and read a bundled real training trace
# (an NVIDIA A100 rank, 2 ProfilerSteps) with `libreyolo profile summary`. No GPU, no daemon.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh libreyolo
exec ./build/client/libreyolo profile summary tests/fixtures/traces/trace_filter.json.gz "$@"
