-- The stored symbols of blob $2 of tenant $1, the spans that enclose its references
-- (extraction.py backfill_references).
select
    s.name,
    s.qualified_name,
    s.kind,
    s.start_line,
    s.end_line,
    s.part
from codesift.code_symbols as s
where s.tenant_id = $1 and s.blob_sha = $2
