-- The dense leg over symbols (dense.py): the k nearest live symbols of tenant $2 by
-- embedding $1 of model $3, in repositories $4, passing the filters. A line commented
-- 'only with X' is kept only when filter X is given ($5 path prefix, $6 language, $7
-- kinds; every parameter is declared either way); k is written in. The HNSW index serves
-- the inner order; dense_symbols_exact.sql sorts a small tenant's rows instead.
select
    d.id as symbol_id,
    d.distance
from (
    select
        s.id,
        (s.embedding <=> $1)::double precision as distance
    from codesift.code_symbols as s
    where
        s.tenant_id = $2 and s.embedding_model = $3
        and s.kind = any($7)  -- only with kinds
        and exists (
            select 1 from codesift.live_files as v
            where
                v.tenant_id = s.tenant_id and v.blob_sha = s.blob_sha
                and v.repository_id = any($4)
                and starts_with(v.path, $5)  -- only with path_prefix
                and v.language = $6  -- only with language
            -- a walk over a whole tenant: one probe per row it reaches; as a semi-join
            -- the generic plan may read every live file first and sort their rows instead
            -- noqa: disable=AM09
            offset 0  -- only with tenant_walk
            -- noqa: enable=AM09
        )
    order by s.embedding <=> $1
    limit {{ k }}
) as d
order by d.distance asc, d.id asc
