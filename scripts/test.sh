#!/usr/bin/env bash
# Runs the whole test suite against a real PostgreSQL: CODESIFT_DSN if set,
# otherwise the embedded cluster, started (and migrated) here on demand.
#
# The test files run in parallel, a file to a worker (pytest-xdist --dist loadfile;
# each worker has its own databases): twice as many workers as CPUs, at most 8, since
# most tests wait on a subprocess, a server or the database. CODESIFT_TEST_WORKERS=N
# sets the number; 0 runs everything in this process.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${CODESIFT_DSN:-}" ]; then
  eval "$(scripts/db.sh start)"
fi
export CODESIFT_DSN
cpus=$(nproc)
workers=${CODESIFT_TEST_WORKERS:-$((cpus * 2 > 8 ? 8 : cpus * 2))}
case "$workers" in '' | *[!0-9]*) echo "CODESIFT_TEST_WORKERS must be a number (got '$workers')" >&2; exit 2 ;; esac
parallel=()
[ "$workers" -gt 0 ] && parallel=(-n "$workers" --dist loadfile)
status=0
.venv/bin/pytest "${parallel[@]}" "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "make test: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
