"""The retrieval pipeline behind pack_context, explain_context and hybrid_search, one module
per stage (sql/idempotent/006-context.sql calls rows.py):

1. params.py     validation of the caller's arguments (errcodes and hints)
2. scope.py      the session's tenant and the repositories in scope, freshness notices
3. features.py   which stages a session switched off for evaluation, and the fusion used
4. question.py   a long question read for what names code (terms, paths, frames)
5. query.py      query terms, the two-terms tsquery, the query vector
6. legs.py       four legs: BM25 (or ts_rank_cd) and HNSW, each over symbols and files
7. mentions.py   the files and definitions a long question names, as a leg of its own
8. fusion.py     Reciprocal Rank Fusion (k = 60, per-leg weights)
9. hydrate.py    paths, lines, text and last change of the fused candidates
10. recency.py   recency decay exp(-lambda * age_days) from the repository's newest
                 change, times a path prior (tests, changelogs)
11. graph.py     walk over imports, tests, references and co-change edges from the top
                 hits, both directions
12. standins.py  whole files too big for a quarter of the budget replaced by their best
                 symbols
13. callees.py   the definitions the best candidates call join the candidates
14. fill.py      Jaccard diversity pruning (diversity.py), the coverage order
                 (coverage.py), then greedy token packing (packing.py)
15. coverage.py  each of the best files first by its best candidate that fits
16. run.py       the stages in order
17. rows.py      the row shapes of pack_context, explain_context and hybrid_search

Every candidate keeps why it was chosen (ranks, scores, hops) and what each stage decided,
which is what explain_context returns. The statements are in plpython/codesift_db/sql/.
"""
