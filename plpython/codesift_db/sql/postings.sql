-- BM25 postings for the blobs $2 just inserted for tenant $1 (extraction.py
-- on_blobs_inserted), derived from the lexemes just written: a lexeme's position count is
-- its term frequency (1 when it has none); each posting also carries its document's length and its impact
-- (codesift.bm25_weight, the order postings are read in) at the tenant's average document
-- length so far (this batch's own for a first one). Then the tenant's term and corpus
-- statistics.
with avgdl as (
    select
        coalesce(
            (
                select c.total_terms::float8 / nullif(c.docs, 0) from codesift.corpus_stats as c
                where c.tenant_id = $1 and c.tier = 'symbol'
            ),
            (
                select avg(s.term_count) from codesift.code_symbols as s
                where s.tenant_id = $1 and s.blob_sha = any($2)
            )
        ) as symbol,
        coalesce(
            (
                select c.total_terms::float8 / nullif(c.docs, 0) from codesift.corpus_stats as c
                where c.tenant_id = $1 and c.tier = 'file'
            ),
            (
                select avg(b.term_count) from codesift.blobs as b
                where b.tenant_id = $1 and b.sha = any($2)
            )
        ) as file
),

new_symbols as (
    insert into codesift.symbol_terms (tenant_id, symbol_id, term, tf, dl, impact)
    select
        s.tenant_id,
        s.id,
        u.lexeme,
        coalesce(array_length(u.positions, 1), 1) as tf,
        coalesce(s.term_count, 0) as dl,
        codesift.bm25_weight(
            coalesce(array_length(u.positions, 1), 1), s.term_count, a.symbol
        ) as impact
    from codesift.code_symbols as s
    -- a lexeme's position count is its term frequency
    cross join lateral unnest(s.lexemes) as u (lexeme, positions, weights)
    cross join avgdl as a
    where s.tenant_id = $1 and s.blob_sha = any($2)
    returning tenant_id, symbol_id, term, tf
),

new_blobs as (
    insert into codesift.blob_terms (tenant_id, blob_sha, term, tf, dl, impact)
    select
        b.tenant_id,
        b.sha,
        u.lexeme,
        coalesce(array_length(u.positions, 1), 1) as tf,
        coalesce(b.term_count, 0) as dl,
        codesift.bm25_weight(
            coalesce(array_length(u.positions, 1), 1), b.term_count, a.file
        ) as impact
    from codesift.blobs as b
    -- a lexeme's position count is its term frequency
    cross join lateral unnest(b.lexemes) as u (lexeme, positions, weights)
    cross join avgdl as a
    where b.tenant_id = $1 and b.sha = any($2)
    returning tenant_id, blob_sha, term, tf
),

df as (
    select
        'symbol' as tier,
        term,
        count(*) as df
    from new_symbols
    group by term
    union all
    select
        'file' as tier,
        term,
        count(*) as df
    from new_blobs
    group by term
),

term_stats as (
    insert into codesift.term_stats as t (tenant_id, tier, term, df)
    select
        $1 as tenant_id,
        tier,
        term,
        df
    from df
    order by tier, term
    on conflict (tenant_id, tier, term) do update set df = t.df + excluded.df
),

d as (
    select
        'symbol' as tier,
        symbol_id::text as doc,
        tf
    from new_symbols
    union all
    select
        'file' as tier,
        blob_sha as doc,
        tf
    from new_blobs
)

insert into codesift.corpus_stats as c (tenant_id, tier, docs, total_terms)
select
    $1 as tenant_id,
    tier,
    count(distinct doc) as docs,
    coalesce(sum(tf), 0) as total_terms
from d
group by tier
on conflict (tenant_id, tier) do update
    set docs = c.docs + excluded.docs, total_terms = c.total_terms + excluded.total_terms
