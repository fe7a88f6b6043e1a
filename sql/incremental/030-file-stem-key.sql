-- A file's name without its folder and its last extension, lowercase, as a column of its
-- own, indexed with the tenant for the live files: what the files and modules a long
-- question mentions are looked up by (plpython/codesift_db/sql/mentioned_files.sql), which
-- computed it for every live file in scope on every question. An equality on a plain column
-- is leakproof, so the index serves under row-level security too (018-symbol-name-key.sql).
alter table codesift.files
add column stem_key text generated always as (
    lower(regexp_replace(path, '^.*/|\.[^./]*$', '', 'g'))
) stored;

create index files_live_stem_key on codesift.files (tenant_id, stem_key) where live;
