-- Lines $3[i]..$4[i] of blob $2[i] of tenant $1, as one text per i (diff_context.py: the
-- text of each item it packs); each blob is split into lines once.
with wanted as (
    select
        w.sha,
        w.a,
        w.b,
        w.i
    from unnest($2::text[], $3::int[], $4::int[]) with ordinality as w (sha, a, b, i)
),

split as materialized (
    select
        b.sha,
        string_to_array(b.content, E'\n') as lines
    from codesift.blobs as b
    where b.tenant_id = $1 and b.sha in (select wanted.sha from wanted)
)

select
    wanted.i::integer as i,
    array_to_string(split.lines[wanted.a:wanted.b], E'\n') as text
from wanted
inner join split on wanted.sha = split.sha
