-- The texts the dense leg could see (pipeline/degraded.py, read only while a backlog shows):
-- of tenant $1, the symbols and the files live in repositories $2, each counted to at
-- most $3.
select
    (
        select count(*) from (
            select 1
            from codesift.code_symbols as s
            where
                s.tenant_id = $1
                and exists (
                    select 1 from codesift.files as f
                    where
                        f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha
                        and f.live and f.repository_id = any($2)
                )
            order by s.id
            limit $3
        ) as q
    ) as symbols,
    (
        select count(*) from (
            select distinct f.blob_sha
            from codesift.files as f
            where f.tenant_id = $1 and f.live and f.repository_id = any($2)
            order by f.blob_sha
            limit $3
        ) as q
    ) as files
