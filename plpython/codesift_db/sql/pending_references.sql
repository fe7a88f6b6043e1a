-- Blobs of tenant $1 stored before references existed (extraction.py backfill_references),
-- at most $2, claimed: a concurrent call skips them.
select
    b.sha,
    b.language,
    b.path_hint,
    b.content
from codesift.blobs as b
where b.tenant_id = $1 and not b.references_extracted
order by b.sha
limit $2
for update skip locked
