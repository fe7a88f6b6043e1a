-- The language of blobs $2 of tenant $1 (the `language` column of pack_context and
-- explain_context rows, pipeline/run.py): what the loader detected from the path it
-- first pushed the blob at; null for a file of no known language.
select
    b.sha,
    b.language
from codesift.blobs as b
where b.tenant_id = $1 and b.sha = any($2)
