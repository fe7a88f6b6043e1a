-- The texts the dense leg could see (pipeline/degraded.py, read only while a backlog shows):
-- of tenant $1, the symbols and the files live in repositories $2, each counted to at
-- most $3 (in no order: a capped count); from the live files in scope.
with scope as (
    -- each blob once, at its first live path in scope: an index probe per file (a scalar
    -- subquery, never a hashed anti-join), so that the capped counts stop early where a
    -- DISTINCT would hash every live file in scope first
    select f.blob_sha from codesift.files as f
    where
        f.tenant_id = $1 and f.live and f.repository_id = any($2)
        and (
            select g.path from codesift.files as g
            where
                g.tenant_id = $1 and g.blob_sha = f.blob_sha and g.live
                and g.repository_id = any($2)
                and (g.repository_id, g.path) < (f.repository_id, f.path)
            limit 1
        ) is null
)

select
    (
        select count(*) from (
            select 1
            from scope
            inner join codesift.code_symbols as s
                on s.tenant_id = $1 and scope.blob_sha = s.blob_sha
            limit $3 -- noqa: AM09
        ) as q
    ) as symbols,
    (
        select count(*) from (
            select 1 from scope
            limit $3 -- noqa: AM09
        ) as q
    ) as files
