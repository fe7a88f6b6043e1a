-- The stored definitions of tenant $1's blobs $2 named one of $3 (impact.py: the span,
-- kind and parent of each caller, to cite it and to follow its own callers; the caller
-- keeps the (blob, name) pairs it asked for).
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
where
    s.tenant_id = $1
    and s.blob_sha = any($2::text[])
    and s.qualified_name = any($3::text[])
order by s.blob_sha, s.qualified_name, s.start_line, s.part
limit 20000
