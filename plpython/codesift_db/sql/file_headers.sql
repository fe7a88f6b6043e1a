-- The header of each large file (repository $1[i], path $2[i]) of tenant $3: its lines
-- before its first top-level definition (a module's docstring, imports and constants),
-- for pipeline/standins.py. Files whose first definition starts on line 1 have none.
select
    f.repository_id,
    f.path,
    f.blob_sha,
    h.first_line - 1 as end_line,
    array_to_string((string_to_array(b.content, E'\n'))[1:h.first_line - 1], E'\n') as body
from unnest($1::bigint[], $2::text[]) as k (repository_id, path)
inner join codesift.files as f
    on
        f.tenant_id = $3 and k.repository_id = f.repository_id
        and k.path = f.path and f.live
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
cross join
    lateral (
        select min(s.start_line) as first_line
        from codesift.code_symbols as s
        where s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha and s.parent is null
    ) as h
where h.first_line > 1 and b.content is not null
