-- The average document length of tenant $1 so far, per tier, for the impacts of the postings
-- of the blobs $2 just inserted (extraction.py postings): the tenant's corpus statistics, or
-- this batch's own for a first one.
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
    )::float8 as symbol,
    coalesce(
        (
            select c.total_terms::float8 / nullif(c.docs, 0) from codesift.corpus_stats as c
            where c.tenant_id = $1 and c.tier = 'file'
        ),
        (
            select avg(b.term_count) from codesift.blobs as b
            where b.tenant_id = $1 and b.sha = any($2)
        )
    )::float8 as file
