-- The live Python files of repository ref $2 of tenant $1 under the folder pattern $3
-- (a LIKE pattern) or at path $4 whose text holds $5, at most $6, by path
-- (reference_fixtures.py: the modules a pytest fixture may be passed to).
select
    f.path,
    f.blob_sha,
    b.content
from codesift.files as f
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
where
    f.tenant_id = $1
    and b.tenant_id = $1
    and f.repository_id = $2
    and f.live
    and (f.path like $3 or f.path = $4)
    and f.path like '%.py'
    and strpos(b.content, $5) > 0
order by f.path
limit $6
