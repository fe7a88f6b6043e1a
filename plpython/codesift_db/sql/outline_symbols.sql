-- The stored symbols of each of tenant $1's blobs $2, without their bodies, in file order
-- (outer before inner), at most $3 per blob (navigation.py: outlines and the map's blocks).
with numbered as (
    select
        c.id,
        c.blob_sha,
        c.name,
        c.qualified_name,
        c.kind,
        c.parent,
        c.start_line,
        c.end_line,
        c.part,
        c.signature,
        c.doc,
        c.name_line,
        row_number() over (
            partition by c.blob_sha order by c.start_line asc, c.end_line desc, c.part asc
        ) as n
    from codesift.code_symbols as c
    where c.tenant_id = $1 and c.blob_sha = any($2::text[])
)

select
    id,
    blob_sha,
    name,
    qualified_name,
    kind,
    parent,
    start_line,
    end_line,
    part,
    signature,
    doc,
    name_line
from numbered
where n <= $3
order by blob_sha asc, n asc
