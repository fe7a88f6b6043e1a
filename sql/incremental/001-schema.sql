-- The tenant-isolated data model (DESIGN.md): content (blobs) is separate from
-- location (files), so identical content is stored, chunked and embedded once
-- per tenant and a rename or branch switch only re-labels.

create extension if not exists vector;
create extension if not exists plpython3u;

create schema if not exists codesift;

-- Install-time choices (embedding dimension, active model), one row each.
create table codesift.settings (
    key text primary key,
    value text not null
);

create table codesift.tenants (
    id bigint generated always as identity primary key,
    name text not null unique check (name <> ''),
    created_at timestamptz not null default now()
);

create table codesift.repositories (
    id bigint generated always as identity primary key,
    tenant_id bigint not null references codesift.tenants (id) on delete cascade,
    name text not null check (name <> ''),
    origin text,
    indexed_commit text,
    indexed_at timestamptz,
    -- the HEAD the loader last saw; ahead of indexed_commit means stale
    head_commit text,
    head_seen_at timestamptz,
    unique (tenant_id, name)
);

-- One row per git blob SHA-1 per tenant: never a global SHA key, so two
-- tenants with the same file neither collide nor leak into each other.
create table codesift.blobs (
    tenant_id bigint not null references codesift.tenants (id) on delete cascade,
    sha text not null check (sha ~ '^[0-9a-f]{40}$'),
    size integer not null check (size >= 0),
    language text,
    content text not null,
    lexemes tsvector,
    created_at timestamptz not null default now(),
    primary key (tenant_id, sha)
);

-- The tree of a repository at its indexed commit: path -> blob.
create table codesift.files (
    repository_id bigint not null references codesift.repositories (id) on delete cascade,
    tenant_id bigint not null references codesift.tenants (id) on delete cascade,
    path text not null check (path <> ''),
    blob_sha text not null,
    live boolean not null default true,
    -- when the path last changed in git history (the recency signal)
    last_changed timestamptz,
    lexemes tsvector,
    primary key (repository_id, path),
    foreign key (tenant_id, blob_sha) references codesift.blobs (tenant_id, sha)
);

create index files_blob on codesift.files (tenant_id, blob_sha);
create index files_live_path on codesift.files (repository_id, path) where live;
create index files_lexemes on codesift.files using gin (lexemes);

-- Symbols are extracted from a blob's content, so they belong to the blob.
create table codesift.code_symbols (
    id bigint generated always as identity primary key,
    tenant_id bigint not null,
    blob_sha text not null,
    name text not null,
    qualified_name text not null,
    kind text not null,
    start_line integer not null check (start_line >= 1),
    end_line integer not null,
    signature text,
    body text not null,
    parent text,
    part integer not null default 0,
    lexemes tsvector,
    check (end_line >= start_line),
    foreign key (tenant_id, blob_sha) references codesift.blobs (tenant_id, sha) on delete cascade
);

create index code_symbols_blob on codesift.code_symbols (tenant_id, blob_sha);
create index code_symbols_lexemes on codesift.code_symbols using gin (lexemes);
create index code_symbols_name on codesift.code_symbols (tenant_id, lower(name));

-- Import statements as written in a blob; resolved per repository into edges.
create table codesift.blob_imports (
    tenant_id bigint not null,
    blob_sha text not null,
    module text not null,
    names text[] not null default '{}',
    relation text not null,
    line integer not null,
    foreign key (tenant_id, blob_sha) references codesift.blobs (tenant_id, sha) on delete cascade
);

create index blob_imports_blob on codesift.blob_imports (tenant_id, blob_sha);

-- Import edges resolved to target paths inside the same repository.
create table codesift.code_symbol_edges (
    id bigint generated always as identity primary key,
    tenant_id bigint not null references codesift.tenants (id) on delete cascade,
    repository_id bigint not null references codesift.repositories (id) on delete cascade,
    source_path text not null,
    target_path text not null,
    relation text not null,
    names text[] not null default '{}',
    line integer
);

create index code_symbol_edges_source on codesift.code_symbol_edges (repository_id, source_path);
create index code_symbol_edges_target on codesift.code_symbol_edges (repository_id, target_path);
create index blobs_lexemes on codesift.blobs using gin (lexemes);
