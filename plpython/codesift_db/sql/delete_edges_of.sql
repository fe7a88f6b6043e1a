-- The edges from source paths $3 of repository $1, tenant $2, before they are recomputed
-- (extraction.py resolve_repository_edges with source paths); co-change edges stay.
delete from codesift.code_symbol_edges
where
    tenant_id = $2 and repository_id = $1 and source_path = any($3)
    and relation <> 'co_change'
