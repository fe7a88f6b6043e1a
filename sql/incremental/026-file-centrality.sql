-- Each live file's PageRank in its ref's file graph, stored when the ref is indexed
-- (codesift.rank_files, plpython/codesift_db/navigation.py) so that repo_map reads the most
-- central files by an index instead of ranking the whole repository on every call. Null
-- until the ref is ranked; repo_map then ranks on the fly as before.
alter table codesift.files add column centrality real;

create index files_centrality on codesift.files (tenant_id, repository_id, centrality desc)
where live;
