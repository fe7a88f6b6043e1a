-- How near each of tenant $1's symbols $2 is to the question's vector $3 (of model $4): the
-- cosine similarity of its own vector, for the order of an outline's lines
-- (pipeline/outlines.py nearness; $2 are the symbols outline_symbols.sql read). A symbol
-- without a vector of that model has no row.
select
    id,
    (1 - (embedding <=> $3::vector))::float8 as similarity
from codesift.code_symbols
where
    tenant_id = $1 and id = any($2::bigint[])
    and embedding_model = $4 and embedding is not null
