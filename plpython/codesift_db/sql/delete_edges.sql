-- Repository $1's edges, tenant $2, before resolve_repository_edges recomputes them
-- (extraction.py): those from paths $3 unless $3 is null. Co-change edges are the loader's,
-- from git history, and stay.
delete from codesift.file_edges
where
    tenant_id = $2 and repository_id = $1 and relation <> 'co_change'
    and ($3::text[] is null or source_path = any($3))
