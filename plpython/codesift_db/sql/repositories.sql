-- The repository refs in scope (pipeline/scope.py): of tenant $1 (every tenant's when null:
-- an owner session without a tenant), of the repository named $2 or all, at ref $3 or,
-- when $3 is null, at each repository's default ref; by name; whether each has a learned
-- ranker model (pipeline/rerank.py). A join on the tenant key, not a subquery: Citus
-- routes it to the tenant's worker alone.
select
    r.id,
    r.tenant_id,
    r.name,
    r.ref,
    r.is_default,
    r.indexed_commit,
    r.head_commit,
    m.repository_id is not null as has_ranker
from codesift.repositories as r
left join codesift.ranker_models as m
    on r.tenant_id = m.tenant_id and r.id = m.repository_id
where
    ($1::bigint is null or r.tenant_id = $1)
    and ($2::text is null or r.name = $2)
    and (r.ref = $3::text or ($3::text is null and r.is_default))
order by r.name
