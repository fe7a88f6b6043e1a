-- The import statements of repository $1's live files, tenant $2, in file and line order;
-- only those of paths $3 unless $3 is null (extraction.py resolve_repository_edges).
select
    f.path,
    b.language,
    i.module,
    i.names,
    i.relation,
    i.line
from codesift.files as f
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
inner join codesift.blob_imports as i on f.tenant_id = i.tenant_id and f.blob_sha = i.blob_sha
where
    f.tenant_id = $2 and f.repository_id = $1 and f.live
    and ($3::text[] is null or f.path = any($3))
order by f.path, i.line
