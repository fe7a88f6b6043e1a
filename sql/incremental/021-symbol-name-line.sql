-- The line of a symbol's name, besides its span: a jump to a decorated or annotated
-- definition lands on its `def` (the decorators are inside start_line..end_line), a
-- section's on its title. Filled by extraction (ingest/symbols: name_line); null for a
-- symbol extracted before this column existed (a stored blob is not extracted again).
alter table codesift.code_symbols add column name_line integer;

comment on column codesift.code_symbols.name_line is
'Line of the symbol''s name, 1-based, within start_line..end_line (the def line of a '
'decorated function, the title line of a section); null for a symbol extracted before '
'the column existed.';
