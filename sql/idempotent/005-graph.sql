-- The import-graph walk: breadth first over files, each reached once (a walk over
-- paths grows as fanout^depth, 16 s at depth 5 on a 12-file import clique). In
-- plpgsql, not sql: a SQL function's statements are planned again at every call,
-- these are cached; and without temporary tables, so that it runs on a hot standby.
-- the signature before the walk named its tenant
drop function if exists codesift.graph_walk(bigint[], text[], integer, double precision, integer);
-- and the name before it began with an underscore (internal: the pipeline calls it)
drop function if exists codesift.graph_walk(
    bigint, bigint[], text[], integer, double precision, integer
);

create or replace function codesift._graph_walk(
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
        raise exception '_graph_walk: max_depth, decay and fanout must not be null'
        using errcode = '22004';
    end if;
    if max_depth < 0 or max_depth > max_hops then
        raise exception '_graph_walk: max_depth must be between 0 and % (got %)', max_hops, max_depth
        using errcode = '22023';
    end if;
    -- not (0 < decay <= 1) also refuses NaN, which compares greater than every number
    if not (decay > 0 and decay <= 1) then
        raise exception '_graph_walk: decay must be in (0, 1] (got %)', decay
        using errcode = '22023';
    end if;
    if fanout < 0 or fanout > max_fanout then
        raise exception '_graph_walk: fanout must be between 0 and % (got %)', max_fanout, fanout
        using errcode = '22023';
    end if;
    if coalesce(cardinality(seeds), 0) > max_seeds then
        raise exception '_graph_walk: at most % seed paths (got %)', max_seeds, cardinality(seeds)
        using errcode = '22023';
    end if;
    if coalesce(cardinality(repository_ids), 0) > max_repositories then
        raise exception '_graph_walk: at most % repositories (got %)',
            max_repositories, cardinality(repository_ids)
        using errcode = '22023';
    end if;
    if coalesce(cardinality(seeds), 0) * coalesce(cardinality(repository_ids), 0) > max_starts then
        raise exception '_graph_walk: at most % seed paths times repositories (got % times %)',
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
        from unnest(_graph_walk.seeds) with ordinality as seed (path, ord)
        cross join unnest(_graph_walk.repository_ids) with ordinality as r (id, ord)
        cross join
            lateral (
                select 1 as edge
                from codesift.code_symbol_edges as e
                where
                    e.tenant_id = _graph_walk.tenant
                    and e.repository_id = r.id and e.source_path = seed.path
                union all
                select 1
                from codesift.code_symbol_edges as e
                where
                    e.tenant_id = _graph_walk.tenant
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
                                e1.tenant_id = _graph_walk.tenant
                                and e1.repository_id = w.repository_id
                                and e1.source_path = w.path
                            union all
                            select
                                e2.source_path,
                                e2.id
                            from codesift.code_symbol_edges as e2
                            where
                                e2.tenant_id = _graph_walk.tenant
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
                        limit _graph_walk.fanout
                    ) as e
                where depth = 1 or w.path <> all(_graph_walk.seeds)
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
            f.tenant_id = _graph_walk.tenant
            and f.repository_id = r.repository_id and f.path = r.path and f.live
    )
    order by r.repository_id, r.path;
end;
$fn$;

comment on function codesift._graph_walk(
    bigint, bigint[], text[], integer, double precision, integer
) is
'Breadth-first walk over resolved import edges in both directions from seed paths, at most '
'5 hops, fanout edges a file and 10,000 files: each reached live file once, at its smallest '
'hop, with the decay factor and the path that led there.';
