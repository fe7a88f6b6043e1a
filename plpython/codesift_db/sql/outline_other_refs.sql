-- The other indexed refs (not repositories $4) of tenant $1's repositories named $2 where
-- one of paths $3 is a live file (navigation.py: the hint for a file unknown at a ref).
select distinct
    r.name,
    r.ref,
    r.is_default
from codesift.files as f
inner join codesift.repositories as r on f.tenant_id = r.tenant_id and f.repository_id = r.id
where
    f.tenant_id = $1
    and r.name = any($2)
    and f.path = any($3)
    and f.live
    and r.id != all($4)
order by r.is_default desc, r.name asc, r.ref asc
limit 5
