-- The top-level names defined in repository $1's live files, tenant $2 (extraction.py
-- resolve_repository_edges: derived_edges.py reads which file defines a name).
select distinct
    f.path,
    s.name
from codesift.files as f
inner join codesift.code_symbols as s on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha
where f.tenant_id = $2 and f.repository_id = $1 and f.live and s.parent is null
