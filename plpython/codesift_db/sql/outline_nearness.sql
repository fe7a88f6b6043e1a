-- How near each symbol of tenant $1's blobs $2 is to the question's vector $3 (of model $4):
-- the cosine similarity of its own vector, for the order of an outline's lines
-- (pipeline/outlines.py nearness). The first $5 of each blob in file order, as
-- outline_symbols.sql reads them; a symbol without a vector of that model has no row.
with numbered as (
    select
        c.blob_sha,
        c.start_line,
        c.end_line,
        c.embedding,
        c.embedding_model,
        row_number() over (
            partition by c.blob_sha order by c.start_line asc, c.end_line desc, c.part asc
        ) as n
    from codesift.code_symbols as c
    where c.tenant_id = $1 and c.blob_sha = any($2::text[])
)

select
    blob_sha,
    start_line,
    end_line,
    (1 - (embedding <=> $3::vector))::float8 as similarity
from numbered
where n <= $5 and embedding_model = $4 and embedding is not null
