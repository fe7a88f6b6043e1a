-- The stored symbols named $3 of the blobs $2 of tenant $1 (references.py callers: the
-- lines of each caller, for its citation). Read blob by blob (a probe each, offset 0):
-- read in the index's order to spare the sort, the names and blobs were a filter over
-- every symbol of the tenant.
select
    s.blob_sha,
    s.qualified_name,
    s.kind,
    s.start_line,
    s.end_line,
    s.part
from unnest($2::text[]) as b (sha)
cross join
    lateral ( -- noqa: ST05
        select
            x.blob_sha,
            x.qualified_name,
            x.kind,
            x.start_line,
            x.end_line,
            x.part
        from codesift.code_symbols as x
        where x.tenant_id = $1 and x.blob_sha = b.sha and x.qualified_name = any($3::text[])
        offset 0 -- noqa: AM09
    ) as s
order by s.blob_sha, s.start_line, s.part
limit 20000
