-- Live files of repositories $1 (tenant $4) named $2 (file names) or, without their
-- extension, $3 (module names), both lowercase: the candidates for the paths and modules
-- a question mentions (pipeline/mentions.py checks the rest of each path). Found by their
-- stem, $5 (files.stem_key: the name without its folder and last extension; a file name's
-- stem taken the same way by the caller): a plain array compared with a plain column is
-- leakproof, so the index serves under row-level security, where an array computed here
-- would make it a scan of every live file.
select
    f.repository_id,
    f.path
from codesift.files as f
where
    f.tenant_id = $4
    and f.live
    and f.stem_key = any($5)
    and f.repository_id = any($1)
    and (
        lower(regexp_replace(f.path, '^.*/', '')) = any($2)
        or f.stem_key = any($3)
    )
order by f.path
limit 500
