-- Retrieval legs as SQL functions: the ts_rank_cd lexical legs and the HNSW
-- dense leg, each over symbols and over files, and the import-graph walk (the
-- BM25 legs are in 005-bm25.sql).
-- Every leg takes the same filters (repositories, path prefix, language,
-- symbol kinds) and applies them before its top-k, so filters never starve it.
-- JIT is off in every function that runs queries: the planner's row estimates
-- for set-returning functions make it compile millisecond queries for 100+ ms.

-- Files live at their repository's indexed head, with what filters need.
create or replace view codesift.live_files
with (security_invoker = true) as
select
    f.tenant_id,
    f.repository_id,
    f.path,
    f.blob_sha,
    f.last_changed,
    b.language
from codesift.files as f
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
where f.live;

comment on view codesift.live_files is
'Files live at their repository''s indexed head, with the blob''s language.';

create or replace function codesift.query_terms(query text)
returns text[]
language plpython3u
immutable strict parallel safe
security invoker
set search_path = codesift, public
as $$
from codesift_db.identifiers import query_terms
return query_terms(query)
$$;

comment on function codesift.query_terms(text) is
'Identifier-split, stopword-free terms of a question for an OR lexical query; never raises.';

create or replace function codesift.tsrank_symbols(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    kinds text[], k integer
)
returns table (symbol_id bigint, score double precision)
language sql
stable
security invoker
set search_path = codesift, public
set jit = off
begin atomic
    select
        s.id,
        ts_rank_cd(s.lexemes, q.query)::double precision as score
    from codesift.code_symbols as s,
        lateral (
            select to_tsquery('simple', array_to_string(tsrank_symbols.terms, ' | ')) as query
        ) as q
    where
        s.tenant_id = tsrank_symbols.tenant
        and cardinality(tsrank_symbols.terms) > 0
        and s.lexemes @@ q.query
        and (tsrank_symbols.kinds is null or s.kind = any(tsrank_symbols.kinds))
        and exists (
            select 1 from codesift.live_files as v
            where
                v.tenant_id = s.tenant_id
                and v.blob_sha = s.blob_sha
                and v.repository_id = any(tsrank_symbols.repository_ids)
                and (
                    tsrank_symbols.path_prefix is null
                    or starts_with(v.path, tsrank_symbols.path_prefix)
                )
                and (tsrank_symbols.lang is null or v.language = tsrank_symbols.lang)
        )
    order by score desc, s.id asc
    limit tsrank_symbols.k;
end;

comment on function codesift.tsrank_symbols(
    bigint, text[], bigint[], text, text, text[], integer
) is
'Lexical leg over symbols ranked by ts_rank_cd (OR query), kept to compare with BM25.';

create or replace function codesift.tsrank_files(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    k integer
)
returns table (repository_id bigint, path text, score double precision)
language sql
stable
security invoker
set search_path = codesift, public
set jit = off
begin atomic
    select
        f.repository_id,
        f.path,
        ts_rank_cd(f.lexemes, q.query)::double precision as score
    from codesift.files as f
    inner join codesift.blobs as bl on f.tenant_id = bl.tenant_id and f.blob_sha = bl.sha,
        lateral (
            select to_tsquery('simple', array_to_string(tsrank_files.terms, ' | ')) as query
        ) as q
    where
        f.tenant_id = tsrank_files.tenant
        and f.live
        and cardinality(tsrank_files.terms) > 0
        and f.lexemes @@ q.query
        and f.repository_id = any(tsrank_files.repository_ids)
        and (tsrank_files.path_prefix is null or starts_with(f.path, tsrank_files.path_prefix))
        and (tsrank_files.lang is null or bl.language = tsrank_files.lang)
    order by score desc, f.path asc
    limit tsrank_files.k;
end;

comment on function codesift.tsrank_files(bigint, text[], bigint[], text, text, integer) is
'Lexical leg over files ranked by ts_rank_cd (OR query), kept to compare with BM25.';

create or replace function codesift.dense_symbols(
    tenant bigint, embedding vector, model text, repository_ids bigint[], path_prefix text,
    lang text, kinds text[], k integer
)
returns table (symbol_id bigint, distance double precision)
language plpython3u
stable
security invoker
set search_path = codesift, public
set jit = off
set "hnsw.iterative_scan" = 'relaxed_order'
set "hnsw.ef_search" = 100
set plan_cache_mode = force_custom_plan
as $$
# one cached statement per filter combination: see plpython/codesift_db/dense.py
from codesift_db import dense
return dense.symbols(plpy, tenant, embedding, model, repository_ids, path_prefix, lang,
                     kinds, k)
$$;

comment on function codesift.dense_symbols(
    bigint, vector, text, bigint[], text, text, text[], integer
) is
'Dense leg over symbols: cosine distance on the HNSW index, with iterative scans so that '
'filters still yield k rows.';

create or replace function codesift.dense_files(
    tenant bigint, embedding vector, model text, repository_ids bigint[], path_prefix text,
    lang text, k integer
)
returns table (repository_id bigint, path text, distance double precision)
language plpython3u
stable
security invoker
set search_path = codesift, public
set jit = off
set "hnsw.iterative_scan" = 'relaxed_order'
set "hnsw.ef_search" = 100
set plan_cache_mode = force_custom_plan
as $$
from codesift_db import dense
return dense.files(plpy, tenant, embedding, model, repository_ids, path_prefix, lang, k)
$$;

comment on function codesift.dense_files(bigint, vector, text, bigint[], text, text, integer) is
'Dense leg over files: cosine distance on the blobs'' HNSW index, live files passing filters.';

create or replace function codesift.graph_walk(
    repository_ids bigint[], seeds text[], max_depth integer, decay double precision,
    fanout integer
)
returns table (
    repository_id bigint, path text, hop integer, factor double precision, via text[]
)
language plpgsql
stable
security invoker
set search_path = codesift, public
set jit = off
set plan_cache_mode = force_generic_plan
as $fn$
#variable_conflict use_column
begin
    -- plpgsql, not sql: a SQL function's statement is planned again at every call
    -- (1.2 ms at 100k symbols, four times the walk itself); this plan is cached
    return query
    -- both directions: what a file imports, and what imports it (tests included);
    -- a path is never revisited on a walk, and each node follows at most fanout edges
    with recursive walk (repository_id, path, hop, factor, via) as (
        select
            r.id,
            seed.path,
            0,
            1.0::double precision,
            array[seed.path]
        from unnest(graph_walk.repository_ids) as r (id)
        cross join unnest(graph_walk.seeds) as seed (path)
        union all
        select
            w.repository_id,
            n.path,
            w.hop + 1,
            w.factor * graph_walk.decay,
            w.via || n.path
        from walk as w
        cross join
            lateral (
                select e.path
                from (
                    select
                        e1.target_path as path,
                        e1.id
                    from codesift.code_symbol_edges as e1
                    where e1.repository_id = w.repository_id and e1.source_path = w.path
                    union all
                    select
                        e2.source_path,
                        e2.id
                    from codesift.code_symbol_edges as e2
                    where e2.repository_id = w.repository_id and e2.target_path = w.path
                ) as e
                where e.path <> all(w.via)
                order by e.id
                limit graph_walk.fanout
            ) as n
        where w.hop < graph_walk.max_depth
    )

    select distinct on (walk.repository_id, walk.path)
        walk.repository_id,
        walk.path,
        walk.hop,
        walk.factor,
        walk.via
    from walk
    -- a probe per reached path (a join is planned as a hash of every file)
    cross join
        lateral (
            select 1 as live
            from codesift.files as f
            where f.repository_id = walk.repository_id and f.path = walk.path and f.live
            order by f.path
            limit 1
        ) as f
    where walk.hop > 0
    order by walk.repository_id, walk.path, walk.hop;
end;
$fn$;

comment on function codesift.graph_walk(bigint[], text[], integer, double precision, integer) is
'Bounded walk over resolved import edges in both directions from seed paths: each reached '
'live file with its hop count, decay factor and the path that led there.';
