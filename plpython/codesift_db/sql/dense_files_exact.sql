-- The dense leg over files, sorted exactly (dense.py: a tenant holding a small share of
-- the table): the live files of tenant $2 holding the k nearest blobs by embedding $1 of
-- model $3, in repositories $4, passing the filters ('only with X' as in dense_files.sql;
-- k is written in). The blobs are read one by one from the live files in scope, so that
-- only the scope's rows are sorted whatever the plan estimates of the tenant's share.
select
    v.repository_id,
    v.path,
    d.distance
from (
    select
        bl.sha,
        (bl.embedding <=> $1)::double precision as distance
    from (
        select distinct f.blob_sha from codesift.files as f
        where
            f.tenant_id = $2 and f.live
            and f.repository_id = any($4)
            and starts_with(f.path, $5)  -- only with path_prefix
            and exists (  -- only with language
                select from codesift.blobs as b  -- only with language
                where b.tenant_id = $2 and b.sha = f.blob_sha and b.language = $6  -- only with language
            )  -- only with language
    ) as scope
    cross join
        lateral (
            select
                bl.sha,
                bl.embedding
            from codesift.blobs as bl
            where bl.tenant_id = $2 and bl.sha = scope.blob_sha and bl.embedding_model = $3
            -- the offset keeps the lookup a subquery, not a join to plan
            offset 0 -- noqa: AM09
        ) as bl
    order by distance
    limit {{ k }}
) as d
inner join codesift.live_files as v on v.tenant_id = $2 and d.sha = v.blob_sha
where
    v.repository_id = any($4)
    and starts_with(v.path, $5)  -- only with path_prefix
order by d.distance asc, v.path asc
