-- The live files of tenant $1 in repositories $2 whose path starts with $3 (all when null),
-- by stored centrality (codesift.rank_files), at most $4; an unranked file first, so one
-- row tells the caller whether the stored ranks cover them all (navigation.py repo_map).
-- Ties go to the shallower path, then by path.
select
    f.repository_id,
    f.path,
    f.blob_sha,
    f.centrality
from codesift.files as f
where
    f.tenant_id = $1
    and f.repository_id = any($2)
    and f.live
    and ($3::text is null or starts_with(f.path, $3))
order by
    f.centrality desc nulls first,
    length(f.path) - length(replace(f.path, '/', '')) asc,
    f.path asc
limit $4
