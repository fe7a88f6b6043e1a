-- Blobs $2 of tenant $1 have their references now (extraction.py backfill_references).
update codesift.blobs set references_extracted = true
where tenant_id = $1 and sha = any($2)
