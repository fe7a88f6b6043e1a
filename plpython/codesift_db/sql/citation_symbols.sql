-- The definitions holding line $4 of the live files $3 of the repository refs $2 of tenant
-- $1 (references.py: a symbol given as a citation, 'repo:path:line').
select
    f.repository_id,
    r.name as repository,
    f.path,
    s.blob_sha,
    s.name,
    s.qualified_name,
    s.kind,
    s.parent,
    s.start_line,
    s.end_line,
    s.part,
    s.name_line
from codesift.files as f
inner join codesift.repositories as r on f.tenant_id = r.tenant_id and f.repository_id = r.id
inner join codesift.code_symbols as s on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha
where
    f.tenant_id = $1
    and f.repository_id = any($2::bigint[])
    and f.path = any($3::text[])
    and f.live
    and s.tenant_id = $1
    and s.start_line <= $4
    and s.end_line >= $4
    and s.kind not in ('section', 'block')
order by r.name, f.path, s.start_line, s.part
limit 1000
