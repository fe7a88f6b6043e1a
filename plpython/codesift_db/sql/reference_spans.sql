-- The stored symbols named $3 of the blobs $2 of tenant $1 (references.py callers: the
-- lines of each caller, for its citation).
select
    s.blob_sha,
    s.qualified_name,
    s.kind,
    s.start_line,
    s.end_line,
    s.part
from codesift.code_symbols as s
where s.tenant_id = $1 and s.blob_sha = any($2::text[]) and s.qualified_name = any($3::text[])
order by s.blob_sha, s.start_line, s.part
limit 20000
