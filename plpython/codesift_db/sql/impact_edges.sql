-- The file edges of the repository refs $2 of tenant $1 that lead to one of the paths $3
-- (an importer, a test, a file referencing it), and the co-change edges touching one of
-- them either way (impact.py: one hop of the files that depend on these); at most $4 rows,
-- the strongest first.
select
    e.repository_id,
    e.source_path,
    e.target_path,
    e.relation,
    e.weight,
    e.names
from codesift.file_edges as e
where
    e.tenant_id = $1
    and e.repository_id = any($2::bigint[])
    and (
        e.target_path = any($3::text[])
        or (e.relation = 'co_change' and e.source_path = any($3::text[]))
    )
order by e.weight desc, e.id asc
limit $4
