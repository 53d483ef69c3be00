#!/usr/bin/env bash
# The main job: the Slack bot when tokens are set, otherwise a local answer and what to set.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export HF_HUB_OFFLINE=1
[ -f .env ] && set -a && . ./.env && set +a
exec .venv/bin/mindie-help serve "$@"
