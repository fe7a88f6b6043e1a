-- The content of tenant $1's blobs $2 of at most $3 characters, and the size of each
-- (diff_context.py: the lines a change touches, compared between two blobs).
select
    b.sha,
    b.size,
    case when length(b.content) <= $3 then b.content end as content
from codesift.blobs as b
where b.tenant_id = $1 and b.sha = any($2::text[])
