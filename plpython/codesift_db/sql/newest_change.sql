-- The newest change among each repository's ($1) live files for tenant $2, in seconds
-- since the epoch: one probe of files_live_changed (pipeline/recency.py).
select
    r.id as repository_id,
    extract(epoch from (
        select max(f.last_changed) from codesift.files as f
        where f.tenant_id = $2 and f.repository_id = r.id and f.live
    ))::float8 as newest
from unnest($1::bigint[]) as r (id)
