-- The indexed refs of tenant $1 (every tenant's when null), of the repository named $2 or
-- of all (pipeline/scope.py: the hint of an unknown ref); at most 21, by name.
select distinct ref from codesift.repositories
where
    ($1::bigint is null or tenant_id = $1)
    and ($2::text is null or name = $2)
order by ref
limit 21
