-- The embedding backlog in scope (pipeline/degraded.py): of tenant $1, the symbols and
-- files live in repositories $2 that wait for their first vector (the queue's partial
-- indexes code_symbols_unembedded and blobs_unembedded), each counted to at most $3.
select
    (
        select count(*) from (
            select 1
            from codesift.code_symbols as s
            where
                s.tenant_id = $1
                and s.embedding_model is null and s.embedding_retry_at is null
                and exists (
                    select 1 from codesift.files as f
                    where
                        f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha
                        and f.live and f.repository_id = any($2)
                )
            order by s.id
            limit $3
        ) as q
    ) as symbols,
    (
        select count(*) from (
            select 1
            from codesift.blobs as b
            where
                b.tenant_id = $1
                and b.embedding_model is null and b.embedding_retry_at is null
                and exists (
                    select 1 from codesift.files as f
                    where
                        f.tenant_id = b.tenant_id and f.blob_sha = b.sha
                        and f.live and f.repository_id = any($2)
                )
            order by b.sha
            limit $3
        ) as q
    ) as files
