-- Candidate files (repository $1[i], path $2[i]) live for tenant $4 (pipeline/hydrate.py).
-- Whole-file text only for files small enough to be packed whole ($3 tokens): a large file
-- is split into its symbols anyway, and reading it would dominate the query's time. Line
-- count and token estimate are stored at extraction.
select
    f.repository_id,
    f.path,
    f.blob_sha,
    extract(epoch from f.last_changed)::float8 as last_changed,
    b.line_count as lines,
    case when b.token_count <= $3 then b.content end as content
from unnest($1::bigint[], $2::text[]) as k (repository_id, path)
inner join codesift.files as f
    on
        f.tenant_id = $4 and k.repository_id = f.repository_id
        and k.path = f.path and f.live
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
