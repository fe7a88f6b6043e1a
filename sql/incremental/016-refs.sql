-- Refs: a repository has any number of indexed refs (branch, tag, commit, or the worktree),
-- each its own tree. A row of codesift.repositories is now one indexed ref of a repository
-- (name, ref): its commit, its files (path -> blob), its import edges, its indexed time.
-- Blobs, symbols and vectors are per tenant, so refs share all the content they have in
-- common. Existing rows become their repository's default ref, named HEAD (what
-- `codesift index` indexed when no --ref was given); nothing is re-indexed.
alter table codesift.repositories
add column ref text not null default 'HEAD'
constraint repositories_ref_length check (length(ref) between 1 and 512);

alter table codesift.repositories
add column is_default boolean not null default true;

alter table codesift.repositories
drop constraint repositories_tenant_id_name_key,
add constraint repositories_tenant_id_name_ref_key unique (tenant_id, name, ref);

-- the ref queries use when they name none: one per repository
create unique index repositories_one_default on codesift.repositories (tenant_id, name)
where is_default;

comment on column codesift.repositories.ref is
'The indexed ref this row is the tree of: a branch, tag or commit as given to codesift index '
'--ref (HEAD by default), or REF:worktree for uncommitted changes on top of REF.';
comment on column codesift.repositories.is_default is
'Whether queries that name no ref use this ref of the repository (one per repository).';
