#!/usr/bin/env bash
# Everything CI checks: the corpus, then the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export HF_HUB_OFFLINE=1
.venv/bin/mindie-help corpus check
exec .venv/bin/python -m pytest "$@"
