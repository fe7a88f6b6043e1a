-- The uses of the names $2 (code_references) in the live files of the repository refs $3
-- of tenant $1, calls only when $4; at most $5 rows, in no order (impact.py: the callers of
-- one hop's definitions, read at once).
select
    f.repository_id,
    r.name as repository,
    f.path,
    c.blob_sha,
    c.name,
    c.line,
    c.symbol,
    c.is_call,
    c.qualifier,
    c.import_line
from codesift.code_references as c
inner join codesift.files as f on c.tenant_id = f.tenant_id and c.blob_sha = f.blob_sha
inner join codesift.repositories as r on f.tenant_id = r.tenant_id and f.repository_id = r.id
where
    c.tenant_id = $1
    and c.name = any($2::text[])
    and f.tenant_id = $1
    and f.repository_id = any($3::bigint[])
    and f.live
    and (not $4::boolean or c.is_call)
-- a bound, not a page: the caller sorts what it read
limit $5 -- noqa: AM09
