-- Vectors belong to the text that was embedded, not to a symbol row: the key is a
-- hash of the model name and the exact embedding text (codesift_db/embedtext.py), per
-- tenant. A symbol or file whose text is unchanged in a new blob, another branch or
-- another repository of the tenant takes its vector from here instead of the model.
-- Symbol and blob rows keep a copy of their vector, so the HNSW indexes and the dense
-- legs' filters stay on the rows they rank.
do $$
declare
    dim integer := (select value::integer from codesift.settings where key = 'embedding_dim');
begin
    execute format(
        'create table codesift.embeddings ('
        '    tenant_id bigint not null references codesift.tenants (id) on delete cascade,'
        '    key text not null check (key ~ ''^[0-9a-f]{64}$''),'
        '    model text not null,'
        '    embedding vector(%s) not null,'
        '    created_at timestamptz not null default now(),'
        '    primary key (tenant_id, key)'
        ')',
        dim
    );
end
$$;

alter table codesift.code_symbols add column embedding_key text;
alter table codesift.blobs add column embedding_key text;

-- The embedding queue: rows never embedded, found without reading the embedded ones.
create index code_symbols_unembedded on codesift.code_symbols (tenant_id, id)
where embedding_model is null;
create index blobs_unembedded on codesift.blobs (tenant_id, sha)
where embedding_model is null;
-- garbage collection asks which keys are still used
create index code_symbols_embedding_key on codesift.code_symbols (tenant_id, embedding_key);
create index blobs_embedding_key on codesift.blobs (tenant_id, embedding_key);

-- Vectors computed before this migration become reusable: their keys are computed from
-- the same embedding text the loader embedded.
do $$
from codesift_db.embedtext import embedding_key, file_text, symbol_text

symbols = plpy.cursor(
    "select s.tenant_id, s.id, s.embedding_model, b.path_hint, s.kind, s.qualified_name,"
    " s.signature, s.body, s.doc from codesift.code_symbols s"
    " join codesift.blobs b on b.tenant_id = s.tenant_id and b.sha = s.blob_sha"
    " where s.embedding is not null and s.embedding_model is not null"
)
set_symbol = plpy.prepare(
    "update codesift.code_symbols set embedding_key = $3 where tenant_id = $1 and id = $2",
    ["bigint", "bigint", "text"],
)
for r in symbols:
    text = symbol_text(
        r["path_hint"], r["kind"], r["qualified_name"], r["signature"], r["body"], r["doc"]
    )
    plpy.execute(set_symbol, [r["tenant_id"], r["id"], embedding_key(r["embedding_model"], text)])

blobs = plpy.cursor(
    "select tenant_id, sha, embedding_model, path_hint, content from codesift.blobs"
    " where embedding is not null and embedding_model is not null"
)
set_blob = plpy.prepare(
    "update codesift.blobs set embedding_key = $3 where tenant_id = $1 and sha = $2",
    ["bigint", "text", "text"],
)
for r in blobs:
    key = embedding_key(r["embedding_model"], file_text(r["path_hint"], r["content"]))
    plpy.execute(set_blob, [r["tenant_id"], r["sha"], key])
$$ language plpython3u;

insert into codesift.embeddings (tenant_id, key, model, embedding)
select distinct on (tenant_id, embedding_key)
    tenant_id,
    embedding_key,
    embedding_model,
    embedding
from codesift.code_symbols
where embedding_key is not null
union all
select distinct on (tenant_id, embedding_key)
    tenant_id,
    embedding_key,
    embedding_model,
    embedding
from codesift.blobs
where embedding_key is not null
on conflict do nothing;
