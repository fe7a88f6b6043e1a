-- The dense leg over files (dense.py): the live files of tenant $2 holding the k nearest
-- blobs by embedding $1 of model $3, in repositories $4, passing the filters. A line
-- commented 'only with X' is kept only when filter X is given ($5 path prefix, $6
-- language; every parameter is declared either way); k is written in. The HNSW index
-- serves the inner order; dense_files_exact.sql sorts a small tenant's rows instead.
select
    v.repository_id,
    v.path,
    d.distance
from (
    select
        bl.sha,
        (bl.embedding <=> $1)::double precision as distance
    from codesift.blobs as bl
    where
        bl.tenant_id = $2 and bl.embedding_model = $3
        and exists (
            select 1 from codesift.live_files as v
            where
                v.tenant_id = bl.tenant_id and v.blob_sha = bl.sha
                and v.repository_id = any($4)
                and starts_with(v.path, $5)  -- only with path_prefix
                and v.language = $6  -- only with language
            -- a walk over a whole tenant: one probe per row it reaches; as a semi-join
            -- the generic plan may read every live file first and sort their rows instead
            -- noqa: disable=AM09
            offset 0  -- only with tenant_walk
            -- noqa: enable=AM09
        )
    order by bl.embedding <=> $1
    limit {{ k }}
) as d
inner join codesift.live_files as v on v.tenant_id = $2 and d.sha = v.blob_sha
where
    v.repository_id = any($4)
    and starts_with(v.path, $5)  -- only with path_prefix
order by d.distance asc, v.path asc
