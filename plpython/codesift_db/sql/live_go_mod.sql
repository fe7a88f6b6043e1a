-- The go.mod at the root of repository $1, tenant $2 (extraction.py resolve_repository_edges).
select b.content
from codesift.files as f
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
where f.tenant_id = $2 and f.repository_id = $1 and f.live and f.path = 'go.mod'
