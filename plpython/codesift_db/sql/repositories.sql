-- The repositories in scope (pipeline/scope.py): of tenant $1 (every tenant's when null:
-- an owner session without a tenant), the one named $2 or all, by name.
select
    id,
    tenant_id,
    name,
    indexed_commit,
    head_commit
from codesift.repositories
where
    ($1::bigint is null or tenant_id = $1)
    and ($2::text is null or name = $2)
order by name
