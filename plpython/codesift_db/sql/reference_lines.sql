-- Line $3[i] of blob $2[i] of tenant $1, at most $4 characters (references.py: the text of
-- each use); each blob is split into lines once.
with wanted as (
    select
        w.sha,
        array_agg(w.line) as lines
    from unnest($2::text[], $3::int[]) as w (sha, line)
    group by w.sha
)

select
    wanted.sha,
    u.line,
    left(rtrim(a.lines[u.line], E'\r'), $4) as text
from wanted
inner join codesift.blobs as b on b.tenant_id = $1 and wanted.sha = b.sha
cross join lateral string_to_array(b.content, E'\n') as a (lines)
cross join lateral unnest(wanted.lines) as u (line)
