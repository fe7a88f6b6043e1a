-- The references of the blobs just inserted (extraction.py on_blobs_inserted) or
-- backfilled (backfill_references), one array per column; $1: each row's tenant.
insert into codesift.code_references (
    tenant_id, blob_sha, name, line, symbol, is_call, qualifier, import_line
)
select
    r.tenant_id,
    r.blob_sha,
    r.name,
    r.line,
    r.symbol,
    r.is_call,
    r.qualifier,
    r.import_line
from unnest(
    $1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::boolean[], $7::text[],
    $8::int[]
) as r (tenant_id, blob_sha, name, line, symbol, is_call, qualifier, import_line)
