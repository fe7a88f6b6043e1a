-- The blobs inserted by the statement (extraction.py on_blobs_inserted): its transition
-- table, each row with its own tenant.
select
    tenant_id,
    sha,
    language,
    content,
    path_hint
from new_blobs
