-- The embedding backlog in scope (pipeline/degraded.py): of tenant $1, the symbols and
-- files live in repositories $2 that wait for their first vector, each counted to at most
-- $3 (in no order: a capped count); and only while both stay under $3 (a backlog small
-- enough to compare), the texts in scope the dense leg could see, each counted to at most
-- $4. A tenant without a backlog costs a probe of the queue's partial indexes
-- (code_symbols_unembedded, blobs_unembedded). Otherwise each table's count walks the
-- smaller side, each counted first to at most $4 (the live files only when a backlog
-- under $4 is compared with them): the tenant's backlog, each row probing for a live path
-- in scope, or the live files in scope (each content once: `scope`), each probing the
-- partial index keyed by blob (code_symbols_unembedded_blob, blobs_unembedded). The files
-- are probed by blob and repository (files_blob_repository), by equality for a scope of
-- one repository: another ref's files holding the same blob are not read. The generic plan
-- PL/Python caches cannot know either size: every probe is a subquery kept apart (a
-- scalar subquery or a lateral one with offset 0), so no plan hashes or sorts a table.
with live as (
    -- the live files in scope, repository by repository
    select
        f.blob_sha,
        f.repository_id,
        f.path
    from unnest($2::bigint[]) as r (id)
    cross join lateral ( -- noqa: ST05
        select
            g.blob_sha,
            g.repository_id,
            g.path
        from codesift.files as g
        where g.tenant_id = $1 and g.repository_id = r.id and g.live
        offset 0 -- noqa: AM09
    ) as f
),

-- the smallest and largest repository id of the scope: the range the probes of
-- files_blob_repository read (a scope of one repository reads only its own rows)
span as materialized (
    select
        min(r.id) as low,
        max(r.id) as high
    from unnest($2::bigint[]) as r (id)
),

backlog as materialized (
    select
        (
            select count(*) from (
                select 1 from codesift.code_symbols as s
                where
                    s.tenant_id = $1 and s.embedding_model is null
                    and s.embedding_retry_at is null
                limit $4 -- noqa: AM09
            ) as q
        ) as symbols,
        (
            select count(*) from (
                select 1 from codesift.blobs as b
                where
                    b.tenant_id = $1 and b.embedding_model is null
                    and b.embedding_retry_at is null
                limit $4 -- noqa: AM09
            ) as q
        ) as files
),

sizes as materialized (
    select
        k.symbols as symbol_backlog,
        k.files as file_backlog,
        -- the scope is listed only for a backlog under the count's bound, the one side it
        -- is compared with: a backlog at the bound walks the scope's files whatever their
        -- number (below), and none is not walked
        case
            when (k.symbols > 0 and k.symbols < $4) or (k.files > 0 and k.files < $4)
                then (
                    select count(*) from (select 1 from live limit $4) as q -- noqa: AM09
                )
            else $4
        end as live_files
    from backlog as k
),

scope as (
    -- each blob once, at its first live path in scope (the same content at two paths
    -- counts once): no earlier path in its repository, nor (a scope of several) the blob
    -- live in a repository of the scope with a smaller id. Read only as far as the capped
    -- counts go, each live file probed once
    select live.blob_sha from live
    where
        (
            select 1 from codesift.files as g
            where
                g.tenant_id = $1 and g.blob_sha = live.blob_sha
                and g.repository_id = live.repository_id and g.path < live.path and g.live
            limit 1 -- noqa: AM09
        ) is null
        and (
            cardinality($2) = 1
            or (
                select 1 from codesift.files as g
                where
                    g.tenant_id = $1 and g.blob_sha = live.blob_sha and g.live
                    and g.repository_id between (select span.low from span) and live.repository_id - 1
                    and g.repository_id = any($2)
                limit 1 -- noqa: AM09
            ) is null
        )
),

pending as materialized (
    select
        case
            when z.symbol_backlog = 0 then 0
            when z.symbol_backlog < z.live_files
                then (
                    select count(*) from (
                        select 1 from codesift.code_symbols as s
                        where
                            s.tenant_id = $1 and s.embedding_model is null
                            and s.embedding_retry_at is null
                            and (
                                select 1 from codesift.files as f
                                where
                                    f.tenant_id = $1 and f.blob_sha = s.blob_sha and f.live
                                    and f.repository_id between (select span.low from span) and (select span.high from span)
                                    and f.repository_id = any($2)
                                limit 1 -- noqa: AM09
                            ) is not null
                        limit $3 -- noqa: AM09
                    ) as q
                )
            else (
                select count(*) from (
                    select 1
                    from scope
                    cross join
                        lateral (
                            select from codesift.code_symbols as s
                            where
                                s.tenant_id = $1 and s.blob_sha = scope.blob_sha
                                and s.embedding_model is null and s.embedding_retry_at is null
                            offset 0 -- noqa: AM09
                        ) as s
                    limit $3 -- noqa: AM09
                ) as q
            )
        end as symbols,
        case
            when z.file_backlog = 0 then 0
            when z.file_backlog < z.live_files
                then (
                    select count(*) from (
                        select 1 from codesift.blobs as b
                        where
                            b.tenant_id = $1 and b.embedding_model is null
                            and b.embedding_retry_at is null
                            and (
                                select 1 from codesift.files as f
                                where
                                    f.tenant_id = $1 and f.blob_sha = b.sha and f.live
                                    and f.repository_id between (select span.low from span) and (select span.high from span)
                                    and f.repository_id = any($2)
                                limit 1 -- noqa: AM09
                            ) is not null
                        limit $3 -- noqa: AM09
                    ) as q
                )
            else (
                select count(*) from (
                    select 1
                    from scope
                    cross join
                        lateral (
                            select from codesift.blobs as b
                            where
                                b.tenant_id = $1 and b.sha = scope.blob_sha
                                and b.embedding_model is null and b.embedding_retry_at is null
                            offset 0 -- noqa: AM09
                        ) as b
                    limit $3 -- noqa: AM09
                ) as q
            )
        end as files
    from sizes as z
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
                cross join
                    lateral (
                        select from codesift.code_symbols as s
                        where s.tenant_id = $1 and s.blob_sha = scope.blob_sha
                        offset 0 -- noqa: AM09
                    ) as s
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
