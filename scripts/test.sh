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
status=0
.venv/bin/pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "make test: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
