-- Candidate symbols $1 live in repositories $2 of tenant $4, with their file (the first
-- path holding the blob) and text (pipeline/hydrate.py). last_changed comes as seconds
-- since the epoch: the recency decay needs only differences.
-- stand_in: a symbol that may stand in for its oversized file, small enough ($3 tokens, the
-- largest text packed whole) and not a container of other symbols (a nested class or a
-- section); the same rule as in stand_in_symbols.sql.
select distinct on (s.id)
    s.id,
    s.blob_sha,
    s.qualified_name,
    s.kind,
    s.start_line,
    s.end_line,
    s.body,
    coalesce(
        (s.token_count <= $3 and not (s.parent is not null and s.kind in ('class', 'section'))),
        false
    ) as stand_in,
    f.path,
    f.repository_id,
    extract(epoch from f.last_changed)::float8 as last_changed
from codesift.code_symbols as s
inner join codesift.files as f
    on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha and f.live
where s.tenant_id = $4 and s.id = any($1) and f.repository_id = any($2)
order by s.id asc, f.path asc
