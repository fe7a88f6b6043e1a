-- Every grant, in one place, run last. Functions are not executable by PUBLIC:
-- a database that hardens with `revoke all on functions ... from public` keeps
-- working, and a role that is none of codesift's runs nothing of codesift's.
--   codesift_app     reads and writes its session's tenant, runs the queries
--   codesift_loader  the same, plus creating tenants and forgetting
--   codesift_tenant  (per-tenant login roles) reads its tenant and runs the
--                    queries; it writes nothing

grant usage on schema codesift to codesift_app, codesift_loader, codesift_tenant;
grant usage on schema public to codesift_app, codesift_loader, codesift_tenant;

grant select on codesift.settings, codesift.tenants, codesift.tenant_roles
to codesift_app, codesift_loader, codesift_tenant;
grant insert, delete on codesift.tenants to codesift_loader;

grant select, insert, update, delete on
codesift.repositories,
codesift.blobs,
codesift.files,
codesift.code_symbols,
codesift.blob_imports,
codesift.code_symbol_edges,
codesift.symbol_terms,
codesift.blob_terms,
codesift.term_stats,
codesift.corpus_stats,
codesift.embeddings
to codesift_app, codesift_loader;

grant select on
codesift.repositories,
codesift.blobs,
codesift.files,
codesift.code_symbols,
codesift.blob_imports,
codesift.code_symbol_edges,
codesift.symbol_terms,
codesift.blob_terms,
codesift.term_stats,
codesift.corpus_stats,
codesift.live_files
to codesift_tenant;
grant select on codesift.live_files to codesift_app, codesift_loader;

grant usage on all sequences in schema codesift to codesift_app, codesift_loader;

revoke all on all functions in schema codesift from public;
grant execute on all functions in schema codesift
to codesift_app, codesift_loader, codesift_tenant;
-- writing and forgetting are not for read-only tenant roles; forgetting is the loader's
revoke execute on function codesift.resolve_edges(bigint) from codesift_tenant;
revoke execute on function codesift.resolve_edges(bigint, text[]) from codesift_tenant;
revoke execute on function codesift.extract_blobs() from codesift_tenant;
revoke execute on function codesift._collect_garbage() from codesift_app, codesift_tenant;
revoke execute on function codesift._forget_blobs(text[]) from codesift_app, codesift_tenant;
revoke execute on function codesift.forget_repository(text, text) from codesift_app, codesift_tenant;
revoke execute on function codesift.forget_tenant() from codesift_app, codesift_tenant;
-- migrations only
revoke execute on function codesift._policy_tenant() from codesift_app, codesift_loader, codesift_tenant;

-- MCP bearer tokens: the loader (codesift token create/list/revoke) manages its
-- tenant's; the MCP HTTP server (codesift_app) maps a token's hash to its tenant
-- through token_tenant() only; per-tenant login roles see neither.
grant select, insert, update on codesift.mcp_tokens to codesift_loader;
revoke execute on function codesift.token_tenant(text) from codesift_loader, codesift_tenant;
