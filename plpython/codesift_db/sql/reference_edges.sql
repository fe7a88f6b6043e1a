-- The import edges (a statement's line, its resolved target) from the paths $3 of the
-- repository refs $2 of tenant $1 (references.py: where an imported name comes from); at
-- most $4 rows.
select
    e.repository_id,
    e.source_path,
    e.target_path,
    e.line,
    e.names
from codesift.file_edges as e
where
    e.tenant_id = $1
    and e.repository_id = any($2::bigint[])
    and e.source_path = any($3::text[])
    and e.line is not null
order by e.repository_id, e.source_path, e.line
limit $4
