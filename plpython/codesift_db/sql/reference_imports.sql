-- The import statements of the blobs $2 of tenant $1 (references.py: a star import, a
-- file with no import at all, the module a callee comes from); at most $3 rows.
select
    i.blob_sha,
    i.line,
    i.module,
    i.names
from codesift.blob_imports as i
where i.tenant_id = $1 and i.blob_sha = any($2::text[])
order by i.blob_sha, i.line
limit $3
