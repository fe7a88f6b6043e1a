-- Retrieval legs as SQL functions: BM25 and ts_rank_cd lexical legs and the
-- HNSW dense leg, each over symbols and over files, and the import-graph walk.
-- Every leg takes the same filters (repositories, path prefix, language,
-- symbol kinds) and applies them before its top-k, so filters never starve it.

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

create or replace function codesift.bm25_idf(tenant bigint, tier text, terms text[])
returns table (term text, idf double precision, avgdl double precision)
language sql
stable
security invoker
set search_path = codesift, public
begin atomic
    select
        t.term,
        ln(1 + (c.docs - t.df + 0.5) / (t.df + 0.5)) as idf,
        c.total_terms::double precision / greatest(c.docs, 1) as avgdl
    from codesift.corpus_stats as c
    inner join codesift.term_stats as t on c.tenant_id = t.tenant_id and c.tier = t.tier
    where
        c.tenant_id = bm25_idf.tenant
        and c.tier = bm25_idf.tier
        and t.term = any(bm25_idf.terms);
end;

comment on function codesift.bm25_idf(bigint, text, text[]) is
'BM25 inverse document frequency of each term in a tenant''s tier (symbol or file), and the '
'tier''s average document length, from the statistics the extraction trigger keeps.';

create or replace function codesift.bm25_symbols(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    kinds text[], k integer, k1 double precision, b double precision
)
returns table (symbol_id bigint, score double precision)
language plpgsql
stable
security invoker
set search_path = codesift, public
as $fn$
begin
    -- planned per call with the real values (a function's generic plan cannot tell an
    -- absent filter from a selective one and picks hash joins over every live file)
    return query execute $q$
    with idf as (
        select * from codesift.bm25_idf($1, 'symbol', $2)
    ),

    scored as (
        select
            p.symbol_id,
            sum(
                idf.idf * p.tf * ($7 + 1)
                / (
                    p.tf + $7 * (
                        1 - $9
                        + $9 * coalesce(s.term_count, 0) / greatest(idf.avgdl, 1)
                    )
                )
            ) as score
        from idf
        -- bounded work: the 2,000 highest term frequencies per term (exact below that
        -- many documents per term; above it, like impact-ordered retrieval, the lowest
        -- contributions of frequent, low-idf terms are skipped)
        cross join
            lateral (
                select
                    t.symbol_id,
                    t.tf
                from codesift.symbol_terms as t
                where t.tenant_id = $1 and t.term = idf.term
                order by t.tf desc
                limit 2000
            ) as p
        inner join codesift.code_symbols as s on p.symbol_id = s.id
        where $6 is null or s.kind = any($6)
        group by p.symbol_id
    )

    select
        scored.symbol_id,
        scored.score
    from scored
    inner join codesift.code_symbols as s on scored.symbol_id = s.id
    where
        exists (
            select 1 from codesift.live_files as v
            where
                v.tenant_id = s.tenant_id
                and v.blob_sha = s.blob_sha
                and v.repository_id = any($3)
                and ($4 is null or starts_with(v.path, $4))
                and ($5 is null or v.language = $5)
        )
    order by scored.score desc, scored.symbol_id asc
    limit $8
    $q$ using tenant, terms, repository_ids, path_prefix, lang, kinds, k1, k, b;
end;
$fn$;

comment on function codesift.bm25_symbols(
    bigint, text[], bigint[], text, text, text[], integer, double precision, double precision
) is
'Lexical leg over symbols: Okapi BM25 (k1, b) with idf from the tenant''s term statistics, '
'OR semantics over the terms; top k live symbols passing the filters.';

create or replace function codesift.bm25_files(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    k integer, k1 double precision, b double precision
)
returns table (repository_id bigint, path text, score double precision)
language plpgsql
stable
security invoker
set search_path = codesift, public
as $fn$
begin
    -- planned per call with the real values (a function's generic plan cannot tell an
    -- absent filter from a selective one and picks hash joins over every live file)
    return query execute $q$
    with idf as (
        select * from codesift.bm25_idf($1, 'file', $2)
    ),

    scored as (
        select
            p.blob_sha,
            sum(
                idf.idf * p.tf * ($6 + 1)
                / (
                    p.tf + $6 * (
                        1 - $8
                        + $8 * coalesce(bl.term_count, 0) / greatest(idf.avgdl, 1)
                    )
                )
            ) as score
        from idf
        -- bounded work per term, as in bm25_symbols
        cross join
            lateral (
                select
                    t.blob_sha,
                    t.tf
                from codesift.blob_terms as t
                where t.tenant_id = $1 and t.term = idf.term
                order by t.tf desc
                limit 2000
            ) as p
        inner join codesift.blobs as bl
            on bl.tenant_id = $1 and p.blob_sha = bl.sha
        group by p.blob_sha
    )

    select
        v.repository_id,
        v.path,
        scored.score
    from scored
    inner join codesift.live_files as v
        on v.tenant_id = $1 and scored.blob_sha = v.blob_sha
    where
        v.repository_id = any($3)
        and ($4 is null or starts_with(v.path, $4))
        and ($5 is null or v.language = $5)
    order by scored.score desc, v.path asc
    limit $7
    $q$ using tenant, terms, repository_ids, path_prefix, lang, k1, k, b;
end;
$fn$;

comment on function codesift.bm25_files(
    bigint, text[], bigint[], text, text, integer, double precision, double precision
) is
'Lexical leg over files: Okapi BM25 over whole-file content and path terms; top k live files.';

create or replace function codesift.tsrank_symbols(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    kinds text[], k integer
)
returns table (symbol_id bigint, score double precision)
language sql
stable
security invoker
set search_path = codesift, public
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
language plpgsql
stable
security invoker
set search_path = codesift, public
set "hnsw.iterative_scan" = 'relaxed_order'
set "hnsw.ef_search" = 100
as $$
begin
    -- Dynamic SQL with only the filters in use, planned per call with the real values:
    -- a function's generic plan cannot tell an absent (null) filter from a selective one
    -- and then sorts every row instead of walking the HNSW index (14 s vs 0.1 s at 1M).
    -- The inner order by + limit is what the index serves; iterative scans keep it going
    -- past ef_search when filters reject rows; relaxed order is re-sorted outside.
    return query execute format(
        'select d.id, d.distance from ('
        '  select s.id, (s.embedding <=> $1)::double precision as distance'
        '  from codesift.code_symbols as s'
        '  where s.tenant_id = $2 and s.embedding_model = $3 %s'
        '  and exists (select 1 from codesift.live_files as v'
        '    where v.tenant_id = s.tenant_id and v.blob_sha = s.blob_sha'
        '    and v.repository_id = any($4) %s %s)'
        '  order by s.embedding <=> $1 limit $8'
        ') as d order by d.distance, d.id',
        case when kinds is not null then 'and s.kind = any($7)' else '' end,
        case when path_prefix is not null then 'and starts_with(v.path, $5)' else '' end,
        case when lang is not null then 'and v.language = $6' else '' end
    ) using embedding, tenant, model, repository_ids, path_prefix, lang, kinds, k;
end;
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
language plpgsql
stable
security invoker
set search_path = codesift, public
set "hnsw.iterative_scan" = 'relaxed_order'
set "hnsw.ef_search" = 100
as $$
begin
    -- dynamic SQL planned per call, for the reason given in dense_symbols
    return query execute format(
        'select v.repository_id, v.path, d.distance from ('
        '  select bl.sha, (bl.embedding <=> $1)::double precision as distance'
        '  from codesift.blobs as bl'
        '  where bl.tenant_id = $2 and bl.embedding_model = $3'
        '  and exists (select 1 from codesift.live_files as v'
        '    where v.tenant_id = bl.tenant_id and v.blob_sha = bl.sha'
        '    and v.repository_id = any($4) %s %s)'
        '  order by bl.embedding <=> $1 limit $7'
        ') as d'
        ' join codesift.live_files as v on v.tenant_id = $2 and v.blob_sha = d.sha'
        ' where v.repository_id = any($4) %s'
        ' order by d.distance, v.path',
        case when path_prefix is not null then 'and starts_with(v.path, $5)' else '' end,
        case when lang is not null then 'and v.language = $6' else '' end,
        case when path_prefix is not null then 'and starts_with(v.path, $5)' else '' end
    ) using embedding, tenant, model, repository_ids, path_prefix, lang, k;
end;
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
language sql
stable
security invoker
set search_path = codesift, public
begin atomic
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
    inner join codesift.files as f
        on walk.repository_id = f.repository_id and walk.path = f.path and f.live
    where walk.hop > 0
    order by walk.repository_id, walk.path, walk.hop;
end;

comment on function codesift.graph_walk(bigint[], text[], integer, double precision, integer) is
'Bounded walk over resolved import edges in both directions from seed paths: each reached '
'live file with its hop count, decay factor and the path that led there.';
