-- Tenant $1's statistics grow by the file postings of the blobs $2 just inserted
-- (postings_files.sql): each term's document frequency.
insert into codesift.term_stats as t (tenant_id, tier, term, df)
select
    p.tenant_id,
    'file' as tier,
    p.term,
    count(*) as df
from codesift.blob_terms as p
where p.tenant_id = $1 and p.blob_sha = any($2)
group by p.tenant_id, p.term
order by p.term
on conflict (tenant_id, tier, term) do update set df = t.df + excluded.df
