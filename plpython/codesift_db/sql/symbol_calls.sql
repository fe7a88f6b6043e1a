-- The calls made inside the symbols named $3 of the blobs $2 of tenant $1 (references.py
-- callees: each symbol's own, not those of the symbols nested in it); at most $4 rows.
select
    c.blob_sha,
    c.symbol,
    c.name,
    c.line,
    c.qualifier,
    c.import_line
from codesift.code_references as c
where
    c.tenant_id = $1
    and c.blob_sha = any($2::text[])
    and c.symbol = any($3::text[])
    and c.is_call
order by c.blob_sha, c.symbol, c.line
limit $4
