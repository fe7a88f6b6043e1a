-- The paths whose live blob differs between the repository refs $2 (base) and $3 (head) of
-- tenant $1, with each side's blob (null where the path is not live); at most $4 rows, by
-- path (diff_context.py: the files a change touches).
with base as (
    select
        f.path,
        f.blob_sha
    from codesift.files as f
    where f.tenant_id = $1 and f.repository_id = $2 and f.live
),

head as (
    select
        f.path,
        f.blob_sha
    from codesift.files as f
    where f.tenant_id = $1 and f.repository_id = $3 and f.live
)

select
    coalesce(head.path, base.path) as path,
    base.blob_sha as base_sha,
    head.blob_sha as head_sha
from base
full outer join head on base.path = head.path
where base.blob_sha is distinct from head.blob_sha
order by 1
limit $4
