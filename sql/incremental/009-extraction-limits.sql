-- Why a blob's extraction is incomplete, or null when it is complete.
--
-- Extraction runs in the PL/Python trigger that inserts blobs, where
-- statement_timeout and cancel requests cannot interrupt it. So it is bounded
-- per blob (plpython/codesift_db/budget.py): caps on symbols, markdown
-- sections, symbol text, imports and terms, and a time budget checked inside
-- its loops. A blob over a limit is stored with what was extracted, and this
-- column says what was left out, e.g. 'symbols cap 5000 (812 more)' or
-- 'time budget 2 s: symbols incomplete'; several reasons are joined by '; '.
alter table codesift.blobs add column extraction_limited text;

comment on column codesift.blobs.extraction_limited is
'Why extraction of this blob is incomplete (caps, time budget), or null when complete.';
