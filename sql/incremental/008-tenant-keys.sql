-- Tenant-safe keys: every key and foreign key that can reach tenant data leads
-- with tenant_id. Foreign-key and unique checks ignore row-level security, so a
-- key on repository_id or symbol_id alone let one tenant probe another's paths
-- (duplicate-key errors) and plant rows in another tenant's repository. With
-- composite keys a row can only point at rows of its own tenant. It is also the
-- shape a tenant-sharded deployment (Citus, distribution column tenant_id) needs.

-- Rows that already point across tenants were planted: they go.
delete from codesift.files as f
using codesift.repositories as r
where r.id = f.repository_id and r.tenant_id <> f.tenant_id;

delete from codesift.code_symbol_edges as e
using codesift.repositories as r
where r.id = e.repository_id and r.tenant_id <> e.tenant_id;

delete from codesift.symbol_terms as t
using codesift.code_symbols as s
where s.id = t.symbol_id and s.tenant_id <> t.tenant_id;

alter table codesift.repositories
add constraint repositories_tenant_id_id_key unique (tenant_id, id);

alter table codesift.code_symbols
add constraint code_symbols_tenant_id_id_key unique (tenant_id, id);

alter table codesift.files
drop constraint files_repository_id_fkey,
drop constraint files_pkey,
add primary key (tenant_id, repository_id, path),
add constraint files_repository_fkey foreign key (tenant_id, repository_id)
references codesift.repositories (tenant_id, id) on delete cascade;

alter table codesift.code_symbol_edges
drop constraint code_symbol_edges_repository_id_fkey,
add constraint code_symbol_edges_repository_fkey foreign key (tenant_id, repository_id)
references codesift.repositories (tenant_id, id) on delete cascade;

alter table codesift.symbol_terms
drop constraint symbol_terms_symbol_id_fkey,
add constraint symbol_terms_symbol_fkey foreign key (tenant_id, symbol_id)
references codesift.code_symbols (tenant_id, id) on delete cascade;

-- Statistics and postings belong to their tenant: deleting a tenant deletes them.
delete from codesift.term_stats as t
where not exists (
    select from codesift.tenants as n
    where n.id = t.tenant_id
);

delete from codesift.corpus_stats as c
where not exists (
    select from codesift.tenants as n
    where n.id = c.tenant_id
);

alter table codesift.term_stats
add constraint term_stats_tenant_fkey foreign key (tenant_id)
references codesift.tenants (id) on delete cascade;

alter table codesift.corpus_stats
add constraint corpus_stats_tenant_fkey foreign key (tenant_id)
references codesift.tenants (id) on delete cascade;

-- Per-tenant login roles (psql sessions, BI tools): a role listed here sees its
-- tenant and no other, whatever it sets app.current_tenant_id to.
create table codesift.tenant_roles (
    role_name text primary key,
    tenant_id bigint not null references codesift.tenants (id) on delete cascade
);

create index tenant_roles_tenant on codesift.tenant_roles (tenant_id);
