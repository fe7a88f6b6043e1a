-- The product: hybrid_search (stage 1), pack_context (the whole pipeline),
-- pack_context_text (one prompt block), pack_context_flat (pack_context with `why` in
-- typed columns, for BI tools) and explain_context (every candidate with every stage's
-- decision), and embed_query. Thin shims over
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

-- Rows before `language` and `citation` (added at the end of pack_context's and
-- explain_context's rows): the same arguments with another result cannot be replaced, so
-- a function without a citation column is dropped, with pack_context_text, whose body
-- depends on pack_context (all three are created again below).
do $$
declare
    args constant text := '(text, text, integer, text, text, text[], vector, integer, '
        'double precision, double precision, double precision, double precision, '
        'double precision, text, text)';
    fn text;
begin
    foreach fn in array array['codesift.pack_context', 'codesift.explain_context'] loop
        if exists (
            select from pg_catalog.pg_proc as p
            where
                p.oid = to_regprocedure(fn || args)
                and not 'citation' = any(p.proargnames)
        ) then
            execute 'drop function if exists codesift.pack_context_text('
                'text, text, integer, text, text, text[], vector, text)';
            execute 'drop function ' || fn || args;
        end if;
    end loop;
end
$$;

-- pack_context_flat before `degraded` (why the answer is degraded), before `outline` and
-- `outlined` (an outline item's why and names) or before `failing_frame`, its last columns:
-- the same arguments with another result cannot be replaced.
do $$
declare
    fn constant text := 'codesift.pack_context_flat(text, text, integer, text, text, text[], '
        'vector, integer, double precision, double precision, double precision, '
        'double precision, double precision, text, text)';
begin
    if exists (
        select from pg_catalog.pg_proc as p
        where
            p.oid = to_regprocedure(fn)
            and not 'failing_frame' = any(p.proargnames)
    ) then
        execute 'drop function ' || fn;
    end if;
end
$$;

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
    score double precision, tokens integer, truncated boolean, text text, why jsonb,
    language text, citation text
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
'pruning and token packing under token_budget; one row per packed item with why it was '
'chosen (why), its blob''s language and its citation (repository:path:start-end). A '
'candidate file the pack cannot hold whole also gets an item of kind outline: the '
'signatures of the definitions left out (why.outline says why, why.outlined lists each '
'one''s name, kind and lines), within the same budget.';

-- pack_context for BI tools and plain SQL: the same rows with each key of `why` a typed
-- column of its own (the keys' names; pipeline/rows.py why()).
create or replace function codesift.pack_context_flat(
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
    score double precision, tokens integer, truncated boolean, text text,
    language text, citation text,
    lexical_rank integer, lexical_score double precision, dense_rank integer,
    dense_distance double precision, rrf double precision, file_rrf double precision,
    recency double precision, age_days double precision, path_prior double precision,
    file_kind text, file_support double precision, mention_rank integer, graph_hop integer,
    graph_path text[], graph_edges text[], stands_in_for_file text, called_by text,
    degraded text, outline text, outlined jsonb, failing_frame boolean
)
language plpython3u
volatile
security invoker
set search_path = codesift, public
set jit = off
as $$
from codesift_db.pipeline.params import Params
from codesift_db.pipeline.rows import pack_flat_rows
return pack_flat_rows(plpy, Params(
    query=query, repo=repo, ref=ref, path_prefix=path_prefix, language=language, kinds=kinds,
    query_embedding=query_embedding, recency_lambda=recency_lambda,
    lexical_weight=lexical_weight, dense_weight=dense_weight, ranking=ranking,
    token_budget=token_budget, graph_depth=graph_depth, hop_decay=hop_decay,
    jaccard_threshold=jaccard_threshold))
$$;

comment on function codesift.pack_context_flat(
    text, text, integer, text, text, text[], vector, integer, double precision,
    double precision, double precision, double precision, double precision, text, text
) is
'pack_context for BI tools: the same rows and arguments, with each key of why a typed '
'column (lexical_rank, dense_rank, rrf, recency, path_prior, file_kind, graph_hop, '
'called_by, outline, outlined, ...) instead of the jsonb, and degraded (why the answer '
'is degraded: ''code: detail'' each, ''; '' between, null when not); select * from '
'codesift.pack_context_flat(''q'', repo => ''r'').';

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
    pruned_by text, packed boolean, tokens integer, why jsonb, language text, citation text
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
'(kept, pruned and by whom, not packed for budget), its blob''s language and its citation '
'(repository:path:start-end).';
