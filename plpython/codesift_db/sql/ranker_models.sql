-- The learned ranker's models of the repositories in scope (pipeline/rerank.py).
-- $1 tenant, $2 repository ids
select
    m.repository_id,
    m.model::text as model
from codesift.ranker_models as m
where m.tenant_id = $1 and m.repository_id = any($2)
