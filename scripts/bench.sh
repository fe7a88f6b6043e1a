#!/usr/bin/env bash
# The benchmarks and the retrieval evaluation (printed ratios, never assertions;
# not part of `make test`). Each needs a checkout of expressjs/express:
#   EXPRESS=/path/to/express make bench      (default /tmp/express)
# Long: embedding express takes minutes on 2 cores; the retrieval bench at
# 100k symbols about 10 minutes more (1M: pass SIZES=10000,100000,1000000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${CODESIFT_DSN:-}" ]; then eval "$(scripts/db.sh start)"; fi
export CODESIFT_DSN
express=${EXPRESS:-/tmp/express}
[ -d "$express/.git" ] || { echo "make bench: no express checkout at $express (set EXPRESS=...)" >&2; exit 1; }
py=.venv/bin/python
$py bench/token_estimator_bench.py
$py bench/embedding_bench.py
$py bench/index_bench.py --repo "$express"
$py bench/eval.py --queries bench/queries/express.json --repo-path "$express" --name express \
  --out bench/out/express.json
$py bench/retrieval_bench.py --repo "$express" --sizes "${SIZES:-10000,100000}"
# the BM25 legs against exhaustive BM25 on Django + SymPy (downloaded from PyPI once)
$py bench/bm25_agreement_bench.py
# on the same corpus: how deep they would read to prove their top 20 exact
$py bench/bm25_proving_depth.py --tier symbol
$py bench/bm25_proving_depth.py --tier file
