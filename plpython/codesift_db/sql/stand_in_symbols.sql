-- Stand-ins a large file's candidate symbols cannot supply (pipeline/standins.py): symbols
-- of the files (repository $1[i], path $2[i]) of tenant $8 that are not candidates ($5),
-- may stand in ($4 tokens, the rule of hydrate_symbols.sql) and hold at least two query
-- terms ($6: a tsquery of every pair of terms, matched against the symbol's lexemes, which
-- are its BM25 terms); each file's best $7 by how many query terms ($3) they hold, the
-- first in the file on ties. Only the chosen ones' text is read. $6 is bound as a tsquery:
-- as `$6::tsquery` over a text parameter, the cached generic plan parsed the query again
-- for every symbol, costing more than the rest of the statement.
select
    r.repository_id,
    r.path,
    sym.id,
    sym.qualified_name,
    sym.kind,
    sym.start_line,
    sym.end_line,
    sym.body,
    sym.blob_sha,
    r.overlap
from (
    select
        f.repository_id,
        f.path,
        s.id,
        o.overlap,
        row_number() over (
            partition by f.repository_id, f.path order by o.overlap desc, s.start_line asc
        ) as nth
    from unnest($1::bigint[], $2::text[]) as k (repository_id, path)
    inner join codesift.files as f
        on
            f.tenant_id = $8 and k.repository_id = f.repository_id
            and k.path = f.path and f.live
    inner join codesift.code_symbols as s
        on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha
    -- lexemes that are query terms: ts_delete drops them (8x faster than unnesting)
    cross join
        lateral (
            select length(s.lexemes) - length(ts_delete(s.lexemes, $3::text[])) as overlap
        ) as o
    where
        (s.token_count <= $4 and not (s.parent is not null and s.kind in ('class', 'section')))
        and not s.id = any($5)
        and s.lexemes @@ $6
) as r
-- the chosen ones drive the read of their text, whatever the statistics say: a tenant
-- indexed a moment ago has none, and a plain join read its every symbol per choice
cross join
    lateral (
        select
            s.id,
            s.qualified_name,
            s.kind,
            s.start_line,
            s.end_line,
            s.body,
            s.blob_sha
        from codesift.code_symbols as s
        where s.tenant_id = $8 and s.id = r.id
        -- one id: the limit keeps the subquery from becoming a join
        limit 1 -- noqa: AM09
    ) as sym
where r.nth <= $7
order by r.path asc, r.nth asc
