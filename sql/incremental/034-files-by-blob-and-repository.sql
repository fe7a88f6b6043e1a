-- The files holding a blob, repository by repository and in path order: whether a blob live
-- in a question's scope has an earlier path there (the embedding backlog counts the same
-- content once: plpython/codesift_db/sql/embedding_backlog.sql) is one probe of this index.
-- By (tenant_id, blob_sha) alone the probe read the blob's row in every ref of the tenant:
-- a history of 30 refs made it 50-140 buffers a blob. It replaces files_blob, whose key is
-- its prefix (the foreign key to blobs and the lookups by blob use it the same way).
create index files_blob_repository on codesift.files (tenant_id, blob_sha, repository_id, path);

drop index codesift.files_blob;
