-- The learned ranker (issue 33): who reads and writes its tables (sql/incremental/
-- 025-ranker.sql), and what they hold. The loader mines the pairs and stores the model
-- (codesift learn: loader/codesift/history.py, learn.py); the ranker stage of
-- pack_context reads the model as the caller (plpython/codesift_db/pipeline/rerank.py),
-- so a per-tenant login role reads its own tenant's and writes nothing.

grant select, insert, update, delete on codesift.history_pairs, codesift.ranker_models
to codesift_app, codesift_loader;
grant select on codesift.history_pairs, codesift.ranker_models to codesift_tenant;

comment on table codesift.history_pairs is
'Training pairs of the learned ranker, mined from an indexed ref''s own history by codesift '
'learn: one row per commit (an ancestor of the ref''s indexed commit, committed no later), '
'its message as the question and the definitions it changed as the gold; bounded per ref.';
comment on column codesift.history_pairs.tenant_id is 'Owning tenant.';
comment on column codesift.history_pairs.repository_id is 'The indexed ref whose history it is.';
comment on column codesift.history_pairs.commit_sha is 'The mined commit.';
comment on column codesift.history_pairs.committed_at is 'Its committer date.';
comment on column codesift.history_pairs.question is
'Its message (subject and body, trimmed): the question of the pair.';
comment on column codesift.history_pairs.gold is
'The definitions it changed ([{path, symbol, kind, start_line, end_line}], lines in the '
'parent''s version of the file); [] when none (the commit is still recorded as mined).';

comment on table codesift.ranker_models is
'The learned ranker of an indexed ref (a linear model over the pipeline''s candidate '
'features, trained by codesift learn on history_pairs): when present, hybrid_search, '
'pack_context and explain_context order their candidates by it (feature ranker of '
'codesift.retrieval_off).';
comment on column codesift.ranker_models.tenant_id is 'Owning tenant.';
comment on column codesift.ranker_models.repository_id is 'The indexed ref it ranks for.';
comment on column codesift.ranker_models.model is
'The model (plpython/codesift_db/ranker/model.py: format, version, features, mean, scale, '
'weights); one that cannot be read leaves the stage off with a degraded notice.';
comment on column codesift.ranker_models.trained_at is 'When it was trained.';
comment on column codesift.ranker_models.trained_through is
'The indexed commit it was trained at: only pairs of commits before it were used.';
comment on column codesift.ranker_models.pairs is 'History pairs with gold it was trained on.';
