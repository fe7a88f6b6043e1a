"""The write side: what the extraction trigger and resolve_edges run inside the server.

extraction.py         on_blobs_inserted (symbols, imports, lexemes, token counts, BM25
                      postings per blob) and resolve_repository_edges
symbols/              symbol extraction (tree-sitter per language, markdown, a fallback)
languages.py          the table of languages: extensions, grammars, comments, import rules
import_extraction.py  import statements of a file
import_resolution.py  imports resolved to paths of the same repository
derived_edges.py      test and reference edges derived from paths and names
references.py         uses of names (calls, members, types) with their enclosing symbol
"""
