-- Tenant $1's file corpus grows by the blobs $2 just inserted that have postings.
insert into codesift.corpus_stats as c (tenant_id, tier, docs, total_terms)
select
    p.tenant_id,
    'file' as tier,
    count(distinct p.blob_sha) as docs,
    coalesce(sum(p.tf), 0) as total_terms
from codesift.blob_terms as p
where p.tenant_id = $1 and p.blob_sha = any($2)
group by p.tenant_id
on conflict (tenant_id, tier) do update
    set docs = c.docs + excluded.docs, total_terms = c.total_terms + excluded.total_terms
