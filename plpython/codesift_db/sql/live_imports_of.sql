-- The import statements of the live files $3 of repository $1, tenant $2 (extraction.py
-- resolve_repository_edges with source paths), in file and line order.
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
where f.tenant_id = $2 and f.repository_id = $1 and f.live and f.path = any($3)
order by f.path, i.line
