-- Whether code_symbols has name_line (migration 021): a database migrated before it runs
-- its extraction trigger on this code until `codesift migrate` (extraction.py).
select count(*) > 0 as found
from pg_catalog.pg_attribute
where
    attrelid = 'codesift.code_symbols'::regclass
    and attname = 'name_line'
    and not attisdropped
