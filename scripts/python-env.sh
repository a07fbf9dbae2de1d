#!/usr/bin/env bash
# Prints the folder of the project's Python environment (torch/LibTorch 2.11, the Python
# LibreYOLO, HTA), made by scripts/install-deps.sh. It lives outside the checkout so that every
# clone reuses it, and its name is keyed by the pinned versions: editing
# python-requirements.txt or python-constraints.txt names a new one.
# Override with LIBREYOLO_PYTHON_ENV=/path/to/venv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${LIBREYOLO_PYTHON_ENV:-}" ]; then
  echo "$LIBREYOLO_PYTHON_ENV"
  exit 0
fi
key="$(cat "$here/python-requirements.txt" "$here/python-constraints.txt" | sha256sum | cut -c1-10)"
torch="$(sed -n 's/^torch==//p' "$here/python-requirements.txt")"
py="$(/usr/bin/python3 -c 'import sys; print(f"py{sys.version_info[0]}{sys.version_info[1]}")')"
echo "${LIBREYOLO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libreyolo}/${py}-torch${torch}-${key}"
