-- The lexical legs, each over symbols and over files: BM25 (the pipeline's
-- default) and ts_rank_cd (kept to compare with it). What every leg shares is in
-- 003-legs.sql, the dense legs in 004-dense.sql, the import-graph walk in
-- 005-graph.sql.
-- Every leg takes the same filters (repositories, path prefix, language,
-- symbol kinds) and applies them before its top-k, so filters never starve it.
-- JIT is off in every function that runs queries: the planner's row estimates
-- for set-returning functions make it compile millisecond queries for 100+ ms.

-- Before these functions' names began with an underscore (internal: only the
-- entry points call them). The ts_rank_cd legs depend on leg_bounds: first.
drop function if exists codesift.tsrank_symbols(
    bigint, text[], bigint[], text, text, text[], integer
);
drop function if exists codesift.tsrank_files(bigint, text[], bigint[], text, text, integer);
drop function if exists codesift.bm25_symbols(
    bigint, text[], bigint[], text, text, text[], integer, double precision, double precision
);
drop function if exists codesift.bm25_files(
    bigint, text[], bigint[], text, text, integer, double precision, double precision
);
drop function if exists codesift.bm25_depth();
drop function if exists codesift.bm25_idf(bigint, text, text[]);
drop function if exists codesift.leg_bounds(integer, text[], text[], bigint[]);
drop function if exists codesift.query_terms(text);
-- the legs before they took term weights
drop function if exists codesift._bm25_symbols(
    bigint, text[], bigint[], text, text, text[], integer, double precision, double precision
);
drop function if exists codesift._bm25_files(
    bigint, text[], bigint[], text, text, integer, double precision, double precision
);
-- the legs before they took the scope's depth factor
drop function if exists codesift._bm25_symbols(
    bigint, text[], bigint[], text, text, text[], integer, double precision, double precision,
    double precision[]
);
drop function if exists codesift._bm25_files(
    bigint, text[], bigint[], text, text, integer, double precision, double precision,
    double precision[]
);

create or replace function codesift._tsrank_symbols(
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
            select to_tsquery('simple', array_to_string(_tsrank_symbols.terms, ' | ')) as query
        ) as q
    where
        s.tenant_id = _tsrank_symbols.tenant
        and cardinality(_tsrank_symbols.terms) > 0
        and s.lexemes @@ q.query
        and (_tsrank_symbols.kinds is null or s.kind = any(_tsrank_symbols.kinds))
        and exists (
            select 1 from codesift.live_files as v
            where
                v.tenant_id = s.tenant_id
                and v.blob_sha = s.blob_sha
                and v.repository_id = any(_tsrank_symbols.repository_ids)
                and (
                    _tsrank_symbols.path_prefix is null
                    or starts_with(v.path, _tsrank_symbols.path_prefix)
                )
                and (_tsrank_symbols.lang is null or v.language = _tsrank_symbols.lang)
        )
    order by score desc, s.id asc
    -- the limit is evaluated once, before any row is read: the bounds are checked there
    limit (
        case
            when codesift._leg_bounds(
                _tsrank_symbols.k, _tsrank_symbols.terms, _tsrank_symbols.kinds,
                _tsrank_symbols.repository_ids
            ) then _tsrank_symbols.k
        end
    );
end;

comment on function codesift._tsrank_symbols(
    bigint, text[], bigint[], text, text, text[], integer
) is
'Lexical leg over symbols ranked by ts_rank_cd (OR query), kept to compare with BM25.';

create or replace function codesift._tsrank_files(
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
            select to_tsquery('simple', array_to_string(_tsrank_files.terms, ' | ')) as query
        ) as q
    where
        f.tenant_id = _tsrank_files.tenant
        and f.live
        and cardinality(_tsrank_files.terms) > 0
        and f.lexemes @@ q.query
        and f.repository_id = any(_tsrank_files.repository_ids)
        and (_tsrank_files.path_prefix is null or starts_with(f.path, _tsrank_files.path_prefix))
        and (_tsrank_files.lang is null or bl.language = _tsrank_files.lang)
    order by score desc, f.path asc
    -- the limit is evaluated once, before any row is read: the bounds are checked there
    limit (
        case
            when codesift._leg_bounds(
                _tsrank_files.k, _tsrank_files.terms, null, _tsrank_files.repository_ids
            ) then _tsrank_files.k
        end
    );
end;

comment on function codesift._tsrank_files(bigint, text[], bigint[], text, text, integer) is
'Lexical leg over files ranked by ts_rank_cd (OR query), kept to compare with BM25.';

-- The BM25 legs, over symbols and over files: Okapi BM25 with idf and
-- average document length from the tenant's statistics (kept by the extraction
-- trigger), OR semantics over the query's terms. They take the same filters as
-- the other legs (above) and, like them, run with JIT off.
--
-- Bounded work per query, in three steps:
-- 1. candidates: each term's best postings in impact order (codesift.bm25_depth;
--    unset, 2,000 or one per 50 of the tier's documents when more, up to 8,000, shared
--    among a question's terms past 8; for files half of it, but one per 50 files up to
--    4,000; up to 8x that when the scope's live files are few of the tenant's: one ref
--    of many), only those that add at least a
--    tenth of the heaviest term's idf (times its weight) to a score, summed as
--    idf * impact;
-- 2. the best `pool` of them (symbols: four times those step 3 scores; files 4k, at
--    least 200; times the same factor as the depth) are checked against the filters
--    and liveness, best first;
-- 3. the best that pass are scored exactly (every query term, today's statistics, by
--    probes of the (document, term) index) and the top k returned in exact order:
--    symbols max(k, 100), or one per 40 postings a term reads at the tier's depth when
--    more (up to 1,000: a tier deep enough to read more holds more near ties, which a
--    posting left unread puts out of order), files max(k, 50).
-- While fewer than k pass and reading more could find others, depth and pool grow
-- 8x, every posting counts however little it adds, and the steps run again (like
-- pgvector's iterative index scans); but once a filter left too few and the deeper
-- read would read a quarter or more of the terms' postings, every posting is summed
-- for what passes the filters alone instead of checking each candidate against them.
--
-- The queries are static, with every filter optional, and run on a generic
-- plan cached for the session: the postings scans drive them whatever the
-- filters, and planning these statements anew cost more than running them.
--
-- Every table is read with `tenant_id = tenant` although row-level security
-- already limits it to the session's tenant: equal to the policy's expression,
-- it turns the policy's check into a one-time filter instead of one per row
-- (the exact scoring reads thousands of postings rows per query).

create or replace function codesift._weight_bounds(
    terms text[], weights double precision[]
)
returns boolean
language plpgsql
immutable
security invoker
set search_path = codesift, public
as $fn$
begin
    if weights is null then
        return true;
    end if;
    if cardinality(weights) <> coalesce(cardinality(terms), 0) then
        raise exception 'weights has % entries for % terms', cardinality(weights),
            coalesce(cardinality(terms), 0)
        using errcode = '22023', hint = 'pass one weight per term, or null for equal weights';
    end if;
    if exists (select 1 from unnest(weights) as w (x) where not (x >= 0 and x <= 100)) then
        raise exception 'term weights must be numbers from 0 to 100'
        using errcode = '22023';
    end if;
    return true;
end;
$fn$;

comment on function codesift._weight_bounds(text[], double precision[]) is
'Checks the lexical legs'' term weights: null, or one number from 0 to 100 per term.';

create or replace function codesift._bm25_idf(tenant bigint, tier text, terms text[])
returns table (term text, idf double precision, avgdl double precision)
language sql
stable
rows 10
security invoker
-- no SET clause: a function with one is never inlined, and this one is inlined into the
-- legs' queries (its body is schema-qualified and bound at creation, so search_path
-- cannot change what it reads)
begin atomic
    select
        t.term,
        -- in double precision: with 0.5 as a numeric literal every step was numeric
        -- arithmetic, slow where the function is inlined into a statement that evaluates
        -- it per row
        ln(1 + ((c.docs - t.df)::double precision + 0.5) / (t.df + 0.5)) as idf,
        c.total_terms::double precision / greatest(c.docs, 1) as avgdl
    from codesift.corpus_stats as c
    inner join codesift.term_stats as t on c.tenant_id = t.tenant_id and c.tier = t.tier
    where
        c.tenant_id = _bm25_idf.tenant
        and c.tier = _bm25_idf.tier
        and t.term = any(_bm25_idf.terms);
end;

comment on function codesift._bm25_idf(bigint, text, text[]) is
'BM25 inverse document frequency of each term in a tenant''s tier (symbol or file), and the '
'tier''s average document length, from the statistics the extraction trigger keeps.';

-- the depth before it grew with the tier's documents
drop function if exists codesift._bm25_depth();

create or replace function codesift._bm25_depth(documents bigint default 0)
returns integer
language plpgsql
stable
security invoker
set search_path = codesift, public
as $fn$
declare
    default_depth constant integer := 2000;
    -- unset, a term reads at least one posting per this many documents of its tier: at a
    -- fixed depth the top 20's agreement with exhaustive BM25 fell as real corpora grew
    -- (bench/results/bm25-agreement-648k.txt) ...
    documents_per_posting constant integer := 50;
    -- ... up to this many: past it the work grows faster than the agreement (near copies
    -- tie, and every tied posting read costs the same)
    size_depth constant integer := 4 * default_depth;
    max_depth constant integer := 1000000;
    setting text := current_setting('codesift.bm25_depth', true);
    digits text;
    depth numeric;
begin
    if setting is null or btrim(setting) = '' then
        return greatest(
            default_depth, least(coalesce(documents, 0) / documents_per_posting, size_depth)
        )::integer;
    end if;
    -- a whole number: below one reads one, above max_depth (or not a number) is a mistake
    digits := substring(setting from '^\s*([+-]?[0-9]{1,30})\s*$');
    if digits is not null then
        depth := digits::numeric;
    end if;
    if digits is null or depth > max_depth then
        raise exception 'codesift.bm25_depth is ''%'', not a number of postings from 1 to %',
            left(setting, 40), max_depth
        using
            errcode = '22023',
            hint = format(
                'set codesift.bm25_depth to a whole number (unset: %s, or one per %s '
                'documents of the tier when more, up to %s), or reset codesift.bm25_depth',
                default_depth, documents_per_posting, size_depth
            );
    end if;
    return greatest(depth, 1)::integer;
end;
$fn$;

comment on function codesift._bm25_depth(bigint) is
'Postings the BM25 legs read per query term before deepening, for a tier of so many documents: '
'setting codesift.bm25_depth, or unset 2,000 or one per 50 documents when that is more (up to '
'8,000); a setting is at least 1 and at most 1,000,000 (anything but a whole number raises '
'22023).';

create or replace function codesift._bm25_tier_depth(
    tenant bigint, tier text, factor integer, terms integer
)
returns integer
language plpgsql
stable
security invoker
set search_path = codesift, public
as $fn$
declare
    documents bigint;
    share bigint;
begin
    -- PL/pgSQL, not SQL: Citus plans no parameterised query of a SQL function
    select c.docs into documents
    from codesift.corpus_stats as c
    where c.tenant_id = _bm25_tier_depth.tenant and c.tier = _bm25_tier_depth.tier;
    -- the depth for the scope's share of the tier's documents (the legs read it factor
    -- times deeper), shared among the terms past 8 of them: a long question's many terms
    -- read no more in all than a short question's; a tenant without statistics yet reads
    -- the default
    share := coalesce(documents, 0) / greatest(factor, 1) * 8 / greatest(terms, 8);
    if tier = 'file' then
        -- the file leg wants a few dozen files: half the default and half the most, but
        -- the same one posting per 50 documents between (halved after the rule, a tier of
        -- 147k real files agreed 0.948 with exhaustive BM25: bm25-agreement-1m.txt)
        return greatest(codesift._bm25_depth(share * 2) / 2, 1);
    end if;
    return codesift._bm25_depth(share);
end;
$fn$;

comment on function codesift._bm25_tier_depth(bigint, text, integer, integer) is
'Postings per query term a BM25 leg reads before its depth factor: codesift._bm25_depth for '
'the tenant''s documents of the tier (symbol or file) over the factor, shared among the terms '
'past 8 of them; the file tier half of it, though one posting per 50 documents up to 4,000.';

create or replace function codesift._bm25_scope_factor(tenant bigint, repository_ids bigint[])
returns integer
language plpgsql
stable
security invoker
set search_path = codesift, public
as $fn$
declare
    tenant_files bigint;
    in_scope bigint;
begin
    -- a tenant's postings are of every ref and repository it holds, and the legs keep only
    -- the documents live in scope: a scope of every ref the tenant holds (or of none)
    -- reads no deeper
    if coalesce(cardinality(repository_ids), 0) = 0
        or (select count(*) from codesift.repositories as r where r.tenant_id = tenant)
        <= cardinality(repository_ids) then
        return 1;
    end if;
    select c.docs into tenant_files
    from codesift.corpus_stats as c
    where c.tenant_id = tenant and c.tier = 'file';
    -- otherwise as many times deeper as the tenant's files outnumber those live in scope,
    -- up to 8 times; counted up to half the tenant's files, past which the factor is 2
    select count(*) into in_scope
    from (
        select 1 from codesift.files as f
        where f.tenant_id = tenant and f.live and f.repository_id = any(repository_ids)
        limit coalesce(tenant_files, 0) / 2 + 1
    ) as q;
    return greatest(1, least(8, ceil(coalesce(tenant_files, 0)::numeric / greatest(in_scope, 1))));
end;
$fn$;

comment on function codesift._bm25_scope_factor(bigint, bigint[]) is
'How many times deeper the BM25 legs read for a scope: 1 when it holds every repository and '
'ref of the tenant, else the tenant''s files over the files live in scope, from 1 to 8.';

create or replace function codesift._bm25_depth_factor(
    tenant bigint, repository_ids bigint[], asked integer
)
returns integer
language sql
stable
security invoker
set search_path = codesift, public
as $fn$
    -- greatest() would turn a null into 1: without an asked factor, the scope's own
    select case
        when asked is null then codesift._bm25_scope_factor(tenant, repository_ids)
        else least(greatest(asked, 1), 8)
    end;
$fn$;

comment on function codesift._bm25_depth_factor(bigint, bigint[], integer) is
'The depth factor the BM25 legs read with: the asked one kept to 1..8, or the scope''s own '
'(codesift._bm25_scope_factor) when none is asked.';

-- A scope too small a share of its tenant for the bounded read (one small repository of
-- many, asked a long question): the terms' best postings are the tenant's, and the few
-- of the scope's among them are found only by reading deep. Reading every posting of the
-- scope's symbols costs less when they hold fewer than the bounded read would read at
-- most (each term's postings to `reading`); a symbol holds at most its length's postings.
-- The scope's symbols passing the filters (each id once) when they are that few, else null.
-- `reading` null: a read of every posting of the terms is weighed against, which costs the
-- same whatever the scope's size: listed up to the most listed.
create or replace function codesift._bm25_small_scope(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    kinds text[], reading integer
)
returns bigint[]
language plpgsql
stable
security invoker
set search_path = codesift, public
set jit = off
-- planned for the filters' values: a path prefix then reads its range of the repository's
-- paths (PostgreSQL derives the range from starts_with() with a constant prefix where the
-- paths sort bytewise), not every live file of the repository
set plan_cache_mode = force_custom_plan
as $fn$
declare
    bounded boolean := codesift._leg_bounds(0, terms, kinds, repository_ids);
    -- the most listed, however deep the read it is weighed against
    most_listed constant integer := 100000;
    most_symbols bigint;
    rows_listed bigint;
    listed bigint[];
begin
    if reading is null then
        most_symbols := most_listed;
    else
        -- the postings the bounded read reads at most, over the tier's average length
        select
            floor(
                coalesce(sum(least(t.df, reading)), 0)
                / max(c.total_terms::float8 / greatest(c.docs, 1))
            )
        into most_symbols
        from codesift.corpus_stats as c
        inner join codesift.term_stats as t on c.tenant_id = t.tenant_id and c.tier = t.tier
        where c.tenant_id = tenant and c.tier = 'symbol' and t.term = any(terms);
        if coalesce(most_symbols, 0) < 1 then
            return null;
        end if;
        most_symbols := least(most_symbols, most_listed);
    end if;
    -- listed repository by repository and file by file, as the legs list a scope, and
    -- only as far as decides (a symbol at two paths is listed twice: counted so, a bound)
    select count(*), array_agg(distinct q.id) into rows_listed, listed
    from (
        select s.id
        from (select distinct u.id from unnest(repository_ids) as u (id)) as r
        cross join lateral (
            select g.blob_sha from codesift.files as g
            where
                g.repository_id = r.id and g.tenant_id = tenant and g.live
                and (path_prefix is null or starts_with(g.path, path_prefix))
                and (
                    lang is null
                    or exists (
                        select 1 from codesift.blobs as bl
                        where
                            bl.tenant_id = g.tenant_id and bl.sha = g.blob_sha
                            and bl.language = lang
                    )
                )
            offset 0 -- noqa: AM09
        ) as f
        cross join lateral (
            select x.id from codesift.code_symbols as x
            where
                x.tenant_id = tenant and x.blob_sha = f.blob_sha
                and (kinds is null or x.kind = any(kinds))
            offset 0 -- noqa: AM09
        ) as s
        limit most_symbols + 1
    ) as q;
    if rows_listed > most_symbols then
        return null;
    end if;
    return coalesce(listed, '{}');
end;
$fn$;

comment on function codesift._bm25_small_scope(
    bigint, text[], bigint[], text, text, text[], integer
) is
'The symbols in scope passing the filters (at most 100,000), when they hold fewer postings '
'than the BM25 symbol leg''s bounded read of the terms would read (reading each; null: '
'every posting of the terms, and then any number up to the most): scored exhaustively then; '
'null when more.';

create or replace function codesift._bm25_symbols(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    kinds text[], k integer, k1 double precision, b double precision,
    weights double precision[] default null, depth_factor integer default null
)
returns table (symbol_id bigint, score double precision)
language plpgsql
stable
security invoker
set search_path = codesift, public
set jit = off
set plan_cache_mode = force_generic_plan
-- the postings are summed per document by hashing: the planner, misled by the
-- per-term LIMIT, sorts thousands of them by document instead
set enable_sort = off
as $fn$
#variable_conflict use_column
declare
    -- in this order: the bounds before anything computed from them
    bounded boolean := codesift._leg_bounds(k, terms, kinds, repository_ids);
    weighted boolean := codesift._weight_bounds(terms, weights);
    reading integer;
    -- candidates scored exactly (step 3), and the pool checked for them
    scoring integer;
    postings_per_scored constant integer := 40;
    most_scored constant integer := 1000;
    checking integer;
    -- from this depth factor on (a fifth or less of the tenant's files in scope), summing
    -- only the scope's symbols' postings saves more than listing those symbols costs
    -- (bench/bm25_versions_bench.py)
    scope_only_from constant integer := 5;
    -- postings that add less than a tenth of the heaviest query term's idf to a score
    -- are not read until too few candidates pass: a long question's many light terms
    -- cost little (bench/bm25_agreement_bench.py)
    least_share double precision := 0.1;
    factor integer;
    most_postings bigint;
    all_postings bigint;
    passed bigint;
    ids bigint[];
    scores double precision[];
    scope_ids bigint[];
    deepened boolean := false;
    filtered boolean := path_prefix is not null or lang is not null or kinds is not null;
    -- a posting of the whole read (below) costs a fraction of one of the deeper read, which
    -- sums, pools and checks every candidate: it is taken while it reads at most this many
    -- times the postings the deeper read would (bench/results/bm25-filter-large-tenant.txt)
    whole_read_share constant integer := 4;
    whole_read boolean;
begin
    -- the caller's (pipeline/legs.py reads it once for both legs) or the scope's own
    factor := codesift._bm25_depth_factor(tenant, repository_ids, depth_factor);
    reading := codesift._bm25_tier_depth(tenant, 'symbol', factor, cardinality(terms));
    -- from the depth before a long question shares it among its terms
    scoring := case
        when cardinality(terms) > 8
            then codesift._bm25_tier_depth(tenant, 'symbol', factor, 0)
        else reading
    end / postings_per_scored;
    scoring := least(greatest(k, 100, scoring), most_scored);
    reading := least(reading::bigint * factor, 2147483647);
    checking := least(4::bigint * scoring * factor, 2147483647);
    select
        coalesce(max(t.df), 0),
        coalesce(sum(t.df), 0)
    into most_postings, all_postings
    from codesift.term_stats as t
    where t.tenant_id = tenant and t.tier = 'symbol' and t.term = any(terms);
    loop
        -- a scope that is a small share of its tenant, or one the filters made small once too
        -- few passed, is scored whole when its postings are fewer than the read would read
        if factor >= scope_only_from or (deepened and filtered) then
            scope_ids := codesift._bm25_small_scope(
                tenant, terms, repository_ids, path_prefix, lang, kinds, reading
            );
            -- the filters left too few and the deeper read would read (nearly) every posting
            -- of the terms, checking each candidate against them: every posting is summed for
            -- the symbols passing the filters alone instead (listed whatever their postings,
            -- up to _bm25_small_scope's most)
            whole_read := deepened and filtered and all_postings <= whole_read_share * (
                select coalesce(sum(least(t.df, reading)), 0) from codesift.term_stats as t
                where t.tenant_id = tenant and t.tier = 'symbol' and t.term = any(terms)
            );
            if scope_ids is null and whole_read then
                scope_ids := codesift._bm25_small_scope(
                    tenant, terms, repository_ids, path_prefix, lang, kinds, null
                );
                if scope_ids is not null then
                    return query
                    with idf as (
                        select
                            t.term,
                            ln(1 + ((c.docs - t.df)::double precision + 0.5) / (t.df + 0.5))
                            * coalesce(w.weight, 1.0) as idf,
                            c.total_terms::double precision / greatest(c.docs, 1) as avgdl
                        from codesift.corpus_stats as c
                        inner join codesift.term_stats as t
                            on c.tenant_id = t.tenant_id and c.tier = t.tier
                        left join unnest(terms, weights) as w (term, weight) on t.term = w.term
                        where
                            c.tenant_id = tenant and c.tier = 'symbol' and t.term = any(terms)
                    ),

                    -- every posting of each term, read from the impact index alone (it holds
                    -- the symbol), the scope's kept: the best of them by impact ...
                    hits as (
                        select
                            p.symbol_id,
                            sum(idf.idf * p.impact) as rough
                        from idf
                        cross join lateral (
                            select x.symbol_id, x.impact from codesift.symbol_terms as x
                            where x.tenant_id = tenant and x.term = idf.term
                            offset 0 -- noqa: AM09
                        ) as p
                        where p.symbol_id in (select unnest(scope_ids))
                        group by p.symbol_id
                        order by 2 desc, 1 asc
                        limit greatest(k, 100)
                    )

                    -- ... scored exactly, as the bounded read's best are
                    select
                        hits.symbol_id,
                        exact.score
                    from hits
                    cross join lateral (
                        select
                            sum(idf.idf * codesift.bm25_weight(t.tf, t.dl, idf.avgdl, k1, b))
                                as score
                        from idf
                        cross join lateral (
                            select x.tf, x.dl from codesift.symbol_terms as x
                            where
                                x.symbol_id = hits.symbol_id and x.term = idf.term
                                and x.tenant_id = tenant
                            offset 0 -- noqa: AM09
                        ) as t
                    ) as exact
                    order by 2 desc, 1 asc
                    limit k;
                    return;
                end if;
            elsif scope_ids is not null then
                -- exact BM25 of every symbol listed: each one's postings read whole (one range
                -- of the (symbol, term) index), those of the query's terms kept
                return query
                with idf as (
                    select
                        t.term,
                        ln(1 + ((c.docs - t.df)::double precision + 0.5) / (t.df + 0.5))
                        * coalesce(w.weight, 1.0) as idf,
                        c.total_terms::double precision / greatest(c.docs, 1) as avgdl
                    from codesift.corpus_stats as c
                    inner join codesift.term_stats as t
                        on c.tenant_id = t.tenant_id and c.tier = t.tier
                    left join unnest(terms, weights) as w (term, weight) on t.term = w.term
                    where c.tenant_id = tenant and c.tier = 'symbol' and t.term = any(terms)
                )

                select
                    p.symbol_id,
                    sum(idf.idf * codesift.bm25_weight(p.tf, p.dl, idf.avgdl, k1, b)) as score
                from unnest(scope_ids) as u (id)
                cross join lateral (
                    select x.symbol_id, x.term, x.tf, x.dl from codesift.symbol_terms as x
                    where x.symbol_id = u.id and x.tenant_id = tenant
                    offset 0 -- noqa: AM09
                ) as p
                inner join idf on p.term = idf.term
                group by p.symbol_id
                order by 2 desc, 1 asc
                limit k;
                return;
            end if;
        end if;
        -- codesift._bm25_idf written out, as the planner inlines it on one node: Citus
        -- sends a statement whole to the worker holding the tenant's shards only when
        -- the statement names its tables itself (a SQL function's body runs nested there).
        -- A term's weight (1 when none is given) scales its idf: a long question's
        -- identifiers count more than its prose (pipeline/question.py)
        with term_idf as (
            select
                t.term,
                ln(1 + ((c.docs - t.df)::double precision + 0.5) / (t.df + 0.5))
                * coalesce(w.weight, 1.0) as idf,
                c.total_terms::double precision / greatest(c.docs, 1) as avgdl
            from codesift.corpus_stats as c
            inner join codesift.term_stats as t on c.tenant_id = t.tenant_id and c.tier = t.tier
            left join unnest(terms, weights) as w (term, weight) on t.term = w.term
            where c.tenant_id = tenant and c.tier = 'symbol' and t.term = any(terms)
        ),

        idf as (
            select
                term_idf.*,
                -- a posting of this term adds least_share of the heaviest term's idf or more
                least_share * max(term_idf.idf) over () / nullif(term_idf.idf, 0) as least_impact
            from term_idf
        ),

        -- a scope that is a small part of the tenant (one ref of many): the symbols live
        -- in it, so that only their postings are summed (listed only then, once). Its files
        -- are listed repository by repository, each id once, and their symbols probed file
        -- by file: the generic plan cannot size `repository_id = any(...)` and may read the
        -- whole files table, or every symbol of the tenant, instead
        in_scope as materialized (
            select s.id
            from (select distinct u.id from unnest(repository_ids) as u (id)) as r
            cross join lateral (
                select g.blob_sha from codesift.files as g
                where g.repository_id = r.id and g.tenant_id = tenant and g.live
                offset 0 -- noqa: AM09
            ) as f
            cross join lateral (
                select x.id from codesift.code_symbols as x
                where x.tenant_id = tenant and x.blob_sha = f.blob_sha
                offset 0 -- noqa: AM09
            ) as s
        ),

        -- the scope as one array, unnested where it is asked: `in (select ...)` over the
        -- rows is a subplan hashed only while the planner's estimate of them (its tenant's
        -- size) fits in work_mem, and past it reads them once per posting (17 s for 2,453
        -- symbols of a 1.1M-symbol tenant); an array's elements are estimated at ten
        scope_ids as (select array_agg(in_scope.id) as ids from in_scope),

        summed as (
            select
                p.symbol_id,
                sum(idf.idf * p.impact) as rough
            from idf
            cross join
                lateral (
                    select
                        t.symbol_id,
                        t.impact
                    from codesift.symbol_terms as t
                    where
                        t.tenant_id = tenant
                        and t.term = idf.term
                        and t.impact >= idf.least_impact
                    order by t.impact desc
                    limit reading
                ) as p
            where
                factor < scope_only_from
                or p.symbol_id in (select unnest(scope_ids.ids) from scope_ids)
            group by p.symbol_id
        ),

        pool as (
            select
                summed.symbol_id,
                summed.rough
            from summed
            order by summed.rough desc, summed.symbol_id asc
            limit checking
        ),

        passing as (
            select pool.symbol_id
            from pool
            inner join codesift.code_symbols as s on pool.symbol_id = s.id
            where
                s.tenant_id = tenant
                and (kinds is null or s.kind = any(kinds))
                and exists (
                    select 1 from codesift.files as f
                    where
                        f.tenant_id = s.tenant_id
                        and f.blob_sha = s.blob_sha
                        and f.live
                        and f.repository_id = any(repository_ids)
                        and (path_prefix is null or starts_with(f.path, path_prefix))
                        and (
                            lang is null
                            or exists (
                                select 1 from codesift.blobs as bl
                                where
                                    bl.tenant_id = f.tenant_id
                                    and bl.sha = f.blob_sha
                                    and bl.language = lang
                            )
                        )
                )
            order by pool.rough desc, pool.symbol_id asc
            limit scoring
        ),

        best as (
            select
                passing.symbol_id,
                exact.score
            from passing
            cross join
                lateral (
                    select
                        sum(idf.idf * codesift.bm25_weight(t.tf, t.dl, idf.avgdl, k1, b))
                            as score
                    from idf
                    cross join
                        lateral (
                            select
                                x.tf,
                                x.dl
                            from codesift.symbol_terms as x
                            where
                                x.symbol_id = passing.symbol_id
                                and x.term = idf.term
                                and x.tenant_id = tenant
                            -- a probe per query term (at most 64), never a scan of every
                            -- term of the document: offset 0 keeps the planner from
                            -- merging the two lists, which it does for a long document
                            offset 0
                        ) as t
                ) as exact
            order by exact.score desc, passing.symbol_id asc
            limit k
        )

        select
            (select count(*) from passing),
            array_agg(best.symbol_id order by best.score desc, best.symbol_id),
            array_agg(best.score order by best.score desc, best.symbol_id)
        into passed, ids, scores
        from best;
        -- every posting read and a pool as large as all of them: nothing more to find
        exit when
            passed >= k
            or (
                least_share = 0
                and reading >= most_postings
                and checking >= least(all_postings, 2147483647)
            );
        least_share := 0; -- too few pass: every posting may count
        reading := least(reading::bigint * 8, 2147483647);
        checking := least(checking::bigint * 8, 2147483647);
        deepened := true;
    end loop;
    return query select u.id, u.score from unnest(ids, scores) as u (id, score);
end;
$fn$;

comment on function codesift._bm25_symbols(
    bigint, text[], bigint[], text, text, text[], integer, double precision, double precision,
    double precision[], integer
) is
'Lexical leg over symbols: Okapi BM25 (k1, b) with idf from the tenant''s term statistics, '
'OR semantics over the terms; top k live symbols passing the filters, scored exactly, from '
'candidates among each term''s best-impact postings, read depth_factor times deeper (1 to '
'8; codesift._bm25_scope_factor when null).';

create or replace function codesift._bm25_files(
    tenant bigint, terms text[], repository_ids bigint[], path_prefix text, lang text,
    k integer, k1 double precision, b double precision,
    weights double precision[] default null, depth_factor integer default null
)
returns table (repository_id bigint, path text, score double precision)
language plpgsql
stable
security invoker
set search_path = codesift, public
set jit = off
set plan_cache_mode = force_generic_plan
-- the postings are summed per document by hashing: the planner, misled by the
-- per-term LIMIT, sorts thousands of them by document instead
set enable_sort = off
as $fn$
#variable_conflict use_column
declare
    -- in this order: the bounds before anything computed from them
    bounded boolean := codesift._leg_bounds(k, terms, null, repository_ids);
    weighted boolean := codesift._weight_bounds(terms, weights);
    -- the file tier's depth (codesift._bm25_tier_depth): on django + sympy (7,295 files)
    -- 1,000 postings per term gave 0.98 of the exhaustive top 20, 500 gave 0.95
    -- (bench/bm25_agreement_bench.py)
    reading integer;
    -- as in _bm25_symbols: below it a scope is read deeper and filtered when it passes,
    -- since listing half a large tenant's files costs more than the postings it saves
    scope_only_from constant integer := 5;
    checking integer := greatest(4 * k, 200);
    -- postings that add less than a tenth of the heaviest query term's idf to a score
    -- are not read until too few candidates pass: a long question's many light terms
    -- cost little (bench/bm25_agreement_bench.py)
    least_share double precision := 0.1;
    factor integer;
    most_postings bigint;
    all_postings bigint;
    passed bigint;
    repos bigint[];
    paths text[];
    scores double precision[];
    deepened boolean := false;
    -- as in _bm25_symbols
    whole_read_share constant integer := 4;
    scope_shas text[];
    scope_repos bigint[];
    scope_paths text[];
begin
    select
        coalesce(max(t.df), 0),
        coalesce(sum(t.df), 0)
    into most_postings, all_postings
    from codesift.term_stats as t
    where t.tenant_id = tenant and t.tier = 'file' and t.term = any(terms);
    -- the caller's (pipeline/legs.py reads it once for both legs) or the scope's own
    factor := codesift._bm25_depth_factor(tenant, repository_ids, depth_factor);
    reading := codesift._bm25_tier_depth(tenant, 'file', factor, cardinality(terms));
    reading := least(reading::bigint * factor, 2147483647);
    checking := least(checking::bigint * factor, 2147483647);
    loop
        -- a filter left too few and the deeper read would read (nearly) every posting of
        -- the terms, checking each candidate against it: every posting is summed for the
        -- files passing it alone instead (as in _bm25_symbols)
        if deepened and (path_prefix is not null or lang is not null)
            and all_postings <= whole_read_share * (
                select coalesce(sum(least(t.df, reading)), 0) from codesift.term_stats as t
                where t.tenant_id = tenant and t.tier = 'file' and t.term = any(terms)
            ) then
            -- the live files passing the filters, planned for their values (this function's
            -- statements run on generic plans): a path prefix reads its range of the paths,
            -- as _bm25_small_scope's listing does
            execute $listing$
                select array_agg(x.blob_sha), array_agg(x.repository_id), array_agg(x.path)
                from codesift.files as x
                where
                    x.tenant_id = $1 and x.repository_id = any($2) and x.live
                    and ($3::text is null or starts_with(x.path, $3))
                    and (
                        $4::text is null
                        or exists (
                            select 1 from codesift.blobs as bl
                            where
                                bl.tenant_id = x.tenant_id and bl.sha = x.blob_sha
                                and bl.language = $4
                        )
                    )
            $listing$
            into scope_shas, scope_repos, scope_paths
            using tenant, repository_ids, path_prefix, lang;
            return query
            with idf as (
                select
                    t.term,
                    ln(1 + ((c.docs - t.df)::double precision + 0.5) / (t.df + 0.5))
                    * coalesce(w.weight, 1.0) as idf,
                    c.total_terms::double precision / greatest(c.docs, 1) as avgdl
                from codesift.corpus_stats as c
                inner join codesift.term_stats as t
                    on c.tenant_id = t.tenant_id and c.tier = t.tier
                left join unnest(terms, weights) as w (term, weight) on t.term = w.term
                where c.tenant_id = tenant and c.tier = 'file' and t.term = any(terms)
            ),

            in_scope as (
                select u.blob_sha, u.repository_id, u.path
                from unnest(scope_shas, scope_repos, scope_paths) as u (blob_sha, repository_id, path)
            ),

            -- every posting of each term from the impact index alone, the scope's kept ...
            hits as (
                select
                    p.blob_sha,
                    sum(idf.idf * p.impact) as rough
                from idf
                cross join lateral (
                    select x.blob_sha, x.impact from codesift.blob_terms as x
                    where x.tenant_id = tenant and x.term = idf.term
                    offset 0 -- noqa: AM09
                ) as p
                where p.blob_sha in (select unnest(scope_shas))
                group by p.blob_sha
            ),

            -- ... at each of their paths in scope, the best of them ...
            passing as (
                select
                    hits.blob_sha,
                    in_scope.repository_id,
                    in_scope.path
                from hits
                inner join in_scope on hits.blob_sha = in_scope.blob_sha
                order by hits.rough desc, in_scope.path asc
                limit greatest(k, 50)
            )

            -- ... scored exactly, as the bounded read's best are
            select
                passing.repository_id,
                passing.path,
                exact.score
            from passing
            cross join lateral (
                select
                    sum(idf.idf * codesift.bm25_weight(t.tf, t.dl, idf.avgdl, k1, b)) as score
                from idf
                cross join lateral (
                    select x.tf, x.dl from codesift.blob_terms as x
                    where
                        x.tenant_id = tenant and x.blob_sha = passing.blob_sha
                        and x.term = idf.term
                    offset 0 -- noqa: AM09
                ) as t
            ) as exact
            order by 3 desc, 2 asc
            limit k;
            return;
        end if;
        -- codesift._bm25_idf written out, as the planner inlines it on one node: Citus
        -- sends a statement whole to the worker holding the tenant's shards only when
        -- the statement names its tables itself (a SQL function's body runs nested there).
        -- A term's weight (1 when none is given) scales its idf: a long question's
        -- identifiers count more than its prose (pipeline/question.py)
        with term_idf as (
            select
                t.term,
                ln(1 + ((c.docs - t.df)::double precision + 0.5) / (t.df + 0.5))
                * coalesce(w.weight, 1.0) as idf,
                c.total_terms::double precision / greatest(c.docs, 1) as avgdl
            from codesift.corpus_stats as c
            inner join codesift.term_stats as t on c.tenant_id = t.tenant_id and c.tier = t.tier
            left join unnest(terms, weights) as w (term, weight) on t.term = w.term
            where c.tenant_id = tenant and c.tier = 'file' and t.term = any(terms)
        ),

        idf as (
            select
                term_idf.*,
                -- a posting of this term adds least_share of the heaviest term's idf or more
                least_share * max(term_idf.idf) over () / nullif(term_idf.idf, 0) as least_impact
            from term_idf
        ),

        -- a scope that is a small part of the tenant (one ref of many): the blobs live in
        -- it, so that only their postings are summed (listed only then, once); listed
        -- repository by repository, each id once, as in _bm25_symbols
        in_scope as materialized (
            select f.blob_sha
            from (select distinct u.id from unnest(repository_ids) as u (id)) as r
            cross join lateral (
                select g.blob_sha from codesift.files as g
                where g.repository_id = r.id and g.tenant_id = tenant and g.live
                offset 0 -- noqa: AM09
            ) as f
        ),

        -- one array, unnested where it is asked: as in _bm25_symbols
        scope_shas as (select array_agg(in_scope.blob_sha) as shas from in_scope),

        summed as (
            select
                p.blob_sha,
                sum(idf.idf * p.impact) as rough
            from idf
            cross join
                lateral (
                    select
                        t.blob_sha,
                        t.impact
                    from codesift.blob_terms as t
                    where
                        t.tenant_id = tenant
                        and t.term = idf.term
                        and t.impact >= idf.least_impact
                    order by t.impact desc
                    limit reading
                ) as p
            where
                factor < scope_only_from
                or p.blob_sha in (select unnest(scope_shas.shas) from scope_shas)
            group by p.blob_sha
        ),

        pool as (
            select
                summed.blob_sha,
                summed.rough
            from summed
            order by summed.rough desc, summed.blob_sha asc
            limit checking
        ),

        -- a blob is a file at every live path that holds it
        passing as (
            select
                pool.blob_sha,
                f.repository_id,
                f.path,
                pool.rough
            from pool
            inner join codesift.files as f
                on f.tenant_id = tenant and pool.blob_sha = f.blob_sha
            where
                f.live
                and f.repository_id = any(repository_ids)
                and (path_prefix is null or starts_with(f.path, path_prefix))
                and (
                    lang is null
                    or exists (
                        select 1 from codesift.blobs as bl
                        where
                            bl.tenant_id = f.tenant_id
                            and bl.sha = f.blob_sha
                            and bl.language = lang
                    )
                )
            order by pool.rough desc, f.path asc
            limit greatest(k, 50)
        ),

        best as (
            select
                passing.repository_id,
                passing.path,
                exact.score
            from passing
            cross join
                lateral (
                    select
                        sum(idf.idf * codesift.bm25_weight(t.tf, t.dl, idf.avgdl, k1, b))
                            as score
                    from idf
                    cross join
                        lateral (
                            select
                                x.tf,
                                x.dl
                            from codesift.blob_terms as x
                            where
                                x.tenant_id = tenant
                                and x.blob_sha = passing.blob_sha
                                and x.term = idf.term
                            offset 0 -- a probe per query term, as in _bm25_symbols
                        ) as t
                ) as exact
            order by exact.score desc, passing.path asc
            limit k
        )

        select
            (select count(*) from passing),
            array_agg(best.repository_id order by best.score desc, best.path),
            array_agg(best.path order by best.score desc, best.path),
            array_agg(best.score order by best.score desc, best.path)
        into passed, repos, paths, scores
        from best;
        -- every posting read and a pool as large as all of them: nothing more to find
        exit when
            passed >= k
            or (
                least_share = 0
                and reading >= most_postings
                and checking >= least(all_postings, 2147483647)
            );
        least_share := 0; -- too few pass: every posting may count
        reading := least(reading::bigint * 8, 2147483647);
        checking := least(checking::bigint * 8, 2147483647);
        deepened := true;
    end loop;
    return query
    select u.repository_id, u.path, u.score
    from unnest(repos, paths, scores) as u (repository_id, path, score);
end;
$fn$;

comment on function codesift._bm25_files(
    bigint, text[], bigint[], text, text, integer, double precision, double precision,
    double precision[], integer
) is
'Lexical leg over files: Okapi BM25 over whole-file content and path terms; top k live '
'files, scored exactly, from candidates among each term''s best-impact postings, read '
'depth_factor times deeper (1 to 8; codesift._bm25_scope_factor when null).';
