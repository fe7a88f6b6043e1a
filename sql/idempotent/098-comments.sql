-- What the schema holds, for \d+ and a BI tool's catalog browser: the schema,
-- every table, the view live_files, and every column. Plain facts; the
-- functions carry their own comments next to their definitions. A column added
-- by a later incremental migration is commented in that migration (as
-- blobs.extraction_limited is) or here.

comment on schema codesift is
'codesift: git blobs, extracted symbols, import edges, embeddings and BM25 postings of indexed '
'repositories, per tenant under row-level security, and the functions that retrieve code '
'context from them (pack_context, explain_context, hybrid_search, find_symbol, related_files).';

-- settings

comment on table codesift.settings is
'Install-time choices, one row per key: embedding_dim (vector width), embedding_model '
'(the active model; vectors from any other are the embedding queue), embedding_provider '
'(builtin or openai), embedding_endpoint (the openai provider''s base URL), and optional '
'embedding_batch and embedding_timeout. Written only by codesift migrate (the owner): '
'no codesift role can change where the database sends text to embed.';
comment on column codesift.settings.key is
'Setting name: embedding_dim, embedding_model, embedding_provider, embedding_endpoint, '
'embedding_batch or embedding_timeout.';
comment on column codesift.settings.value is 'Setting value, as text.';

-- schema_migrations (created by the migration runner, loader/codesift/migrate.py)

comment on table codesift.schema_migrations is
'Migrations applied by codesift migrate: incremental ones run once, idempotent ones re-run '
'when their checksum changes.';
comment on column codesift.schema_migrations.kind is 'incremental or idempotent (the sql/ folder).';
comment on column codesift.schema_migrations.name is 'File name, NNN-name.sql.';
comment on column codesift.schema_migrations.checksum is 'sha256 (hex) of the file as applied.';
comment on column codesift.schema_migrations.applied_at is 'When the file was (last) applied.';

-- tenants

comment on table codesift.tenants is
'Tenants: every other table''s rows belong to one, and row-level security shows a session only '
'the tenant codesift.current_tenant_id() names.';
comment on column codesift.tenants.id is 'Tenant id; app.current_tenant_id names it.';
comment on column codesift.tenants.name is 'Unique tenant name (codesift index --tenant).';
comment on column codesift.tenants.created_at is 'When the tenant was created.';

comment on table codesift.tenant_roles is
'Per-tenant login roles (psql, BI tools; members of codesift_tenant): each sees its own '
'tenant only, whatever it sets app.current_tenant_id to.';
comment on column codesift.tenant_roles.role_name is 'Login role name (current_user).';
comment on column codesift.tenant_roles.tenant_id is 'The only tenant this role sees.';

-- repositories

comment on table codesift.repositories is
'Indexed repositories of a tenant, with the commit their live files were recorded at.';
comment on column codesift.repositories.id is 'Repository id.';
comment on column codesift.repositories.tenant_id is 'Owning tenant.';
comment on column codesift.repositories.name is 'Name, unique per tenant (codesift index --name).';
comment on column codesift.repositories.checkout_path is 'Path of the checkout it was last indexed from.';
comment on column codesift.repositories.indexed_commit is 'Commit SHA of the indexed tree.';
comment on column codesift.repositories.indexed_at is 'When the tree was last recorded.';
comment on column codesift.repositories.head_commit is
'HEAD the loader last saw in the checkout; differs from indexed_commit when the index is stale.';
comment on column codesift.repositories.head_seen_at is 'When head_commit was read.';
comment on column codesift.repositories.indexed_worktree is
'Whether the indexed tree includes uncommitted worktree changes (codesift index --worktree).';

-- blobs

comment on table codesift.blobs is
'File contents, one row per git blob SHA-1 per tenant (content is stored, extracted and '
'embedded once, whatever paths point at it). Inserting rows runs the extraction trigger.';
comment on column codesift.blobs.tenant_id is 'Owning tenant.';
comment on column codesift.blobs.sha is 'Git blob SHA-1, 40 lowercase hex digits.';
comment on column codesift.blobs.size is 'Size of the content in bytes.';
comment on column codesift.blobs.language is 'Detected or given language (python, go, markdown, ...), or null.';
comment on column codesift.blobs.content is 'The file''s text.';
comment on column codesift.blobs.lexemes is 'Identifier-split terms of the content (to_tsvector simple).';
comment on column codesift.blobs.created_at is 'When the blob was first stored.';
comment on column codesift.blobs.embedding is 'Vector of the file text (cosine, HNSW), or null until embedded.';
comment on column codesift.blobs.embedding_model is 'Model that produced embedding.';
comment on column codesift.blobs.embedding_key is
'Key of embedding in codesift.embeddings (hash of the model and the embedded text).';
comment on column codesift.blobs.path_hint is 'Path the blob was first pushed at (language rules need a file name).';
comment on column codesift.blobs.term_count is 'Number of lexical terms: the BM25 document length.';
comment on column codesift.blobs.line_count is 'Number of lines, trailing newlines excluded.';
comment on column codesift.blobs.token_count is 'Estimated tokens of the content (codesift_db.packing.estimate_tokens).';

-- files

comment on table codesift.files is
'The tree of each repository at its indexed commit: path -> blob. Paths removed since stay with '
'live = false.';
comment on column codesift.files.repository_id is 'Repository of the path.';
comment on column codesift.files.tenant_id is 'Owning tenant.';
comment on column codesift.files.path is 'Repository-relative path.';
comment on column codesift.files.blob_sha is 'Blob at this path.';
comment on column codesift.files.live is 'Whether the path exists at the indexed commit.';
comment on column codesift.files.last_changed is
'When the path last changed in git history (the recency signal); now for worktree changes.';
comment on column codesift.files.lexemes is 'Path terms and the blob''s terms, for the file legs.';
comment on column codesift.files.stem_key is
'The file''s name without its folder and last extension, lowercase (generated): what the '
'files and modules a question mentions are looked up by.';
comment on column codesift.files.centrality is
'The file''s PageRank in its ref''s file graph (codesift.rank_files), the order repo_map reads; null until ranked.';

-- code_symbols

comment on table codesift.code_symbols is
'Functions, classes, methods, routes, markdown and reStructuredText sections and fallback '
'blocks extracted from a blob by the extraction trigger.';
comment on column codesift.code_symbols.id is 'Symbol id.';
comment on column codesift.code_symbols.tenant_id is 'Owning tenant.';
comment on column codesift.code_symbols.blob_sha is 'Blob the symbol was extracted from.';
comment on column codesift.code_symbols.name is 'Name as written.';
comment on column codesift.code_symbols.qualified_name is 'Name with its enclosing classes or modules (Class.method).';
comment on column codesift.code_symbols.kind is 'function, method, class, interface, type, module, route, section (markdown, reStructuredText) or block (fallback).';
comment on column codesift.code_symbols.start_line is 'First line, 1-based.';
comment on column codesift.code_symbols.end_line is 'Last line, 1-based, inclusive.';
comment on column codesift.code_symbols.signature is 'Declaration line(s), whitespace-collapsed, at most 300 characters.';
comment on column codesift.code_symbols.body is 'The exact lines start_line..end_line.';
comment on column codesift.code_symbols.parent is 'Qualified name of the enclosing symbol, or null.';
comment on column codesift.code_symbols.part is
'0 for a whole symbol; 1..n for the parts a long symbol is split into.';
comment on column codesift.code_symbols.lexemes is 'Identifier-split terms of path, name, doc and body.';
comment on column codesift.code_symbols.embedding is 'Vector of the symbol''s embedding text (cosine, HNSW), or null.';
comment on column codesift.code_symbols.embedding_model is 'Model that produced embedding.';
comment on column codesift.code_symbols.embedding_key is
'Key of embedding in codesift.embeddings (hash of the model and the embedded text).';

-- embeddings
comment on table codesift.embeddings is
'Vectors by the text they embed, per tenant: a symbol or file whose embedding text is '
'unchanged (new blob, branch or repository) takes its vector from here, not from the model.';
comment on column codesift.embeddings.tenant_id is 'Owning tenant; vectors are never shared.';
comment on column codesift.embeddings.key is
'sha256 of the model name, a NUL and the exact embedding text (codesift_db/embedtext.py).';
comment on column codesift.embeddings.model is 'Model that produced the vector.';
comment on column codesift.embeddings.embedding is 'The vector (unit length).';
comment on column codesift.embeddings.created_at is 'When the vector was computed.';
comment on column codesift.code_symbols.term_count is 'Number of lexical terms: the BM25 document length.';
comment on column codesift.code_symbols.doc is
'The symbol''s docstring (Python), then the comment block directly above it (JSDoc, '
'Javadoc, Go and Rust doc comments), after a blank line when both; or null.';
comment on column codesift.code_symbols.token_count is 'Estimated tokens of the body.';
comment on column codesift.code_symbols.name_key is
'lower(name), a column so that a lookup by name uses its index under row-level security.';

-- blob_imports and file_edges

comment on table codesift.blob_imports is
'Import statements as written in a blob, extracted by the trigger; resolved per repository into '
'file_edges.';
comment on column codesift.blob_imports.tenant_id is 'Owning tenant.';
comment on column codesift.blob_imports.blob_sha is 'Blob holding the statement.';
comment on column codesift.blob_imports.module is 'Module string as written (./utils, a.b.c, crate::x).';
comment on column codesift.blob_imports.names is 'Names imported from it, if any.';
comment on column codesift.blob_imports.relation is 'import, require, dynamic_import, mod or use.';
comment on column codesift.blob_imports.line is 'Line of the statement, 1-based.';

-- code_references

comment on table codesift.code_references is
'Uses of names that could name a definition (calls, members, types, imported names) in a '
'blob, extracted by the trigger (ingest/references.py); read by find_references, callers and '
'callees.';
comment on column codesift.code_references.tenant_id is 'Owning tenant.';
comment on column codesift.code_references.blob_sha is 'Blob holding the use.';
comment on column codesift.code_references.name is
'The name used; a name imported under an alias is stored under its imported name.';
comment on column codesift.code_references.line is 'Line of the use, 1-based.';
comment on column codesift.code_references.symbol is
'Qualified name of the innermost symbol holding the line (code_symbols), or null at the top '
'level of the file.';
comment on column codesift.code_references.is_call is
'Whether the name is called (a call, new, a decorator, a JSX element).';
comment on column codesift.code_references.qualifier is
'For a member use (x.f), the object as a dotted name (x, self, a.b), or ? for another '
'expression; null for a bare name.';
comment on column codesift.code_references.import_line is
'Line of the import statement that binds the name, or the head of its qualifier (the line '
'blob_imports and file_edges record); null when no import binds it.';
comment on column codesift.blobs.references_extracted is
'Whether the blob''s references were extracted: false for blobs stored before references '
'existed, until codesift.backfill_references() extracts them.';

comment on table codesift.file_edges is
'Edges between live files of one ref: resolved imports, a test to the code it tests and a '
'use of an imported name to the file defining it (codesift.resolve_edges), files changed in '
'the same commits (the loader, from git history). Imports of anything outside the repository '
'are not edges.';
comment on column codesift.file_edges.id is 'Edge id.';
comment on column codesift.file_edges.tenant_id is 'Owning tenant.';
comment on column codesift.file_edges.repository_id is 'Repository of both paths.';
comment on column codesift.file_edges.source_path is 'Path of the importing file.';
comment on column codesift.file_edges.target_path is 'Path of the imported file.';
comment on column codesift.file_edges.relation is
'The kind of edge: an import statement''s (as blob_imports.relation), tests, references or '
'co_change.';
comment on column codesift.file_edges.weight is
'Strength in (0, 1]: 1 for imports; the graph walk follows a file''s strongest edges first.';
comment on column codesift.file_edges.names is 'Names imported, if any.';
comment on column codesift.file_edges.line is 'Line of the statement in the source file.';

-- BM25 postings and statistics

comment on table codesift.symbol_terms is
'BM25 postings of symbols: one row per (symbol, term), written by the extraction trigger.';
comment on column codesift.symbol_terms.tenant_id is 'Owning tenant.';
comment on column codesift.symbol_terms.symbol_id is 'Symbol.';
comment on column codesift.symbol_terms.term is 'Lexeme.';
comment on column codesift.symbol_terms.tf is 'Term frequency in the symbol.';
comment on column codesift.symbol_terms.dl is 'Document length (the symbol''s term_count).';
comment on column codesift.symbol_terms.impact is
'bm25_weight at the default k1, b and the average length when written: the order candidates are read in.';

comment on table codesift.blob_terms is
'BM25 postings of whole files: one row per (blob, term), written by the extraction trigger.';
comment on column codesift.blob_terms.tenant_id is 'Owning tenant.';
comment on column codesift.blob_terms.blob_sha is 'Blob.';
comment on column codesift.blob_terms.term is 'Lexeme.';
comment on column codesift.blob_terms.tf is 'Term frequency in the blob.';
comment on column codesift.blob_terms.dl is 'Document length (the blob''s term_count).';
comment on column codesift.blob_terms.impact is
'bm25_weight at the default k1, b and the average length when written: the order candidates are read in.';

comment on table codesift.term_stats is
'Document frequency of each term per tenant and tier, for BM25 idf.';
comment on column codesift.term_stats.tenant_id is 'Owning tenant.';
comment on column codesift.term_stats.tier is 'symbol or file.';
comment on column codesift.term_stats.term is 'Lexeme.';
comment on column codesift.term_stats.df is 'Number of documents of the tier containing the term.';

comment on table codesift.corpus_stats is
'Document count and total length per tenant and tier, for BM25''s average document length.';
comment on column codesift.corpus_stats.tenant_id is 'Owning tenant.';
comment on column codesift.corpus_stats.tier is 'symbol or file.';
comment on column codesift.corpus_stats.docs is 'Number of documents.';
comment on column codesift.corpus_stats.total_terms is 'Sum of their term counts.';

-- mcp_tokens (the table's comment is in incremental/010-mcp-tokens.sql)

comment on column codesift.mcp_tokens.tenant_id is 'Tenant the token acts as.';
comment on column codesift.mcp_tokens.id is 'Token id, per tenant (codesift token revoke ID).';
comment on column codesift.mcp_tokens.token_hash is 'sha256 of the token, hex; the token itself is not stored.';
comment on column codesift.mcp_tokens.label is 'Free text describing the token, at most 200 characters.';
comment on column codesift.mcp_tokens.created_at is 'When the token was created.';
comment on column codesift.mcp_tokens.last_used_at is 'Last use, to the minute, or null.';
comment on column codesift.mcp_tokens.revoked_at is 'When the token was revoked, or null while valid.';

-- live_files (the view's comment is next to it, in 003-legs.sql)

comment on column codesift.live_files.tenant_id is 'Owning tenant.';
comment on column codesift.live_files.repository_id is 'Repository of the path.';
comment on column codesift.live_files.path is 'Repository-relative path.';
comment on column codesift.live_files.blob_sha is 'Blob at this path.';
comment on column codesift.live_files.last_changed is 'When the path last changed in git history.';
comment on column codesift.live_files.language is 'Language of the blob.';
