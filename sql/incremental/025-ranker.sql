-- The learned ranker (issue 33): training pairs mined from a ref's own history, and the
-- model trained on them. Both are keyed by tenant first and by the repository row (one
-- indexed ref), so no key check reaches another tenant's rows; the tenant policy comes
-- from the catalog (001-tenancy.sql).

-- One row per mined commit (an ancestor of the ref's indexed commit, committed no later):
-- its message as the question, the definitions it changed as the gold (a commit with no
-- changed definition keeps its row with gold '[]', so mining again skips it).
create table codesift.history_pairs (
    tenant_id bigint not null,
    repository_id bigint not null,
    commit_sha text not null check (commit_sha ~ '^[0-9a-f]{40}$'),
    committed_at timestamptz not null,
    question text not null check (length(question) <= 4000),
    gold jsonb not null check (jsonb_typeof(gold) = 'array' and octet_length(gold::text) <= 65536),
    primary key (tenant_id, repository_id, commit_sha),
    foreign key (tenant_id, repository_id)
    references codesift.repositories (tenant_id, id) on delete cascade
);

-- One model per repository row: read by the ranker stage of pack_context
-- (plpython/codesift_db/pipeline/rerank.py); trained only on commits before the ref's.
create table codesift.ranker_models (
    tenant_id bigint not null,
    repository_id bigint not null,
    model jsonb not null check (octet_length(model::text) <= 262144),
    trained_at timestamptz not null default now(),
    trained_through text not null check (trained_through ~ '^[0-9a-f]{40}$'),
    pairs integer not null check (pairs >= 0),
    primary key (tenant_id, repository_id),
    foreign key (tenant_id, repository_id)
    references codesift.repositories (tenant_id, id) on delete cascade
);
