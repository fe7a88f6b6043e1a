"""Attacks on find_references, callers, callees and backfill_references: another tenant's
uses of the same name in the same repository name, hostile names and sizes, the caps on
what one call returns, and who may run them.

acme and globex both index a repository called 'shared' (two_tenants.py) where
app/redirects.py defines follow_redirects, app/session.py calls it, and each tenant's own
app/secret_<tenant>.py calls it from <tenant>_token_vault. The calls run as the
application role with the tenant set, unless a test says otherwise.
"""

import uuid

import psycopg
import pytest
from codesift.indexer import index_repository
from psycopg.conninfo import make_conninfo

from tests.watching import run_codesift

from .refusals import refused
from .two_tenants import index_two_tenants

BIG_INT = 2**31 - 1
TEN_KB = "x" * 10_000
FUNCTIONS = (
    "codesift.find_references(text, text, text, text, integer)",
    "codesift.callers(text, text, text, text, integer)",
    "codesift.callees(text, text, text, text, integer)",
)


@pytest.fixture
def two(db, dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


@pytest.fixture
def acme(two, app_connect):
    return app_connect(two["acme"].id)


def _all_text(conn, sql, params=None) -> str:
    return "\n".join(repr(r) for r in conn.execute(sql, params).fetchall())


# --- tenants ------------------------------------------------------------------------------


def test_another_tenants_uses_of_the_same_name_are_invisible(two, app_connect):
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        conn = app_connect(two[tenant].id)
        notices = []
        conn.add_notice_handler(lambda d, n=notices: n.append(d.message_primary))
        refs = _all_text(conn, "select * from codesift.find_references('follow_redirects')")
        assert f"app/secret_{tenant}.py" in refs and "app/session.py" in refs
        callers = _all_text(conn, "select * from codesift.callers('follow_redirects')")
        assert f"{tenant}_token_vault" in callers
        for text in (refs, callers, "\n".join(notices)):
            assert other not in text
        # the other tenant's definition is unknown: no rows, and the notice names nothing
        assert (
            conn.execute(f"select * from codesift.callees('{other}_token_vault')").fetchall() == []
        )
        assert (
            conn.execute(
                f"select * from codesift.find_references('app/secret_{other}.py:4')"
            ).fetchall()
            == []
        )
        # the notices echo what was asked and nothing of the other tenant's
        assert all(n.startswith("no definition of") for n in notices if other in n)
        assert not any("zebra" in n for n in notices)


def test_the_table_itself_keeps_tenants_apart(two, app_connect):
    acme = app_connect(two["acme"].id)
    shas = {r[0] for r in acme.execute("select distinct blob_sha from codesift.code_references")}
    globex_only = acme.execute(
        "select count(*) from codesift.code_references where name = 'globex_token_vault'"
        " or tenant_id = %s",
        (two["globex"].id,),
    ).fetchone()[0]
    assert shas and globex_only == 0
    # planting a row in the other tenant is refused by the policy
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        acme.execute(
            "insert into codesift.code_references (tenant_id, blob_sha, name, line, is_call)"
            " values (%s, %s, 'x', 1, false)",
            (two["globex"].id, sorted(shas)[0]),
        )


def test_no_tenant_sees_nothing(two, app_connect):
    nobody = app_connect()
    for call in (
        "select * from codesift.find_references('follow_redirects')",
        "select * from codesift.callers('follow_redirects')",
        "select * from codesift.callees('open_session')",
        "select codesift.backfill_references()",
    ):
        refused(nobody, call, None, "42501")
    assert nobody.execute("select count(*) from codesift.code_references").fetchone() == (0,)


def test_a_backfill_touches_its_own_tenant_only(db, two, app_connect):
    db.execute("update codesift.blobs set references_extracted = false")
    db.execute("delete from codesift.code_references")
    acme = app_connect(two["acme"].id)
    while acme.execute("select codesift.backfill_references()").fetchone()[0]:
        pass
    pending = dict(
        db.execute(
            "select tenant_id, count(*) filter (where not references_extracted)"
            " from codesift.blobs group by tenant_id"
        ).fetchall()
    )
    assert pending[two["acme"].id] == 0 and pending[two["globex"].id] > 0
    assert db.execute(
        "select count(*) from codesift.code_references where tenant_id = %s",
        (two["globex"].id,),
    ).fetchone() == (0,)


# --- hostile names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        ".*",
        "%",
        "_",
        "follow_.*",
        "[a-z]+",
        "(a|b)*$",
        "\\d+\\",
        "'; drop table codesift.code_references; --",
        "follow_redirects%",
        "*",
        "app/../../etc/passwd:1",
    ],
)
def test_regex_and_sql_characters_are_plain_names(acme, name):
    notices = []
    acme.add_notice_handler(lambda d: notices.append(d.message_primary))
    if name.startswith("app/../"):
        refused(acme, "select * from codesift.find_references(%s)", (name,), "22023", "goes up")
        return
    for fn in ("find_references", "callers", "callees"):
        assert acme.execute(f"select * from codesift.{fn}(%s)", (name,)).fetchall() == []
    assert acme.execute("select count(*) from codesift.code_references").fetchone()[0] > 0


def test_nul_bytes_never_reach_the_functions(acme):
    with pytest.raises(psycopg.DataError):
        acme.execute("select * from codesift.find_references(%s)", ("follow\x00redirects",))
    for sql in (
        "select * from codesift.find_references('follow' || chr(0))",
        "select * from codesift.callers(convert_from('\\x00'::bytea, 'UTF8'))",
    ):
        with pytest.raises(psycopg.Error):
            acme.execute(sql)
        assert acme.execute("select 1").fetchone() == (1,)


@pytest.mark.parametrize(
    "call, sqlstate, says",
    [
        ("find_references(null)", "22004", "name must not be null"),
        ("find_references('')", "22023", "name must not be empty"),
        ("find_references('  ')", "22023", "name must not be empty"),
        (f"find_references('{TEN_KB}')", "22023", "name is 10,000 characters"),
        ("find_references(repeat('a', 10000000))", "22023", "at most 512"),
        ("find_references(E'follow\\x1b[2J')", "22023", "control characters"),
        ("find_references('x', repo => repeat('r', 513))", "22023", "repo is 513"),
        ("find_references('x', ref => repeat('r', 513))", "22023", "ref is 513"),
        ("find_references('x', path => repeat('a', 4097))", "22023", "path is 4,097"),
        ("find_references('x', path => '/etc/passwd')", "22023", "is absolute"),
        ("find_references('x', path => '../x.py')", "22023", "goes up a folder"),
        ("find_references('x', max_rows => 0)", "22023", "max_rows must be between"),
        ("find_references('x', max_rows => -1)", "22023", "max_rows must be between"),
        ("find_references('x', max_rows => 1001)", "22023", "max_rows must be between"),
        (f"find_references('x', max_rows => {BIG_INT})", "22023", "max_rows must be between"),
        ("find_references('x', max_rows => null)", "22004", "max_rows must not be null"),
        ("callers(null)", "22004", "symbol must not be null"),
        (f"callers('{TEN_KB}')", "22023", "symbol is 10,000 characters"),
        (f"callers('x', max_rows => {BIG_INT})", "22023", "max_rows must be between"),
        ("callees('')", "22023", "symbol must not be empty"),
        (f"callees('x', max_rows => {BIG_INT})", "22023", "max_rows must be between"),
        ("callees('shared:/etc/passwd:1')", "22023", "is absolute"),
    ],
)
def test_hostile_sizes_are_refused(acme, call, sqlstate, says):
    error = refused(acme, f"select * from codesift.{call}", None, sqlstate, says)
    assert error.diag.message_hint


def test_a_backfill_with_hostile_sizes_is_refused(acme):
    for n in (0, -1, 10_001, BIG_INT):
        refused(acme, "select codesift.backfill_references(%s)", (n,), "22023", "max_blobs")
    refused(acme, "select codesift.backfill_references(null)", None, "22023", "max_blobs")


def test_unknown_repository_and_ref_name_nothing_of_another_tenant(two, db, dsn, make_repo, acme):
    root = make_repo({"x.py": "def globex_only():\n    return 1\n"}, name="globex-only")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="globexonly", tenant="globex", embed=False, show_progress=False
        )
    error = refused(
        acme,
        "select * from codesift.find_references('globex_only', repo => 'globexonly')",
        None,
        "42704",
        "unknown repository",
    )
    assert "globexonly" not in error.diag.message_hint
    refused(
        acme,
        "select * from codesift.callers('open_session', ref => 'nope')",
        None,
        "42704",
        "no indexed ref",
    )


# --- privileges ---------------------------------------------------------------------------


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_service_roles_may_run_them_and_public_may_not(db, function):
    for role, allowed in (
        ("codesift_app", True),
        ("codesift_loader", True),
        ("codesift_tenant", True),
        ("public", False),
    ):
        got = db.execute(
            "select has_function_privilege(%s, %s::regprocedure, 'execute')", (role, function)
        ).fetchone()[0]
        assert got is allowed, role


def test_only_the_writing_roles_may_backfill(db):
    for role, allowed in (
        ("codesift_app", True),
        ("codesift_loader", True),
        ("codesift_tenant", False),
        ("public", False),
    ):
        got = db.execute(
            "select has_function_privilege(%s, 'codesift.backfill_references(integer)', 'execute')",
            (role,),
        ).fetchone()[0]
        assert got is allowed, role


def test_the_app_role_runs_them_and_a_stranger_cannot(db, dsn, two, acme):
    assert acme.execute("select count(*) from codesift.find_references('follow_redirects')")
    role = f"stranger_{uuid.uuid4().hex[:12]}"
    db.execute(f"create role {role} login password 'pw'")
    try:
        with psycopg.connect(make_conninfo(dsn, user=role, password="pw"), autocommit=True) as conn:
            conn.execute(
                "select set_config('app.current_tenant_id', %s, false)", (str(two["acme"].id),)
            )
            for call in (
                "select * from codesift.find_references('follow_redirects')",
                "select * from codesift.callers('follow_redirects')",
                "select * from codesift.callees('open_session')",
                "select codesift.backfill_references()",
                "select count(*) from codesift.code_references",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(call)
    finally:
        db.execute(f"drop role {role}")


# --- what the CLI prints --------------------------------------------------------------------


def test_the_cli_prints_control_characters_visibly(two, dsn, make_repo):
    root = make_repo(
        {
            "banner.py": "def colorful(x):\n    return x\n",
            "use.py": (
                "from banner import colorful\n\n\n"
                'def shout():\n    return colorful("\x1b[31mRED\x1b]0;pwned\x07\x1b[2J")\n'
            ),
        },
        name="render",
    )
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="render", tenant="acme", embed=False, show_progress=False)
    refs = run_codesift(dsn, "refs", "colorful", "--repo", "render", "--tenant", "acme")
    assert refs.returncode == 0, refs.stderr
    assert "\x1b" not in refs.stdout and "\x07" not in refs.stdout
    assert 'colorful("\\x1b[31mRED\\x1b]0;pwned\\x07\\x1b[2J")' in refs.stdout
    callers = run_codesift(dsn, "callers", "colorful", "--repo", "render", "--tenant", "acme")
    assert callers.returncode == 0 and "render:use.py:4-5  shout calls it at line 5" in (
        callers.stdout
    )
    callees = run_codesift(dsn, "callees", "shout", "--tenant", "acme")
    assert callees.returncode == 0 and "colorful  line 5  -> render:banner.py:1-2" in (
        callees.stdout
    )
    bad = run_codesift(dsn, "refs", "x", "--limit", "5000", "--tenant", "acme")
    assert bad.returncode != 0
    missing = run_codesift(dsn, "refs", "[bold]x[/bold]", "--tenant", "acme")
    assert missing.returncode == 0 and "[bold]x[/bold]: no use found" in missing.stderr
