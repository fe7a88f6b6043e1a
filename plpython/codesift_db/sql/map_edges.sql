-- The file edges of tenant $1 in repositories $2 with an end whose path starts with $3 (all
-- when null), the strongest first, at most $4 (navigation.py repo_map: the graph it ranks).
select
    e.repository_id,
    e.source_path,
    e.target_path,
    e.relation,
    e.weight
from codesift.file_edges as e
where
    e.tenant_id = $1
    and e.repository_id = any($2)
    and (
        $3::text is null
        or starts_with(e.source_path, $3)
        or starts_with(e.target_path, $3)
    )
order by e.weight desc, e.id asc
limit $4
