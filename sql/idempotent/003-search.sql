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

-- What every leg accepts: each is a function of its own, callable with any
-- arguments. Generous for real use (the pipeline asks for 40 symbols and 30 files
-- with at most 64 terms, identifiers.MAX_QUERY_TERMS), small enough that no call
-- makes a leg read without bound. Raises 22004/22023 with the limit; else true.
create or replace function codesift.leg_bounds(
    k integer, terms text[], kinds text[], repository_ids bigint[]
)
returns boolean
language plpgsql
immutable parallel safe
security invoker
set search_path = codesift, public
as $fn$
declare
    max_k constant integer := 1000;  -- rows a leg returns (hybrid_search's k at most)
    max_terms constant integer := 256;  -- query terms
    max_kinds constant integer := 64;  -- symbol kinds in a filter
    max_repositories constant integer := 10000;  -- repositories searched at once
begin
    if k is null then
        raise exception 'k must not be null'
        using errcode = '22004', hint = format('pass the number of rows wanted, 1 to %s', max_k);
    end if;
    if k < 0 or k > max_k then
        raise exception 'k must be between 0 and % (got %)', max_k, k
        using errcode = '22023';
    end if;
    if cardinality(terms) > max_terms then
        raise exception 'at most % query terms (got %)', max_terms, cardinality(terms)
        using errcode = '22023';
    end if;
    if cardinality(kinds) > max_kinds then
        raise exception 'at most % symbol kinds (got %)', max_kinds, cardinality(kinds)
        using errcode = '22023';
    end if;
    if cardinality(repository_ids) > max_repositories then
        raise exception 'at most % repositories (got %)', max_repositories, cardinality(repository_ids)
        using errcode = '22023';
    end if;
    return true;
end;
$fn$;

comment on function codesift.leg_bounds(integer, text[], text[], bigint[]) is
'True when a leg''s k and arrays are within its limits (k 0..1,000; 256 terms, 64 kinds, '
'10,000 repositories); otherwise raises 22004 (null k) or 22023 naming the limit.';

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
    -- the limit is evaluated once, before any row is read: the bounds are checked there
    limit (
        case
            when codesift.leg_bounds(
                tsrank_symbols.k, tsrank_symbols.terms, tsrank_symbols.kinds,
                tsrank_symbols.repository_ids
            ) then tsrank_symbols.k
        end
    );
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
    -- the limit is evaluated once, before any row is read: the bounds are checked there
    limit (
        case
            when codesift.leg_bounds(
                tsrank_files.k, tsrank_files.terms, null, tsrank_files.repository_ids
            ) then tsrank_files.k
        end
    );
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
from codesift_db import dense, plans
try:
    plans.run(plpy, "select codesift.leg_bounds($1, null, $2, $3)",
              ["int", "text[]", "bigint[]"], [k, kinds, repository_ids])
except plpy.SPIError as e:  # its message and errcode, without a Python exception's name
    plpy.error(e.args[0], sqlstate=e.sqlstate)
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
from codesift_db import dense, plans
try:
    plans.run(plpy, "select codesift.leg_bounds($1, null, null, $2)", ["int", "bigint[]"],
              [k, repository_ids])
except plpy.SPIError as e:  # its message and errcode, without a Python exception's name
    plpy.error(e.args[0], sqlstate=e.sqlstate)
return dense.files(plpy, tenant, embedding, model, repository_ids, path_prefix, lang, k)
$$;

comment on function codesift.dense_files(bigint, vector, text, bigint[], text, text, integer) is
'Dense leg over files: cosine distance on the blobs'' HNSW index, live files passing filters.';

-- The import-graph walk: breadth first over files, each reached once (a walk over
-- paths grows as fanout^depth, 16 s at depth 5 on a 12-file import clique). In
-- plpgsql, not sql: a SQL function's statements are planned again at every call,
-- these are cached; and without temporary tables, so that it runs on a hot standby.
-- the signature before the walk named its tenant
drop function if exists codesift.graph_walk(bigint[], text[], integer, double precision, integer);

create or replace function codesift.graph_walk(
    tenant bigint, repository_ids bigint[], seeds text[], max_depth integer,
    decay double precision, fanout integer
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
declare
    -- bounds (pack_context walks from 3 seeds, graph_depth 0..5 hops, 8 edges a file)
    max_hops constant integer := 5;
    max_seeds constant integer := 100;
    max_repositories constant integer := 10000;
    max_starts constant integer := 100000;  -- seeds times repositories
    max_fanout constant integer := 100;
    max_files constant integer := 10000;  -- files reached (returned at most)
    -- the hop being walked: each file on it, the seed it came from and the path
    -- that led there (a text[] in its text form: plpgsql has no arrays of arrays),
    -- best seed first
    front_repository bigint[];
    front_path text[];
    front_origin text[];
    front_via text[];
    -- every file reached so far (each once, at its smallest hop)
    seen_repository bigint[] := '{}';
    seen_path text[] := '{}';
    seen_hop integer[] := '{}';
    seen_factor double precision[] := '{}';
    seen_via text[] := '{}';
    next_repository bigint[];
    next_path text[];
    next_origin text[];
    next_via text[];
    hop_factor double precision := 1.0;
    n integer;
begin
    if max_depth is null or decay is null or fanout is null then
        raise exception 'graph_walk: max_depth, decay and fanout must not be null'
        using errcode = '22004';
    end if;
    if max_depth < 0 or max_depth > max_hops then
        raise exception 'graph_walk: max_depth must be between 0 and % (got %)', max_hops, max_depth
        using errcode = '22023';
    end if;
    -- not (0 < decay <= 1) also refuses NaN, which compares greater than every number
    if not (decay > 0 and decay <= 1) then
        raise exception 'graph_walk: decay must be in (0, 1] (got %)', decay
        using errcode = '22023';
    end if;
    if fanout < 0 or fanout > max_fanout then
        raise exception 'graph_walk: fanout must be between 0 and % (got %)', max_fanout, fanout
        using errcode = '22023';
    end if;
    if coalesce(cardinality(seeds), 0) > max_seeds then
        raise exception 'graph_walk: at most % seed paths (got %)', max_seeds, cardinality(seeds)
        using errcode = '22023';
    end if;
    if coalesce(cardinality(repository_ids), 0) > max_repositories then
        raise exception 'graph_walk: at most % repositories (got %)',
            max_repositories, cardinality(repository_ids)
        using errcode = '22023';
    end if;
    if coalesce(cardinality(seeds), 0) * coalesce(cardinality(repository_ids), 0) > max_starts then
        raise exception 'graph_walk: at most % seed paths times repositories (got % times %)',
            max_starts, cardinality(seeds), cardinality(repository_ids)
        using errcode = '22023';
    end if;

    -- hop 0: each seed in each repository where it has an edge, best seed first
    select
        array_agg(s.repository_id order by s.seed, s.rank),
        array_agg(s.path order by s.seed, s.rank),
        array_agg(s.path order by s.seed, s.rank),
        array_agg(array[s.path]::text order by s.seed, s.rank)
    into front_repository, front_path, front_origin, front_via
    from (
        select distinct on (r.id, seed.path)
            r.id as repository_id,
            seed.path,
            seed.ord as seed,
            r.ord as rank
        from unnest(graph_walk.seeds) with ordinality as seed (path, ord)
        cross join unnest(graph_walk.repository_ids) with ordinality as r (id, ord)
        cross join
            lateral (
                select 1 as edge
                from codesift.code_symbol_edges as e
                where
                    e.tenant_id = graph_walk.tenant
                    and e.repository_id = r.id and e.source_path = seed.path
                union all
                select 1
                from codesift.code_symbol_edges as e
                where
                    e.tenant_id = graph_walk.tenant
                    and e.repository_id = r.id and e.target_path = seed.path
                limit 1
            ) as e
        order by r.id, seed.path, seed.ord
    ) as s;

    for depth in 1 .. max_depth loop
        n := coalesce(cardinality(seen_path), 0);
        exit when front_path is null or n >= max_files;
        hop_factor := hop_factor * decay;
        -- each file on this hop follows its first fanout edges (both directions: what it
        -- imports, and what imports it) to files not reached yet; a file reached from
        -- several takes the best seed's path
        select
            array_agg(s.repository_id order by s.ord, s.id),
            array_agg(s.path order by s.ord, s.id),
            array_agg(s.origin order by s.ord, s.id),
            array_agg((s.via::text[] || s.path)::text order by s.ord, s.id)
        into next_repository, next_path, next_origin, next_via
        from (
            select d.*
            from (
                select distinct on (w.repository_id, e.path)
                    w.repository_id,
                    e.path,
                    w.origin,
                    w.via,
                    w.ord,
                    e.id
                from unnest(front_repository, front_path, front_origin, front_via)
                    with ordinality as w (repository_id, path, origin, via, ord)
                -- a seed reached from another seed is reported, but it was walked from
                cross join
                    lateral (
                        select
                            x.path,
                            x.id
                        from (
                            select
                                e1.target_path as path,
                                e1.id
                            from codesift.code_symbol_edges as e1
                            where
                                e1.tenant_id = graph_walk.tenant
                                and e1.repository_id = w.repository_id
                                and e1.source_path = w.path
                            union all
                            select
                                e2.source_path,
                                e2.id
                            from codesift.code_symbol_edges as e2
                            where
                                e2.tenant_id = graph_walk.tenant
                                and e2.repository_id = w.repository_id
                                and e2.target_path = w.path
                        ) as x
                        where
                            x.path <> w.origin
                            and (w.repository_id, x.path) not in (
                                select
                                    v.repository_id,
                                    v.path
                                from unnest(seen_repository, seen_path) as v (repository_id, path)
                            )
                        order by x.id
                        limit graph_walk.fanout
                    ) as e
                where depth = 1 or w.path <> all(graph_walk.seeds)
                order by w.repository_id, e.path, w.ord, e.id
            ) as d
            order by d.ord, d.id
            limit max_files - n
        ) as s;
        exit when next_path is null;
        seen_repository := seen_repository || next_repository;
        seen_path := seen_path || next_path;
        seen_hop := seen_hop || array_fill(depth, array[cardinality(next_path)]);
        seen_factor := seen_factor || array_fill(hop_factor, array[cardinality(next_path)]);
        seen_via := seen_via || next_via;
        front_repository := next_repository;
        front_path := next_path;
        front_origin := next_origin;
        front_via := next_via;
    end loop;

    -- a probe per reached file for liveness (a join is planned as a hash of every file)
    return query
    select
        r.repository_id,
        r.path,
        r.hop,
        r.factor,
        r.via::text[]
    from unnest(seen_repository, seen_path, seen_hop, seen_factor, seen_via)
        as r (repository_id, path, hop, factor, via)
    where exists (
        select 1 from codesift.files as f
        where
            f.tenant_id = graph_walk.tenant
            and f.repository_id = r.repository_id and f.path = r.path and f.live
    )
    order by r.repository_id, r.path;
end;
$fn$;

comment on function codesift.graph_walk(
    bigint, bigint[], text[], integer, double precision, integer
) is
'Breadth-first walk over resolved import edges in both directions from seed paths, at most '
'5 hops, fanout edges a file and 10,000 files: each reached live file once, at its smallest '
'hop, with the decay factor and the path that led there.';
