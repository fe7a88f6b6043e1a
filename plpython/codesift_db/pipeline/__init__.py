"""The retrieval pipeline behind pack_context, explain_context and hybrid_search, one module
per stage (sql/idempotent/006-context.sql calls rows.py):

1. params.py     the caller's arguments (frozen) and their validation (errcodes, hints)
2. request.py    one call's state: params, scope, features, the question's reading
3. scope.py      the session's tenant and the repositories in scope, freshness notices
4. features.py   which stages a session switched off for evaluation, and the fusion used
5. question.py   a long question read for what names code (terms, paths, frames)
6. query.py      query terms, the two-terms tsquery, the query vector
7. legs.py       four legs: BM25 (or ts_rank_cd) and HNSW, each over symbols and files
8. mentions.py   the files and definitions a long question names, as legs of their own
9. fusion.py     Reciprocal Rank Fusion (k = 60, per-leg weights), file consensus
10. hydrate.py   paths, lines, text and last change of the fused candidates
11. recency.py   recency decay exp(-lambda * age_days) from the repository's newest
                 change, times a path prior (tests, changelogs)
12. subject_scope.py  code under the folder a commit header names weighs more
13. rerank.py    the learned ranker (a model of the ref's own history, when it has one)
                 orders the candidates by their features (ranker/)
14. graph.py     walk over imports, tests, references and co-change edges from the top
                 hits, both directions
15. standins.py  whole files too big for a quarter of the budget replaced by their best
                 symbols
16. callees.py   the definitions the best candidates call join the candidates
17. fill.py      Jaccard diversity pruning (diversity.py), the coverage order
                 (coverage.py), then greedy token packing (packing.py)
18. coverage.py  each of the best files first by its best candidate that fits
19. outlines.py  a candidate file the pack cannot hold whole gets an outline item: the
                 signatures of the definitions left out, within the same budget
20. run.py       the stages in order: every stage after fusion is stage(plpy, req, items)
21. rows.py      the row shapes of pack_context, explain_context and hybrid_search
22. timing.py    each stage's milliseconds (why.stage_ms, the codesift.timing notice)
23. degraded.py  why an answer is degraded (backlog, no embedder, endpoint down, a
                 question the model cannot read, a stale index): notices, why.degraded

Every candidate keeps why it was chosen (ranks, scores, hops) and what each stage decided,
which is what explain_context returns. The statements are in plpython/codesift_db/sql/.
"""
