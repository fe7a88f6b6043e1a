-- Embedding columns with HNSW cosine indexes. The dimension is chosen at
-- install (`codesift migrate --embedding-dim N`, default 384: all-MiniLM-L6-v2),
-- passed in as the session setting codesift.embedding_dim, and recorded in
-- codesift.settings; a column type cannot take a parameter, hence the format().

insert into codesift.settings (key, value)
values
(
    'embedding_dim',
    coalesce(nullif(current_setting('codesift.embedding_dim', true), ''), '384')
),
('embedding_model', 'all-MiniLM-L6-v2');

do $$
declare
    dim integer := (select value::integer from codesift.settings where key = 'embedding_dim');
begin
    if dim < 1 or dim > 2000 then
        raise exception 'embedding dimension % is out of range', dim
            using errcode = '22023', hint = 'HNSW indexes support 1..2000 dimensions';
    end if;
    execute format('alter table codesift.blobs add column embedding vector(%s)', dim);
    execute format('alter table codesift.code_symbols add column embedding vector(%s)', dim);
end
$$;

-- Which model produced each vector: rows whose model is not the active one are
-- the embedding queue, so a model switch re-embeds instead of mixing spaces.
alter table codesift.blobs add column embedding_model text;
alter table codesift.code_symbols add column embedding_model text;

create index blobs_embedding on codesift.blobs
using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64);

create index code_symbols_embedding on codesift.code_symbols
using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64);
