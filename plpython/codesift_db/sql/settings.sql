-- The database's settings (the embedding model and its dimension), pipeline/query.py.
select
    key,
    value
from codesift.settings
