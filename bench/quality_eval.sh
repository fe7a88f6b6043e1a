#!/bin/sh
# Issue 16's evaluation in one go: every arm under the baseline engine and the default one, the
# ablations (each feature off alone) and the fusion alternatives, on express-10, gin-23 and
# the SWE-bench dev instances whose checkouts are given (resumable: a checkpoint of finished
# queries), plus the plain file-level BM25 arm.
#
#   bench/quality_eval.sh EXPRESS_CHECKOUT GIN_CHECKOUT [NAME=CHECKOUT ...]
#
# e.g. bench/quality_eval.sh /tmp/express /tmp/gin requests=/tmp/requests flask=/tmp/flask
# Each repository is indexed (with embeddings, inline) on first use; see bench/eval.py.
set -eu
express=$1
gin=$2
shift 2
out=${OUT:-bench/results}
engines=baseline,default,no-consensus,no-question,no-named,no-kinds,no-pack,no-tests,no-references,no-co_change,no-calls,with-evidence,fusion-rrf_k,fusion-guard,fusion-convex
run() {
    .venv/bin/python bench/eval.py --engines "$engines" --engine-arms hybrid,pack \
        --arms bm25_files,lexical,lexical_tsrank,dense,hybrid,pack,peer,pack_lexical "$@"
}
run --queries bench/queries/express.json --repo-path "$express" \
    --out "$out/quality-express-10.json" --details "$out/quality-express-10-details.json"
run --queries bench/queries/gin.json --repo-path "$gin" \
    --out "$out/quality-gin-23.json" --details "$out/quality-gin-23-details.json"
if [ $# -gt 0 ]; then
    repos=""
    for pair in "$@"; do repos="$repos --repo-path $pair"; done
    # shellcheck disable=SC2086
    run --queries bench/queries/swebench-dev.json $repos --checkpoint "${CHECKPOINT:-/tmp/codesift-swebench.jsonl}" \
        --out "$out/quality-swebench-72.json" --details "$out/quality-swebench-details.json"
fi
