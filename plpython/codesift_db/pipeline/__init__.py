"""The retrieval pipeline behind pack_context, explain_context and hybrid_search, one module
per stage (sql/idempotent/006-context.sql calls rows.py):

1. params.py     validation of the caller's arguments (errcodes and hints)
2. scope.py      the session's tenant and the repositories in scope, freshness notices
3. query.py      query terms, the two-terms tsquery, the query vector
4. legs.py       four legs: BM25 (or ts_rank_cd) and HNSW, each over symbols and files
5. fusion.py     Reciprocal Rank Fusion (k = 60, per-leg weights)
6. hydrate.py    paths, lines, text and last change of the fused candidates
7. recency.py    recency decay exp(-lambda * age_days) from the repository's newest
                 change, times a path prior (tests, changelogs)
8. graph.py      walk over imports, tests, references and co-change edges from the top
                 hits, both directions
9. standins.py   whole files too big for a quarter of the budget replaced by their best
                 symbols
10. run.py       the stages in order, then Jaccard diversity pruning (diversity.py) and
                 greedy token packing (packing.py)
11. rows.py      the row shapes of pack_context, explain_context and hybrid_search

Every candidate keeps why it was chosen (ranks, scores, hops) and what each stage decided,
which is what explain_context returns. The statements are in plpython/codesift_db/sql/.
"""
