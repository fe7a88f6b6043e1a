-- Okapi BM25 for the lexical leg: postings (term frequencies per document)
-- and term statistics per tenant, maintained as blobs arrive (the extraction
-- trigger fills them in the inserting transaction).

alter table codesift.code_symbols add column term_count integer;
alter table codesift.blobs add column term_count integer;

create table codesift.symbol_terms (
    tenant_id bigint not null,
    symbol_id bigint not null references codesift.code_symbols (id) on delete cascade,
    term text not null,
    tf integer not null
);

create index symbol_terms_term on codesift.symbol_terms (tenant_id, term) include (symbol_id, tf);
create index symbol_terms_symbol on codesift.symbol_terms (symbol_id);

create table codesift.blob_terms (
    tenant_id bigint not null,
    blob_sha text not null,
    term text not null,
    tf integer not null,
    foreign key (tenant_id, blob_sha) references codesift.blobs (tenant_id, sha) on delete cascade
);

create index blob_terms_term on codesift.blob_terms (tenant_id, term) include (blob_sha, tf);
create index blob_terms_blob on codesift.blob_terms (tenant_id, blob_sha);

-- Document frequency per term, and document count and total length, per
-- tenant and tier ('symbol' or 'file').
create table codesift.term_stats (
    tenant_id bigint not null,
    tier text not null,
    term text not null,
    df integer not null,
    primary key (tenant_id, tier, term)
);

create table codesift.corpus_stats (
    tenant_id bigint not null,
    tier text not null,
    docs bigint not null,
    total_terms bigint not null,
    primary key (tenant_id, tier)
);
