#!/bin/sh
# The history sets (bench/queries/history/NAME.json, made by bench/history_set.py: each
# question a commit's message asked at its parent, gold the definitions it changed) asked in
# one go: a change measured on the bug reports is confirmed or refuted on these.
#
#   bench/history_eval.sh OUT_DIR NAME=CHECKOUT [NAME=CHECKOUT ...]
#
# e.g. bench/history_eval.sh /tmp/history click=/tmp/click gin=/tmp/gin
# Each set whose repository is given is asked (the others are skipped), in the tenant
# $TENANT names ('history-{repository}' by default: a set indexes a ref per question, and
# in the tenant of a curated set of the same repository its statistics would change that
# set's answers), with the arms $ARMS (lexical,pack_lexical by default; hybrid,pack where the
# tenant has vectors) under the engines $ENGINES (default by default). Each writes OUT_DIR/history-NAME.json and its details beside it;
# bench/eval.py indexes what is missing (its --no-index given in $EVAL_ARGS skips that).
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 OUT_DIR NAME=CHECKOUT [NAME=CHECKOUT ...]" >&2
    exit 2
fi
out=$1
shift
sets=$(dirname "$0")/queries/history
names=$(cd "$sets" && ls -- *.json | sed 's/\.json$//' | tr '\n' ' ')
for pair in "$@"; do  # every pair checked before the first (long) run
    name=${pair%%=*}
    if [ "$name" = "$pair" ] || [ -z "${pair#*=}" ]; then
        echo "$pair: give NAME=CHECKOUT (NAME one of: $names)" >&2
        exit 2
    fi
    if [ ! -f "$sets/$name.json" ]; then
        echo "$name: no set $sets/$name.json (NAME one of: $names)" >&2
        exit 2
    fi
done
mkdir -p "$out"
for pair in "$@"; do
    name=${pair%%=*}
    # shellcheck disable=SC2086
    .venv/bin/python bench/eval.py --queries "$sets/$name.json" --repo-path "$pair" \
        --tenant "${TENANT:-history-{repository\}}" --arms "${ARMS:-lexical,pack_lexical}" \
        --engines "${ENGINES:-default}" \
        --out "$out/history-$name.json" --details "$out/history-$name-details.json" \
        ${EVAL_ARGS:-}
done
