-- Live definitions (functions, methods, classes, types; not blocks of code or sections of
-- documents) in repositories $1 (tenant $3) whose name is one of $2 (lowercase): the
-- candidates for what a question names (pipeline/mentions.py keeps the names that fit
-- few definitions) and for what the best candidates call (pipeline/callees.py). A large
-- class's later parts (with a parent) are not definitions. At most 100 a name, so that a
-- common name cannot crowd a rare one out. Live files are read from codesift.files itself:
-- a blob's language is not needed here.
select
    d.symbol_id,
    d.repository_id,
    d.path,
    d.name,
    d.qualified_name,
    d.kind
from (
    select
        s.id as symbol_id,
        f.repository_id,
        f.path,
        s.name_key as name,
        lower(s.qualified_name) as qualified_name,
        s.kind,
        row_number() over (
            partition by s.name_key order by f.path asc, s.start_line asc
        ) as nth
    from codesift.code_symbols as s
    inner join codesift.files as f
        on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
    where
        f.live
        and s.tenant_id = $3
        and s.name_key = any($2)
        and f.repository_id = any($1)
        and s.kind in ('function', 'method', 'class', 'type', 'interface')
        and not (s.parent is not null and s.kind = 'class')
) as d
where d.nth <= 100
order by d.path asc, d.symbol_id asc
