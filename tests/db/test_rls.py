"""Tenant isolation: two tenants with real rows in every table."""

import psycopg
import pytest

TENANT_TABLES = [
    "symbol_terms",
    "blob_terms",
    "term_stats",
    "corpus_stats",
    "repositories",
    "blobs",
    "files",
    "code_symbols",
    "blob_imports",
    "file_edges",
    "embeddings",
    "code_references",
    "history_pairs",
    "ranker_models",
]
# keyed by tenant_id but read by another key before a tenant is set: policies of their own
OWN_POLICIES = {"tenant_roles", "mcp_tokens"}
SHA = {"acme": "a" * 40, "globex": "b" * 40}


def _seed(db, name: str) -> int:
    tenant = db.execute("insert into tenants (name) values (%s) returning id", (name,)).fetchone()[
        0
    ]
    sha = SHA[name]
    repo = db.execute(
        "insert into repositories (tenant_id, name) values (%s, 'shared-name') returning id",
        (tenant,),
    ).fetchone()[0]
    db.execute(
        "insert into blobs (tenant_id, sha, size, content) values (%s, %s, 9, 'total = 1')",
        (tenant, sha),
    )
    db.execute(
        "insert into files (repository_id, tenant_id, path, blob_sha) values (%s, %s, 'a.py', %s)",
        (repo, tenant, sha),
    )
    db.execute(
        "insert into code_symbols (tenant_id, blob_sha, name, qualified_name, kind, start_line,"
        " end_line, body) values (%s, %s, %s, %s, 'function', 1, 1, 'x = 1')",
        (tenant, sha, f"only_{name}", f"only_{name}"),
    )
    db.execute(
        "insert into blob_imports (tenant_id, blob_sha, module, relation, line)"
        " values (%s, %s, './b', 'import', 1)",
        (tenant, sha),
    )
    db.execute(
        "insert into file_edges"
        " (tenant_id, repository_id, source_path, target_path, relation)"
        " values (%s, %s, 'a.py', 'b.py', 'import')",
        (tenant, repo),
    )
    db.execute(
        "insert into code_references (tenant_id, blob_sha, name, line, is_call)"
        " values (%s, %s, 'total', 1, false)",
        (tenant, sha),
    )
    # the learned ranker's pairs and model (025-ranker.sql)
    db.execute(
        "insert into history_pairs (tenant_id, repository_id, commit_sha, committed_at,"
        " question, gold) values (%s, %s, %s, now(), 'fix total', '[]')",
        (tenant, repo, sha),
    )
    db.execute(
        "insert into ranker_models (tenant_id, repository_id, model, trained_through, pairs)"
        " values (%s, %s, '{}', %s, 0)",
        (tenant, repo, sha),
    )
    # a stored vector, under the same key in both tenants: keys never cross tenants
    db.execute(
        "insert into embeddings (tenant_id, key, model, embedding)"
        " values (%s, repeat('c', 64), 'm', array_fill(0.1::real, array[384])::vector)",
        (tenant,),
    )
    return tenant


@pytest.fixture
def tenants(db):
    return {name: _seed(db, name) for name in SHA}


def test_every_tenant_keyed_table_is_seeded_and_checked(db):
    """A table a migration adds with a tenant_id column gets the tenant policy from the
    catalog (001-tenancy.sql); this list must hold it too, so that it is checked here."""
    keyed = db.execute(
        "select array_agg(c.relname::text) from pg_class c"
        " join pg_namespace n on n.oid = c.relnamespace"
        " where n.nspname = 'codesift' and c.relkind in ('r', 'p') and exists"
        " (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id'"
        "  and not a.attisdropped)"
    ).fetchone()[0]
    assert set(keyed) - OWN_POLICIES == set(TENANT_TABLES)


def test_app_role_sees_only_its_tenant(tenants, app_connect):
    for name, tenant_id in tenants.items():
        conn = app_connect(tenant_id)
        assert conn.execute("select array_agg(id) from tenants").fetchone()[0] == [tenant_id]
        for table in TENANT_TABLES:
            ids = conn.execute(f"select array_agg(distinct tenant_id) from {table}").fetchone()[0]
            assert ids == [tenant_id], table
        symbols = conn.execute("select array_agg(name) from code_symbols").fetchone()[0]
        assert f"only_{name}" in symbols and not any(
            s.startswith("only_") and s != f"only_{name}" for s in symbols
        )


def test_no_tenant_set_sees_nothing(tenants, app_connect, db):
    conn = app_connect()
    for table in ["tenants", *TENANT_TABLES]:
        assert conn.execute(f"select count(*) from {table}").fetchone()[0] == 0, table
    conn.execute("select set_config('app.current_tenant_id', '', false)")
    assert conn.execute("select count(*) from blobs").fetchone()[0] == 0
    # while the owner does see both tenants' rows
    assert db.execute("select count(*) from blobs").fetchone()[0] == 2


def test_cannot_write_into_another_tenant(tenants, app_connect):
    conn = app_connect(tenants["acme"])
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        conn.execute(
            "insert into blobs (tenant_id, sha, size, content) values (%s, %s, 1, 'y')",
            (tenants["globex"], "c" * 40),
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        conn.execute("update repositories set tenant_id = %s", (tenants["globex"],))
    # nor plant a vector that the other tenant's next embedding run would reuse
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        conn.execute(
            "insert into embeddings (tenant_id, key, model, embedding)"
            " values (%s, repeat('d', 64), 'm', array_fill(0.9::real, array[384])::vector)",
            (tenants["globex"],),
        )
    assert (
        conn.execute(
            "update embeddings set model = 'poisoned' where tenant_id = %s", (tenants["globex"],)
        ).rowcount
        == 0
    )
    # updates and deletes of the other tenant's rows touch nothing
    assert (
        conn.execute("delete from files where tenant_id = %s", (tenants["globex"],)).rowcount == 0
    )
    conn.execute(
        "insert into blobs (tenant_id, sha, size, content) values (%s, %s, 1, 'y')",
        (tenants["acme"], "c" * 40),
    )


def test_app_role_is_not_privileged(db):
    row = db.execute(
        "select rolsuper, rolbypassrls from pg_roles where rolname = 'codesift_app'"
    ).fetchone()
    assert row == (False, False)
    owners = db.execute(
        "select distinct tableowner from pg_tables where schemaname = 'codesift'"
    ).fetchall()
    assert ("codesift_app",) not in owners
    forced = db.execute(
        "select bool_and(relrowsecurity and relforcerowsecurity) from pg_class"
        " where relnamespace = 'codesift'::regnamespace and relname = any(%s)",
        (["tenants", *TENANT_TABLES],),
    ).fetchone()[0]
    assert forced
