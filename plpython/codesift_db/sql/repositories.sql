-- The repository refs in scope (pipeline/scope.py): of tenant $1 (every tenant's when null:
-- an owner session without a tenant), of the repository named $2 or all, at ref $3 or,
-- when $3 is null, at each repository's default ref; by name.
select
    id,
    tenant_id,
    name,
    ref,
    is_default,
    indexed_commit,
    head_commit
from codesift.repositories
where
    ($1::bigint is null or tenant_id = $1)
    and ($2::text is null or name = $2)
    and (ref = $3::text or ($3::text is null and is_default))
order by name
