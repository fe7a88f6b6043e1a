-- The product: hybrid_search (stage 1), pack_context (the whole pipeline),
-- pack_context_text (one prompt block) and explain_context (every candidate
-- with every stage's decision), and embed_query. Thin shims over
-- plpython/codesift_db/pipeline/ (rows.py; embed_query in query.py).

-- Signatures before refs (they gained `ref` and a ref column): dropped, not overloaded.
drop function if exists codesift.pack_context_text(text, text, integer, text, text, text[], vector);
drop function if exists codesift.hybrid_search(
    text, text, integer, text, text, text[], vector, double precision, double precision,
    double precision, text
);
drop function if exists codesift.pack_context(
    text, text, integer, text, text, text[], vector, integer, double precision,
    double precision, double precision, double precision, double precision, text
);
drop function if exists codesift.explain_context(
    text, text, integer, text, text, text[], vector, integer, double precision,
    double precision, double precision, double precision, double precision, text
);

create or replace function codesift.embed_query(query text)
returns vector
language plpython3u
volatile strict
security invoker
set search_path = codesift, public
as $$
from codesift_db.pipeline.query import embed_query
return embed_query(plpy, query)
$$;

comment on function codesift.embed_query(text) is
'The query''s embedding with the database''s embedder (codesift.settings: the built-in '
'model, cached per backend, or an OpenAI-compatible endpoint), or null with a notice when '
'it cannot embed (model not installed, endpoint down or answering badly).';

create or replace function codesift.hybrid_search(
    query text,
    repo text default null,
    k integer default 20,
    path_prefix text default null,
    language text default null,
    kinds text[] default null,
    query_embedding vector default null,
    lexical_weight double precision default 1.0,
    dense_weight double precision default 1.0,
    recency_lambda double precision default 0.0001,
    ranking text default 'bm25',
    ref text default null
)
returns table (
    rank integer, repository text, path text, start_line integer, end_line integer,
    symbol text, kind text, blob_sha text, ref text, indexed_commit text,
    score double precision, why jsonb
)
language plpython3u
volatile
security invoker
set search_path = codesift, public
set jit = off
as $$
from codesift_db.pipeline.params import Params
from codesift_db.pipeline.rows import search_rows
return search_rows(plpy, Params(
    query=query, repo=repo, ref=ref, path_prefix=path_prefix, language=language, kinds=kinds,
    query_embedding=query_embedding, recency_lambda=recency_lambda,
    lexical_weight=lexical_weight, dense_weight=dense_weight, ranking=ranking), k)
$$;

comment on function codesift.hybrid_search(
    text, text, integer, text, text, text[], vector, double precision, double precision,
    double precision, text, text
) is
'Hybrid search over symbols and files: BM25 (or ts_rank_cd) and HNSW legs fused by RRF '
'(k = 60) with per-leg weights, then recency decay; the top k with why each was chosen.';

create or replace function codesift.pack_context(
    query text,
    repo text default null,
    token_budget integer default 4000,
    path_prefix text default null,
    language text default null,
    kinds text[] default null,
    query_embedding vector default null,
    graph_depth integer default 2,
    hop_decay double precision default 0.85,
    jaccard_threshold double precision default 0.88,
    recency_lambda double precision default 0.0001,
    lexical_weight double precision default 1.0,
    dense_weight double precision default 1.0,
    ranking text default 'bm25',
    ref text default null
)
returns table (
    rank integer, repository text, path text, start_line integer, end_line integer,
    symbol text, kind text, blob_sha text, ref text, indexed_commit text,
    score double precision, tokens integer, truncated boolean, text text, why jsonb
)
language plpython3u
volatile
security invoker
set search_path = codesift, public
set jit = off
as $$
from codesift_db.pipeline.params import Params
from codesift_db.pipeline.rows import pack_rows
return pack_rows(plpy, Params(
    query=query, repo=repo, ref=ref, path_prefix=path_prefix, language=language, kinds=kinds,
    query_embedding=query_embedding, recency_lambda=recency_lambda,
    lexical_weight=lexical_weight, dense_weight=dense_weight, ranking=ranking,
    token_budget=token_budget, graph_depth=graph_depth, hop_decay=hop_decay,
    jaccard_threshold=jaccard_threshold))
$$;

comment on function codesift.pack_context(
    text, text, integer, text, text, text[], vector, integer, double precision,
    double precision, double precision, double precision, double precision, text, text
) is
'The code a coding agent needs for a question: hybrid search, import-graph walk, Jaccard '
'pruning and token packing under token_budget; one row per packed item with its citation.';

create or replace function codesift.pack_context_text(
    query text,
    repo text default null,
    token_budget integer default 4000,
    path_prefix text default null,
    language text default null,
    kinds text[] default null,
    query_embedding vector default null,
    ref text default null
)
returns text
language sql
volatile
security invoker
set search_path = codesift, public
set jit = off
begin atomic
    select coalesce(string_agg(p.text, e'\n\n' order by p.rank), '')
    from codesift.pack_context(
        pack_context_text.query,
        pack_context_text.repo,
        pack_context_text.token_budget,
        pack_context_text.path_prefix,
        pack_context_text.language,
        pack_context_text.kinds,
        pack_context_text.query_embedding,
        ref => pack_context_text.ref
    ) as p;
end;

comment on function codesift.pack_context_text(
    text, text, integer, text, text, text[], vector, text
) is
'pack_context as one prompt block: the packed items with their citation headers.';

create or replace function codesift.explain_context(
    query text,
    repo text default null,
    token_budget integer default 4000,
    path_prefix text default null,
    language text default null,
    kinds text[] default null,
    query_embedding vector default null,
    graph_depth integer default 2,
    hop_decay double precision default 0.85,
    jaccard_threshold double precision default 0.88,
    recency_lambda double precision default 0.0001,
    lexical_weight double precision default 1.0,
    dense_weight double precision default 1.0,
    ranking text default 'bm25',
    ref text default null
)
returns table (
    candidate integer, repository text, ref text, path text, start_line integer, end_line integer,
    symbol text, kind text, lexical_rank integer, dense_rank integer, rrf double precision,
    recency double precision, graph_hop integer, score double precision, decision text,
    pruned_by text, packed boolean, tokens integer, why jsonb
)
language plpython3u
volatile
security invoker
set search_path = codesift, public
set jit = off
as $$
from codesift_db.pipeline.params import Params
from codesift_db.pipeline.rows import explain_rows
return explain_rows(plpy, Params(
    query=query, repo=repo, ref=ref, path_prefix=path_prefix, language=language, kinds=kinds,
    query_embedding=query_embedding, recency_lambda=recency_lambda,
    lexical_weight=lexical_weight, dense_weight=dense_weight, ranking=ranking,
    token_budget=token_budget, graph_depth=graph_depth, hop_decay=hop_decay,
    jaccard_threshold=jaccard_threshold))
$$;

comment on function codesift.explain_context(
    text, text, integer, text, text, text[], vector, integer, double precision,
    double precision, double precision, double precision, double precision, text, text
) is
'Every candidate pack_context considered, with each stage''s rank, score and decision '
'(kept, pruned and by whom, not packed for budget).';
