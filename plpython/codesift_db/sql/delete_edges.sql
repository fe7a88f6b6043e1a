-- Repository $1's edges, tenant $2, before resolve_repository_edges recomputes them
-- (extraction.py); co-change edges are the loader's, from git history, and stay.
delete from codesift.code_symbol_edges
where tenant_id = $2 and repository_id = $1 and relation <> 'co_change'
