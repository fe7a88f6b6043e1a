-- Names are labels, not payloads: a tenant or repository name of megabytes would be
-- stored, indexed and echoed in every message. Existing rows are not re-checked.
alter table codesift.tenants
add constraint tenants_name_length check (length(name) <= 200) not valid;

alter table codesift.repositories
add constraint repositories_name_length check (length(name) <= 512) not valid;
