-- The tenant of repository $1, as this session sees it (extraction.py
-- resolve_repository_edges): no row for another tenant's repository under row-level security.
select tenant_id from codesift.repositories
where id = $1
