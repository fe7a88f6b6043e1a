-- Whether tenant $1 holds any symbol or file vector of model $2 (pipeline/degraded.py): a
-- probe of each table's partial index of embedded rows, whatever the size of the backlog.
select
    exists (
        select from codesift.code_symbols as s
        where s.tenant_id = $1 and s.embedding_model = $2
    )
    or exists (
        select from codesift.blobs as b
        where b.tenant_id = $1 and b.embedding_model = $2
    ) as found
