-- The embedding backlog in scope (pipeline/degraded.py): of tenant $1, the symbols and
-- files live in repositories $2 that wait for their first vector, each counted to at most
-- $3 (in no order: a capped count); and only while both stay under $3 (a backlog small
-- enough to compare), the texts in scope the dense leg could see, each counted to at most
-- $4. A tenant without a backlog costs a probe of the queue's partial index
-- (code_symbols_unembedded, blobs_unembedded); otherwise the counts start from the live
-- files in scope, so that other refs' and repositories' backlog is never read, whatever
-- plan PL/Python caches.
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
            limit 1 -- noqa: AM09
        ) is null
),

pending as materialized (
    select
        case
            when not exists (
                select from codesift.code_symbols as s
                where
                    s.tenant_id = $1 and s.embedding_model is null
                    and s.embedding_retry_at is null
            ) then 0
            else (
                select count(*) from (
                    select 1
                    from scope
                    inner join codesift.code_symbols as s
                        on s.tenant_id = $1 and scope.blob_sha = s.blob_sha
                    where s.embedding_model is null and s.embedding_retry_at is null
                    limit $3 -- noqa: AM09
                ) as q
            )
        end as symbols,
        case
            when not exists (
                select from codesift.blobs as b
                where
                    b.tenant_id = $1 and b.embedding_model is null
                    and b.embedding_retry_at is null
            ) then 0
            else (
                select count(*) from (
                    select 1
                    from scope
                    inner join codesift.blobs as b on b.tenant_id = $1 and scope.blob_sha = b.sha
                    where b.embedding_model is null and b.embedding_retry_at is null
                    limit $3 -- noqa: AM09
                ) as q
            )
        end as files
)

-- the scope's counts are subqueries evaluated only when their branch is taken
select
    p.symbols,
    p.files,
    case
        when p.symbols + p.files > 0 and greatest(p.symbols, p.files) < $3 then (
            select count(*) from (
                select 1
                from scope
                inner join codesift.code_symbols as s
                    on s.tenant_id = $1 and scope.blob_sha = s.blob_sha
                limit $4 -- noqa: AM09
            ) as q
        )
    end as scope_symbols,
    case
        when p.symbols + p.files > 0 and greatest(p.symbols, p.files) < $3 then (
            select count(*) from (
                select 1 from scope
                limit $4 -- noqa: AM09
            ) as q
        )
    end as scope_files
from pending as p
