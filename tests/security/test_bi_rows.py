"""pack_context_flat (pack_context with `why` in typed columns, for BI tools) and the
`language` and `citation` columns: who may run it, and two tenants that share a repository
name and most content never seeing each other's files through it."""

import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from .two_tenants import index_two_tenants

FLAT = (
    "codesift.pack_context_flat(text, text, integer, text, text, text[], vector, integer,"
    " double precision, double precision, double precision, double precision,"
    " double precision, text, text)"
)
QUESTION = "token vault zebra follow redirects"


@pytest.fixture
def two(dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


def test_the_roles_run_it_and_public_does_not(db):
    can = {
        role: db.execute(
            "select has_function_privilege(%s, %s, 'execute')", (role, FLAT)
        ).fetchone()[0]
        for role in ("public", "codesift_app", "codesift_loader", "codesift_tenant")
    }
    assert can == {
        "public": False,
        "codesift_app": True,
        "codesift_loader": True,
        "codesift_tenant": True,
    }


def test_a_stranger_role_cannot_run_it(db, dsn, two):
    role = f"stranger_{uuid.uuid4().hex[:12]}"
    db.execute(f"create role {role} login password 'pw'")
    try:
        with psycopg.connect(make_conninfo(dsn, user=role, password="pw")) as conn:
            conn.autocommit = True
            conn.execute(
                "select set_config('app.current_tenant_id', %s, false)", (str(two["acme"].id),)
            )
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "select * from codesift.pack_context_flat('redirects', repo => 'shared')"
                )
    finally:
        db.execute(f"drop role {role}")


@pytest.mark.parametrize("me, other", [("acme", "globex"), ("globex", "acme")])
def test_each_tenant_sees_and_cites_only_its_own_files(two, app_connect, me, other):
    conn = app_connect(two[me].id)
    mine, theirs = f"app/secret_{me}.py", f"app/secret_{other}.py"
    for sql in (
        "select path, citation, text from pack_context_flat(%s, repo => 'shared')",
        "select path, citation, text from pack_context(%s, repo => 'shared')",
        "select path, citation, '' from explain_context(%s, repo => 'shared')",
        "select path, citation, text from pack_context_flat(%s)",
    ):
        rows = conn.execute(sql, (QUESTION,)).fetchall()
        assert mine in {r[0] for r in rows}, sql
        seen = " ".join(" ".join(r) for r in rows)
        assert theirs not in seen and f"{other}zebra" not in seen, sql
        assert all(r[1].startswith(f"shared:{r[0]}:") for r in rows), sql
    # the other tenant's words find nothing of theirs
    rows = conn.execute(
        "select path from pack_context_flat(%s, repo => 'shared')", (f"{other}_token_vault",)
    ).fetchall()
    assert theirs not in {r[0] for r in rows}
    # without a tenant, the application role gets an error, not rows
    anonymous = app_connect()
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        anonymous.execute("select * from pack_context_flat(%s, repo => 'shared')", (QUESTION,))


@pytest.mark.parametrize(
    "args",
    [
        "''",
        "null",
        "'x y', token_budget => 0",
        "'x y', token_budget => 100000000",
        "'x y', token_budget => null",
        "'x y', repo => repeat('r', 100000)",
        "'x y', query_embedding => '[1,2,3]'",
        "'x y', ranking => 'magic'",
        "'x y', graph_depth => 99",
    ],
)
def test_bad_arguments_are_refused_as_pack_context_refuses_them(two, app_connect, args):
    conn = app_connect(two["acme"].id)
    refused = []
    for fn in ("pack_context", "pack_context_flat"):
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(f"select * from {fn}({args})")
        refused.append((caught.value.sqlstate, caught.value.diag.message_primary))
    assert refused[0] == refused[1]
    assert refused[0][0] in ("22023", "22004", "22000", "42704"), refused
