#!/usr/bin/env bash
# The main job on an embedded default: build the client and the daemon, then profile the
# inference path of LibreYOLO9t on the CPU with `libreyolo profile infer --device cpu`. The client
# starts a private libreyolod on a Unix socket, streams the job's progress, fetches
# runs/profile/infer/profile.json + profile_trace.json, prints the summary and stops the daemon.
# No GPU, no daemon to start by hand, nothing to download (absent weights: seeded random init).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh libreyolo libreyolod
export LIBREYOLOD="$root/build/server/daemon/libreyolod"
exec ./build/client/libreyolo profile infer --device cpu "$@"
