-- The dense leg over symbols, sorted exactly (dense.py: a tenant holding a small share of
-- the table): the k nearest live symbols of tenant $2 by embedding $1 of model $3, in
-- repositories $4, passing the filters ('only with X' as in dense_symbols.sql; k is
-- written in). The symbols are read blob by blob from the live files in scope, so that
-- only the scope's rows are sorted whatever the plan estimates of the tenant's share (a
-- cached generic plan, or a tenant indexed a moment ago, read the whole table).
select
    d.id as symbol_id,
    d.distance
from (
    select
        s.id,
        (s.embedding <=> $1)::double precision as distance
    from (
        select distinct f.blob_sha from codesift.files as f
        where
            f.tenant_id = $2 and f.live
            and f.repository_id = any($4)
            and starts_with(f.path, $5)  -- only with path_prefix
            and exists (  -- only with language
                select from codesift.blobs as b  -- only with language
                where b.tenant_id = $2 and b.sha = f.blob_sha and b.language = $6  -- only with language
            )  -- only with language
    ) as v
    cross join
        lateral (
            select
                s.id,
                s.embedding
            from codesift.code_symbols as s
            where
                s.tenant_id = $2 and s.blob_sha = v.blob_sha and s.embedding_model = $3
                and s.kind = any($7)  -- only with kinds
            -- the offset keeps the lookup a subquery, not a join to plan
            offset 0 -- noqa: AM09
        ) as s
    order by distance
    limit {{ k }}
) as d
order by d.distance asc, d.id asc
