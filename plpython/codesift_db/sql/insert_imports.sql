-- The import statements of the blobs just inserted (extraction.py on_blobs_inserted), one
-- array per column; $1: each row's tenant; $4: each statement's names as a JSON array.
insert into codesift.blob_imports (tenant_id, blob_sha, module, names, relation, line)
select
    i.tenant_id,
    i.blob_sha,
    i.module,
    coalesce(array(select jsonb_array_elements_text(i.names::jsonb)), '{}') as names,
    i.relation,
    i.line
from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[])
    as i (tenant_id, blob_sha, module, names, relation, line)
