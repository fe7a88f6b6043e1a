-- The text of repository $1's live files $3 that are code, tenant $2, cut to $4 characters
-- (extraction.py resolve_repository_edges: the names a test uses).
select
    f.path,
    left(b.content, $4) as content
from codesift.files as f
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
where
    f.tenant_id = $2 and f.repository_id = $1 and f.live and f.path = any($3)
    and b.language is not null and b.content is not null
