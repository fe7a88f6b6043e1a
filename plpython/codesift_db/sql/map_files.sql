-- The live files of tenant $1 in repositories $2 whose path starts with $3 (all when null),
-- by repository and path, at most $4 (navigation.py: the map's files, the nearest paths).
select
    f.repository_id,
    f.path,
    f.blob_sha
from codesift.files as f
where
    f.tenant_id = $1
    and f.repository_id = any($2)
    and f.live
    and ($3::text is null or starts_with(f.path, $3))
order by f.repository_id, f.path
limit $4
