-- The texts the dense leg could see (pipeline/degraded.py, read only while a backlog shows):
-- of tenant $1, the symbols and the files live in repositories $2, each counted to at
-- most $3 (in no order: a capped count); from the live files in scope.
with scope as (
    select distinct f.blob_sha from codesift.files as f
    where f.tenant_id = $1 and f.live and f.repository_id = any($2)
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
