#!/usr/bin/env bash
# The main job end to end: start the database, index a repository, ask it a question.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${CODESIFT_DSN:-}" ]; then eval "$(scripts/db.sh start)"; fi
export CODESIFT_DSN
if ! .venv/bin/codesift --help | grep -q ' index '; then
  echo "make demo: indexing and retrieval have not landed yet; the database is up and migrated:" >&2
  echo "  psql \"\$CODESIFT_DSN\" -c '\\dt codesift.*'" >&2
  exit 0
fi
repo=${DEMO_REPO:-$root}
.venv/bin/codesift index "$repo" --name demo
.venv/bin/codesift ask "${DEMO_QUESTION:-where are migrations applied under a lock?}" --repo demo
