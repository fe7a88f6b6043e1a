-- References: every use of a name in a blob that could name a definition (a call, a
-- member, a type, an imported name), extracted by the extraction trigger with the blob's
-- symbols (plpython/codesift_db/ingest/references.py), so that the uses of a definition,
-- its callers and its callees are an index read (codesift.find_references, callers,
-- callees). Per blob like code_symbols: refs and repositories that share a blob share its
-- references.
create table codesift.code_references (
    tenant_id bigint not null,
    blob_sha text not null,
    name text not null,
    line integer not null check (line >= 1),
    symbol text,
    is_call boolean not null,
    qualifier text,
    import_line integer,
    foreign key (tenant_id, blob_sha) references codesift.blobs (tenant_id, sha) on delete cascade
);

-- the uses of a name; the uses inside a symbol (its callees), and a blob's rows (the cascade)
create index code_references_name on codesift.code_references (tenant_id, name);
create index code_references_blob on codesift.code_references (tenant_id, blob_sha, symbol);

-- Blobs stored before this migration have no references: false for them, true for every
-- blob inserted from now on (the trigger extracts its references in the same statement).
-- codesift.backfill_references() extracts the missing ones, the pending blobs found by
-- their partial index.
alter table codesift.blobs add column references_extracted boolean not null default false;
alter table codesift.blobs alter column references_extracted set default true;

create index blobs_references_pending on codesift.blobs (tenant_id, sha)
where not references_extracted;
