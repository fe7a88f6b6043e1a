-- The BM25 legs read the postings by index-only scans, which skip the table only for pages
-- vacuum has marked all-visible. An insert-only table is vacuumed once its inserts since the
-- last vacuum pass 20% of its rows (autovacuum_vacuum_insert_scale_factor), so a tenant
-- grown ref by ref could leave millions of postings to be checked in the table on every
-- question. At 1% their pages are marked after each ref of any size is indexed, and such a
-- vacuum reads only the pages not yet marked.
alter table codesift.symbol_terms set (autovacuum_vacuum_insert_scale_factor = 0.01);

alter table codesift.blob_terms set (autovacuum_vacuum_insert_scale_factor = 0.01);
