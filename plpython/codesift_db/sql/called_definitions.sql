-- Live functions and methods in repositories $1 (tenant $3) whose name is one of $2
-- (lowercase): what the calls of the best candidates may mean (pipeline/callees.py keeps a
-- definition in the caller's file, else a name with few definitions). A function nested in
-- another is local to it, not what a call elsewhere reaches. At most 100 a name, so that a
-- common name cannot crowd a rare one out.
select
    d.symbol_id,
    d.repository_id,
    d.path,
    d.name,
    d.kind
from (
    select
        s.id as symbol_id,
        v.repository_id,
        v.path,
        lower(s.name) as name,
        s.kind,
        row_number() over (
            partition by lower(s.name) order by v.path asc, s.start_line asc
        ) as nth
    from codesift.code_symbols as s
    inner join codesift.live_files as v
        on s.tenant_id = v.tenant_id and s.blob_sha = v.blob_sha
    where
        s.tenant_id = $3
        and lower(s.name) = any($2)
        and v.repository_id = any($1)
        and (s.kind = 'method' or (s.kind = 'function' and s.qualified_name = s.name))
) as d
where d.nth <= 100
order by d.path asc, d.symbol_id asc
