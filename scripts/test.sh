#!/usr/bin/env bash
# Runs the whole test suite against a real PostgreSQL: CODESIFT_DSN if set,
# otherwise the embedded cluster, started (and migrated) here on demand.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${CODESIFT_DSN:-}" ]; then
  eval "$(scripts/db.sh start)"
fi
export CODESIFT_DSN
exec .venv/bin/pytest "$@"
