-- The live files of tenant $1 among repositories $2 whose path is one of $3 (navigation.py
-- file_outline: each way of reading the path a caller cites).
select
    f.repository_id,
    f.path,
    f.blob_sha
from codesift.files as f
where
    f.tenant_id = $1
    and f.repository_id = any($2)
    and f.path = any($3)
    and f.live
order by f.repository_id, f.path
