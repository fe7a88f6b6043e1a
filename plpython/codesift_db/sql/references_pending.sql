-- Whether a live file of the repository refs $2 of tenant $1 holds a blob stored before
-- references existed (references.py: the NOTICE that says to run backfill_references).
select exists(
    select
    from codesift.blobs as b
    where
        b.tenant_id = $1
        and not b.references_extracted
        and exists (
            select
            from codesift.files as f
            where
                f.tenant_id = $1
                and f.blob_sha = b.sha
                and f.repository_id = any($2::bigint[])
                and f.live
        )
) as pending
