-- Bearer tokens of `codesift mcp --http`: each maps to one tenant. Only a hash is
-- stored (sha256 of the random token, hex); the token itself is printed once by
-- `codesift token create`. tenant_id leads every key, so no key check can probe
-- another tenant's tokens; the lookup by hash (any tenant, before a tenant is
-- known) goes through codesift.token_tenant() only, over a non-unique index.
create table codesift.mcp_tokens (
    tenant_id bigint not null references codesift.tenants (id) on delete cascade,
    id bigint generated always as identity,
    token_hash text not null check (token_hash ~ '^[0-9a-f]{64}$'),
    label text not null default '' check (length(label) <= 200),
    created_at timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at timestamptz,
    primary key (tenant_id, id),
    unique (tenant_id, token_hash)
);

create index mcp_tokens_hash on codesift.mcp_tokens (token_hash);

alter table codesift.mcp_tokens enable row level security;
alter table codesift.mcp_tokens force row level security;

comment on table codesift.mcp_tokens is
'Bearer tokens of the MCP HTTP server: sha256 of each token (hex), its tenant, when it was '
'created, last used (to the minute) and revoked. Managed by codesift token create/list/revoke.';
