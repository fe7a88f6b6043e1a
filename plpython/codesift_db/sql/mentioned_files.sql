-- Live files of repositories $1 (tenant $4) named $2 (file names) or, without their
-- extension, $3 (module names), both lowercase: the candidates for the paths and modules
-- a long question mentions (pipeline/mentions.py checks the rest of each path).
select
    f.repository_id,
    f.path
from codesift.files as f
where
    f.tenant_id = $4
    and f.repository_id = any($1)
    and f.live
    and (
        lower(regexp_replace(f.path, '^.*/', '')) = any($2)
        or lower(regexp_replace(f.path, '^.*/|\.[^./]*$', '', 'g')) = any($3)
    )
order by f.path
limit 500
