#!/usr/bin/env bash
# Everything CI checks: the corpus, then the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export HF_HUB_OFFLINE=1
# The storage and replica tests start a throwaway PostgreSQL server of their own: bring its binaries on a fresh machine.
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing the PostgreSQL server for the storage tests" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  else
    echo "[setup] no PostgreSQL server binaries: its tests are skipped here (CI fails instead); apt-get install postgresql" >&2
  fi
fi
.venv/bin/mindie-help corpus check
exec .venv/bin/python -m pytest "$@"
