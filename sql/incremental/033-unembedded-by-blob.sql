-- The embedding backlog of a question's scope (plpython/codesift_db/sql/embedding_backlog.sql)
-- is found by probing each blob live in scope for its symbols that wait for a vector: this
-- index holds only those, keyed by blob, so that a scope with none of the tenant's backlog
-- costs an empty probe per blob instead of reading every symbol of the blob.
-- code_symbols_unembedded stays: the queue claims by id.
create index code_symbols_unembedded_blob on codesift.code_symbols (tenant_id, blob_sha)
where embedding_model is null and embedding_retry_at is null;
