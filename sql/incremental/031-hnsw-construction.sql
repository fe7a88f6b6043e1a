-- Vectors are added to the HNSW graphs with a wider candidate list (ef_construction 256,
-- pgvector's default 64): each is linked to nearer neighbours, so that a walk at the legs'
-- ef_search finds more of the true nearest rows (bench/results/hnsw-recall-real.txt). pgvector
-- reads the option at every insert: a graph built before keeps its links until
-- `reindex index concurrently` rebuilds it.
alter index codesift.code_symbols_embedding set (ef_construction = 256);

alter index codesift.blobs_embedding set (ef_construction = 256);
