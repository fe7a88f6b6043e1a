-- The definitions a call from the best candidates may mean (pipeline/callees.py), names $2
-- (lowercase): the functions and methods of the callers' own files (blob $3[i], live at
-- repository $4[i], path $5[i]), and for the names called bare ($6) the top-level functions
-- live in repositories $1 (tenant $7), at most $8 a name (callees.BARE_READ). Only these
-- can resolve a call, so a common method name (`get`) is not looked up across the whole scope.
select
    s.symbol_id,
    k.repository_id,
    k.path,
    s.name,
    s.qualified_name,
    s.kind
from unnest($3::text[], $4::bigint[], $5::text[]) as k (blob_sha, repository_id, path)
cross join
    lateral ( -- noqa: ST05
        select
            x.id as symbol_id,
            x.name_key as name,
            lower(x.qualified_name) as qualified_name,
            x.kind
        from codesift.code_symbols as x
        where
            x.tenant_id = $7
            and x.blob_sha = k.blob_sha
            and x.name_key = any($2)
            and x.kind in ('function', 'method')
        -- read by the file (a few hundred rows), never by the names: a name is defined in
        -- every version of every file of the tenant
        offset 0 -- noqa: AM09
    ) as s
-- a file with two callers is listed twice: union keeps each row once
union
select
    d.symbol_id,
    d.repository_id,
    d.path,
    d.name,
    d.qualified_name,
    d.kind
from unnest($6::text[]) as n (name)
cross join
    lateral ( -- noqa: ST05
        select
            s.id as symbol_id,
            f.repository_id,
            f.path,
            s.name_key as name,
            lower(s.qualified_name) as qualified_name,
            s.kind
        from codesift.code_symbols as s
        inner join codesift.files as f
            on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        where
            f.live
            and s.tenant_id = $7
            -- `= any`, not `=`: an equality with n.name would join the two below in one
            -- equivalence class, after which the planner cannot prove the predicate of
            -- code_symbols_function_name (029) and reads every definition of the name
            and s.name_key = any(array[n.name])
            and f.repository_id = any($1)
            and s.kind = 'function'
            and lower(s.qualified_name) = s.name_key
        -- any $8: a name defined this often is ambiguous whichever they are
        limit $8 -- noqa: AM09
    ) as d
order by path asc, symbol_id asc
