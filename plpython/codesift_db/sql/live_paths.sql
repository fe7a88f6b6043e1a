-- The live paths of repository $1, tenant $2 (extraction.py resolve_repository_edges).
select path from codesift.files
where tenant_id = $2 and repository_id = $1 and live
