-- Definitions whose lowercase name is one of $2 in the live files of the repository refs
-- $3 of tenant $1 (references.py: the definitions whose uses are looked up, and those a
-- callee's name may name), in the files $4 when not null; at most $5 rows. Markdown
-- sections and fallback blocks name no code.
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
from codesift.code_symbols as s
inner join codesift.files as f on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
inner join codesift.repositories as r on f.tenant_id = r.tenant_id and f.repository_id = r.id
where
    s.tenant_id = $1
    and s.name_key = any($2::text[])
    and f.tenant_id = $1
    and f.repository_id = any($3::bigint[])
    and f.live
    and ($4::text[] is null or f.path = any($4::text[]))
    and s.kind not in ('section', 'block')
order by r.name, f.path, s.start_line, s.part
limit $5
