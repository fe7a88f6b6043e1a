-- Tenant $1's symbol corpus grows by the symbols of the blobs $2 just inserted that have
-- postings: documents and their terms (for the average document length).
insert into codesift.corpus_stats as c (tenant_id, tier, docs, total_terms)
select
    p.tenant_id,
    'symbol' as tier,
    count(distinct p.symbol_id) as docs,
    coalesce(sum(p.tf), 0) as total_terms
from codesift.symbol_terms as p
where
    p.tenant_id = $1
    and p.symbol_id in (
        select s.id from codesift.code_symbols as s
        where s.tenant_id = $1 and s.blob_sha = any($2)
    )
group by p.tenant_id
on conflict (tenant_id, tier) do update
    set docs = c.docs + excluded.docs, total_terms = c.total_terms + excluded.total_terms
