-- Store the centrality $4 of the live files $3 of tenant $1's repository $2
-- (navigation.py rank_files); a file whose value did not change is not written.
update codesift.files as f
set centrality = v.centrality
from unnest($3::text[], $4::real[]) as v (path, centrality)
where
    f.tenant_id = $1
    and f.repository_id = $2
    and f.path = v.path
    and f.live
    and f.centrality is distinct from v.centrality
