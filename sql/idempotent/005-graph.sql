-- The graph walk: breadth first over files along the edges of file_edges (imports,
-- tests, references, co-change: those of the relations asked for), each file reached once (a
-- walk over paths grows as fanout^depth: a small import clique makes it explode). In
-- plpgsql, not sql: a SQL function's statements are planned again at every call,
-- these are cached; and without temporary tables, so that it runs on a hot standby.
-- the signature before the walk named its tenant
drop function if exists codesift.graph_walk(bigint[], text[], integer, double precision, integer);
-- and the name before it began with an underscore (internal: the pipeline calls it)
drop function if exists codesift.graph_walk(
    bigint, bigint[], text[], integer, double precision, integer
);
-- and before it took the relations to follow and said which edges led to a file
drop function if exists codesift._graph_walk(
    bigint, bigint[], text[], integer, double precision, integer
);

create or replace function codesift._graph_walk(
    tenant bigint, repository_ids bigint[], seeds text[], max_depth integer,
    decay double precision, fanout integer, relations text[] default null
)
returns table (
    repository_id bigint, path text, hop integer, factor double precision, via text[],
    edges text[], strength double precision
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
    max_relations constant integer := 100;
    -- the hop being walked: each file on it, the seed it came from and the path
    -- that led there (a text[] in its text form: plpgsql has no arrays of arrays),
    -- best seed first
    front_repository bigint[];
    front_path text[];
    front_origin text[];
    front_via text[];
    front_edges text[];  -- the relation of each edge on the path, in its text form
    front_strength double precision[];  -- the product of their weights
    -- every file reached so far (each once, at its smallest hop)
    seen_repository bigint[] := '{}'::bigint[];
    seen_path text[] := '{}'::text[];
    seen_hop integer[] := '{}'::integer[];
    seen_factor double precision[] := '{}'::double precision[];
    seen_via text[] := '{}'::text[];
    seen_edges text[] := '{}'::text[];
    seen_strength double precision[] := '{}'::double precision[];
    next_repository bigint[];
    next_path text[];
    next_origin text[];
    next_via text[];
    next_edges text[];
    next_strength double precision[];
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
    if coalesce(cardinality(relations), 0) > max_relations then
        raise exception '_graph_walk: at most % relations (got %)', max_relations, cardinality(relations)
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
        array_agg(array[s.path]::text order by s.seed, s.rank),
        array_agg('{}'::text order by s.seed, s.rank),
        array_agg(1.0::float8 order by s.seed, s.rank)
    into front_repository, front_path, front_origin, front_via, front_edges, front_strength
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
                from codesift.file_edges as e
                where
                    e.tenant_id = _graph_walk.tenant
                    and e.repository_id = r.id and e.source_path = seed.path
                    and (_graph_walk.relations is null or e.relation = any(_graph_walk.relations))
                union all
                select 1
                from codesift.file_edges as e
                where
                    e.tenant_id = _graph_walk.tenant
                    and e.repository_id = r.id and e.target_path = seed.path
                    and (_graph_walk.relations is null or e.relation = any(_graph_walk.relations))
                limit 1
            ) as e
        order by r.id, seed.path, seed.ord
    ) as s;

    for depth in 1 .. max_depth loop
        n := coalesce(cardinality(seen_path), 0);
        exit when front_path is null or n >= max_files;
        hop_factor := hop_factor * decay;
        -- each file on this hop follows its fanout strongest edges (both directions: what
        -- it imports, and what imports it) to files not reached yet; a file reached from
        -- several takes the best seed's path
        select
            array_agg(s.repository_id order by s.ord, s.id),
            array_agg(s.path order by s.ord, s.id),
            array_agg(s.origin order by s.ord, s.id),
            array_agg((s.via::text[] || s.path)::text order by s.ord, s.id),
            array_agg((s.edges::text[] || s.relation)::text order by s.ord, s.id),
            array_agg(s.strength * s.weight order by s.ord, s.id)
        into next_repository, next_path, next_origin, next_via, next_edges, next_strength
        from (
            select d.*
            from (
                select distinct on (w.repository_id, e.path)
                    w.repository_id,
                    e.path,
                    w.origin,
                    w.via,
                    w.edges,
                    w.strength,
                    w.ord,
                    e.id,
                    e.relation,
                    e.weight
                from unnest(
                    front_repository, front_path, front_origin, front_via, front_edges,
                    front_strength
                ) with ordinality as w (repository_id, path, origin, via, edges, strength, ord)
                -- a seed reached from another seed is reported, but it was walked from
                cross join
                    lateral (
                        select
                            x.path,
                            x.id,
                            x.relation,
                            x.weight
                        from (
                            select
                                e1.target_path as path,
                                e1.id,
                                e1.relation,
                                e1.weight
                            from codesift.file_edges as e1
                            where
                                e1.tenant_id = _graph_walk.tenant
                                and e1.repository_id = w.repository_id
                                and e1.source_path = w.path
                            union all
                            select
                                e2.source_path,
                                e2.id,
                                e2.relation,
                                e2.weight
                            from codesift.file_edges as e2
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
                            and (
                                _graph_walk.relations is null
                                or x.relation = any(_graph_walk.relations)
                            )
                        order by x.weight desc, x.id
                        limit _graph_walk.fanout
                    ) as e
                where depth = 1 or w.path <> all(_graph_walk.seeds)
                order by w.repository_id, e.path, w.ord, e.weight desc, e.id
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
        seen_edges := seen_edges || next_edges;
        seen_strength := seen_strength || next_strength;
        front_repository := next_repository;
        front_path := next_path;
        front_origin := next_origin;
        front_via := next_via;
        front_edges := next_edges;
        front_strength := next_strength;
    end loop;

    -- a probe per reached file for liveness (a join is planned as a hash of every file)
    return query
    select
        r.repository_id,
        r.path,
        r.hop,
        r.factor,
        r.via::text[],
        r.edges::text[],
        r.strength
    from unnest(seen_repository, seen_path, seen_hop, seen_factor, seen_via, seen_edges,
        seen_strength)
        as r (repository_id, path, hop, factor, via, edges, strength)
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
    bigint, bigint[], text[], integer, double precision, integer, text[]
) is
'Breadth-first walk over the edges of the given relations (null: all) in both directions from '
'seed paths, at most 5 hops, the fanout strongest edges a file and 10,000 files: each reached '
'live file once, at its smallest hop, with the decay factor, the path that led there, the '
'relation of each edge on it and the product of their weights.';
