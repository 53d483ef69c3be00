#!/usr/bin/env bash
# Create .venv and install the project on a fresh machine; a no-op when nothing changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.mindie-help-installed
want="$(cat pyproject.toml scripts/bootstrap.sh scripts/torch_setup.py | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing dependencies (CPU torch first, so nothing pulls a CUDA build)" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  # The CPU build: from the PyTorch CPU index on Linux when it answers, else the configured index (a local mirror);
  # MINDIE_HELP_TORCH_INDEX_URL overrides (empty = configured index). Skipped when it is installed already.
  .venv/bin/python scripts/torch_setup.py
  .venv/bin/python -m pip install --quiet -e ".[test]"
  echo "$want" > "$stamp"
fi
