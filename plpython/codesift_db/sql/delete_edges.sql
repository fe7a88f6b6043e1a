-- Repository $1's import edges, tenant $2, before they are recomputed (extraction.py
-- resolve_repository_edges).
delete from codesift.code_symbol_edges
where tenant_id = $2 and repository_id = $1
