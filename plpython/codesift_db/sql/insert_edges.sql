-- Repository $1's edges, tenant $7 (extraction.py resolve_repository_edges): one array per
-- column; $5: each edge's names as a JSON array; $8: each edge's weight. RETURNING makes
-- Citus insert through INSERT statements on the shards, not COPY, which row-level security
-- refuses.
insert into codesift.file_edges (
    tenant_id, repository_id, source_path, target_path, relation, names, line, weight
)
select
    r.tenant_id,
    r.id,
    e.source_path,
    e.target_path,
    e.relation,
    coalesce(array(select jsonb_array_elements_text(e.names::jsonb)), '{}') as names,
    e.line,
    e.weight
from codesift.repositories as r,
    unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $8::real[])
        as e (source_path, target_path, relation, names, line, weight)
where r.tenant_id = $7 and r.id = $1
returning id
