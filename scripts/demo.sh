#!/usr/bin/env bash
# The main job end to end: start the database, index a git repository (this
# project itself unless DEMO_REPO names another), and ask it a question with
# the same SQL any client can call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${CODESIFT_DSN:-}" ]; then eval "$(scripts/db.sh start)"; fi
export CODESIFT_DSN
repo=${DEMO_REPO:-$root}
question=${DEMO_QUESTION:-where are migrations applied under a lock?}
.venv/bin/codesift index "$repo" --name demo --tenant demo --wait
echo
echo "\$ codesift ask '$question' --repo demo --tenant demo --budget 1500"
echo "  (the same as: select pack_context_text('$question', repo => 'demo'))"
echo
.venv/bin/codesift ask "$question" --repo demo --tenant demo --budget 1500
