-- A text the embedding endpoint refuses (HTTP 400, 413 or 422: too long for the model,
-- say) is the fault of its row, not of the queue: the row keeps the error, leaves the
-- queue until its retry time, and is given up after a few refusals, so that one bad
-- text no longer stops embedding for every tenant (loader/codesift/embedder.py).
alter table codesift.code_symbols
add column embedding_error text,
add column embedding_attempts integer not null default 0,
add column embedding_retry_at timestamptz;

alter table codesift.blobs
add column embedding_error text,
add column embedding_attempts integer not null default 0,
add column embedding_retry_at timestamptz;

comment on column codesift.code_symbols.embedding_error is
'Why the embedding endpoint last refused this symbol''s text (one line, at most 500 '
'characters); null when it never did or the symbol was embedded since.';
comment on column codesift.code_symbols.embedding_attempts is
'How many times the embedding endpoint refused this symbol''s text (reset when embedded).';
comment on column codesift.code_symbols.embedding_retry_at is
'When the embedding queue may claim this refused symbol again; infinity once it was '
'refused too often; null for a symbol never refused.';
comment on column codesift.blobs.embedding_error is
'Why the embedding endpoint last refused this file''s text (one line, at most 500 '
'characters); null when it never did or the file was embedded since.';
comment on column codesift.blobs.embedding_attempts is
'How many times the embedding endpoint refused this file''s text (reset when embedded).';
comment on column codesift.blobs.embedding_retry_at is
'When the embedding queue may claim this refused file again; infinity once it was '
'refused too often; null for a file never refused.';

-- The queue's index leaves refused rows out, so that claims never read past them; the
-- few refused rows are found by their retry time.
drop index codesift.code_symbols_unembedded;
create index code_symbols_unembedded on codesift.code_symbols (tenant_id, id)
where embedding_model is null and embedding_retry_at is null;
drop index codesift.blobs_unembedded;
create index blobs_unembedded on codesift.blobs (tenant_id, sha)
where embedding_model is null and embedding_retry_at is null;

create index code_symbols_embedding_retry on codesift.code_symbols (tenant_id, embedding_retry_at)
where embedding_retry_at is not null;
create index blobs_embedding_retry on codesift.blobs (tenant_id, embedding_retry_at)
where embedding_retry_at is not null;
