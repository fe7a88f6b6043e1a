-- Whether a tenant holds any vector of a model, read by an index probe: a tenant indexed
-- without vectors (or whose backlog is too large to count) skips embedding the question and
-- the dense legs, which would otherwise walk the HNSW index for rows it does not hold
-- (plpython/codesift_db/pipeline/degraded.py, sql/tenant_vectors.sql).
create index code_symbols_vector_models on codesift.code_symbols (tenant_id, embedding_model)
where embedding_model is not null;

create index blobs_vector_models on codesift.blobs (tenant_id, embedding_model)
where embedding_model is not null;
