-- code_symbol_edges holds edges between files of several kinds (imports, tests,
-- references, co-change), not between symbols: it is file_edges.
alter table codesift.code_symbol_edges rename to file_edges;
