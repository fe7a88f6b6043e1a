-- The definitions stored for tenant $1's blobs $2 (diff_context.py: those whose lines a
-- change touches); fallback blocks name nothing and are left out; at most $3 rows.
select
    s.blob_sha,
    s.name,
    s.qualified_name,
    s.kind,
    s.parent,
    s.start_line,
    s.end_line,
    s.part
from codesift.code_symbols as s
where s.tenant_id = $1 and s.blob_sha = any($2::text[]) and s.kind <> 'block'
order by s.blob_sha, s.start_line, s.part
limit $3
