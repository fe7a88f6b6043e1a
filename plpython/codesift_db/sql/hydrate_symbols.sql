-- Candidate symbols $1 live in repositories $2 of tenant $4, with their file (the first
-- path holding the blob) and text (pipeline/hydrate.py). last_changed comes as seconds
-- since the epoch: the recency decay needs only differences.
-- stand_in: a symbol that may stand in for its oversized file, small enough ($3 tokens, the
-- largest text packed whole) and not a container of other symbols (a nested class or a
-- section); the same rule as in stand_in_symbols.sql.
-- Each candidate is read by its id, then its blob's first live path: a plain join let the
-- plan read every symbol of a small repository's live files instead.
select
    s.id,
    s.blob_sha,
    s.qualified_name,
    s.kind,
    s.start_line,
    s.end_line,
    s.body,
    coalesce(
        (s.token_count <= $3 and not (s.parent is not null and s.kind in ('class', 'section'))),
        false
    ) as stand_in,
    f.path,
    f.repository_id,
    extract(epoch from f.last_changed)::float8 as last_changed
from (select distinct u.id from unnest($1::bigint[]) as u (id)) as c
inner join codesift.code_symbols as s on c.id = s.id and s.tenant_id = $4
cross join
    lateral (
        select
            g.path,
            g.repository_id,
            g.last_changed
        from codesift.files as g
        where
            g.tenant_id = $4
            and g.blob_sha = s.blob_sha
            and g.live
            and g.repository_id = any($2)
            -- the range of ids the scope spans keys the index (one repository: an
            -- equality), so that the tenant's other refs holding the blob are not read
            and g.repository_id between (select min(x.id) from unnest($2::bigint[]) as x (id))
            and (select max(x.id) from unnest($2::bigint[]) as x (id))
        order by g.path asc
        limit 1
    ) as f
order by s.id asc
