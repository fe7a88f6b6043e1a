"""Attacks on file_outline and repo_map: another tenant's file at the same path, another
ref's file, paths that leave the repository, hostile sizes and characters, the caps on what
one call reads and returns, and who may run them.

acme and globex each index a repository called 'shared' holding app/vault.py, with
different definitions (acme_vault_key, globex_vault_key); acme's also has a branch
'feature' (indexed as a second ref) with a file the default ref does not have. The calls
run as the application role with the tenant set, unless a test says otherwise.
"""

import uuid

import psycopg
import pytest
from codesift.indexer import index_repository
from psycopg.conninfo import make_conninfo

from tests.conftest import commit, git, write_files
from tests.watching import run_codesift

from .refusals import refused

BIG_INT = 2**31 - 1
TEN_MB = 10 * 1024 * 1024


def _files(tenant: str) -> dict[str, str]:
    return {
        "app/__init__.py": "",
        "app/core.py": "def open_core():\n    return 1\n",
        "app/vault.py": (
            "from app.core import open_core\n\n\n"
            f"class {tenant.capitalize()}Vault:\n"
            f"    def {tenant}_vault_key(self):\n        return open_core()\n"
        ),
        f"app/{tenant}_notes.py": f"def {tenant}_private_notes():\n    return 'zebra'\n",
    }


@pytest.fixture
def two(dsn, make_repo, snapshots):
    """{tenant: id}; acme's 'shared' at HEAD (the default ref) and at 'feature' (indexed
    once per session, copied into this test's database)."""
    return snapshots.load("navigation_attacks", _index_two, dsn, make_repo)


def _index_two(dsn: str, make_repo) -> dict[str, int]:
    ids = {}
    for tenant in ("acme", "globex"):
        root = make_repo(_files(tenant), name=f"{tenant}-shared")
        with psycopg.connect(dsn) as conn:
            index_repository(
                conn, root, name="shared", tenant=tenant, embed=False, show_progress=False
            )
            if tenant == "acme":
                git(root, "checkout", "-q", "-b", "feature")
                write_files(root, {"app/feature_only.py": "def feature_flag():\n    return 2\n"})
                commit(root, "feature")
                git(root, "checkout", "-q", "main")
                index_repository(
                    conn,
                    root,
                    name="shared",
                    tenant=tenant,
                    ref="feature",
                    embed=False,
                    show_progress=False,
                )
            ids[tenant] = conn.execute(
                "select id from codesift.tenants where name = %s", (tenant,)
            ).fetchone()[0]
    return ids


@pytest.fixture
def acme(two, app_connect):
    return app_connect(two["acme"])


def _names(conn, path, **kw):
    args = "".join(f", {k} => %({k})s" for k in kw)
    return [
        r[0]
        for r in conn.execute(
            f"select qualified_name from codesift.file_outline(%(path)s{args})",
            {"path": path, **kw},
        ).fetchall()
    ]


def _map_text(conn, **kw) -> str:
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    rows = conn.execute(f"select path, text from codesift.repo_map({args})", kw).fetchall()
    return "\n".join(f"{path}\n{text}" for path, text in rows)


# --- tenants ------------------------------------------------------------------------------


def test_the_same_path_in_two_tenants_shows_each_its_own(two, app_connect):
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        conn = app_connect(two[tenant])
        names = _names(conn, "app/vault.py")
        assert names == [
            f"{tenant.capitalize()}Vault",
            f"{tenant.capitalize()}Vault.{tenant}_vault_key",
        ]
        assert _names(conn, "shared:app/vault.py", repo="shared") == names
        text = _map_text(conn, token_budget=100_000)
        assert f"{tenant}_vault_key" in text and f"{tenant}_notes.py" in text
        assert other not in text


def test_another_tenants_file_is_unknown_and_the_hint_names_none_of_its_paths(acme):
    for path in ("app/globex_notes.py", "shared:app/globex_notes.py"):
        error = refused(acme, "select * from codesift.file_outline(%s)", (path,), "42704")
        assert "globex" not in (error.diag.message_hint or "")
    # the nearest paths are acme's own
    error = refused(acme, "select * from codesift.file_outline('app/notes.py')", None, "42704")
    assert "shared:app/acme_notes.py" in error.diag.message_hint
    assert "globex" not in error.diag.message_hint


def test_another_tenants_repository_is_unknown(two, db, dsn, make_repo, app_connect):
    root = make_repo({"x.py": "def globex_only():\n    return 1\n"}, name="globex-only")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="globexonly", tenant="globex", embed=False, show_progress=False
        )
    acme = app_connect(two["acme"])
    for call, params in (
        ("select * from codesift.file_outline('x.py', repo => 'globexonly')", None),
        ("select * from codesift.repo_map(repo => 'globexonly')", None),
    ):
        error = refused(acme, call, params, "42704", "unknown repository")
        assert "globexonly" not in error.diag.message_hint
    error = refused(acme, "select * from codesift.file_outline('globexonly:x.py')", None, "42704")
    assert "globex" not in error.diag.message_hint


def test_no_tenant_sees_nothing(two, app_connect):
    nobody = app_connect()
    refused(nobody, "select * from codesift.file_outline('app/vault.py')", None, "42501")
    refused(nobody, "select * from codesift.repo_map()", None, "42501")


# --- refs ---------------------------------------------------------------------------------


def test_another_refs_file_is_not_shown_at_this_ref(acme):
    error = refused(
        acme, "select * from codesift.file_outline('app/feature_only.py')", None, "42704"
    )
    assert "ref => 'feature'" in error.diag.message_hint
    assert _names(acme, "app/feature_only.py", ref="feature") == ["feature_flag"]
    assert "feature_only" not in _map_text(acme, token_budget=100_000)
    assert "feature_only" in _map_text(acme, token_budget=100_000, ref="feature")
    refused(acme, "select * from codesift.repo_map(ref => 'nope')", None, "42704", "no indexed ref")


# --- hostile paths --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, says",
    [
        ("../../etc/passwd", "goes up a folder"),
        ("app/../app/vault.py", "goes up a folder"),
        ("/etc/passwd", "is absolute"),
        ("/app/vault.py", "is absolute"),
        ("C:\\Windows\\win.ini", "is absolute"),
        ("~/.ssh/id_rsa", "is absolute"),
    ],
)
def test_paths_outside_the_repository_are_refused(acme, path, says):
    error = refused(acme, "select * from codesift.file_outline(%s)", (path,), "22023", says)
    assert "relative to the repository root" in error.diag.message_hint


def test_control_characters_name_no_file_and_come_back_as_data(acme):
    error = refused(
        acme, "select * from codesift.file_outline(%s)", ("app/\x1b[2Jvault.py",), "42704"
    )
    assert "shared:app/vault.py" in error.diag.message_hint


def test_a_citation_that_leaves_the_repository_is_refused(acme):
    for path in ("shared:/etc/passwd", "shared:../x.py", "shared:app/../../x.py"):
        refused(acme, "select * from codesift.file_outline(%s)", (path,), "22023")


def test_nul_bytes_never_reach_the_function(acme):
    for call, params in (
        ("select * from codesift.file_outline(%s)", ("app/vault.py\x00/etc/passwd",)),
        ("select * from codesift.repo_map(path_prefix => %s)", ("app/\x00",)),
    ):
        with pytest.raises(psycopg.DataError):
            acme.execute(call, params)
    for sql in (
        "select * from codesift.file_outline('app/' || chr(0))",
        "select * from codesift.file_outline(convert_from('\\x00'::bytea, 'UTF8'))",
        "select * from codesift.repo_map(path_prefix => chr(0))",
    ):
        with pytest.raises(psycopg.Error):
            acme.execute(sql)
        assert acme.execute("select 1").fetchone() == (1,)


# --- hostile sizes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, sqlstate, says",
    [
        ("file_outline(null)", "22004", "path must not be null"),
        ("file_outline('')", "22023", "path must not be empty"),
        ("file_outline('  ')", "22023", "path must not be empty"),
        ("file_outline(repeat('a/', 2049))", "22023", "at most 4,096"),
        (f"file_outline(repeat('a', {TEN_MB}))", "22023", "at most 4,096"),
        ("file_outline('app/vault.py', repo => repeat('r', 513))", "22023", "repo is 513"),
        ("file_outline('app/vault.py', ref => repeat('r', 513))", "22023", "ref is 513"),
        ("repo_map(token_budget => 200001)", "22023", "token_budget"),
        (f"repo_map(token_budget => {BIG_INT})", "22023", "token_budget"),
        ("repo_map(token_budget => 0)", "22023", "token_budget"),
        ("repo_map(token_budget => -5)", "22023", "token_budget"),
        ("repo_map(token_budget => null)", "22004", "token_budget must not be null"),
        ("repo_map(path_prefix => repeat('a', 4097))", "22023", "path_prefix is 4,097"),
        (f"repo_map(path_prefix => repeat('a', {TEN_MB}))", "22023", "path_prefix is"),
        ("repo_map(path_prefix => '../')", "22023", "goes up a folder"),
        ("repo_map(path_prefix => '/etc')", "22023", "is absolute"),
        ("repo_map(repo => repeat('r', 513))", "22023", "repo is 513"),
        ("repo_map(ref => repeat('r', 513))", "22023", "ref is 513"),
    ],
)
def test_hostile_sizes_are_refused(acme, call, sqlstate, says):
    error = refused(acme, f"select * from codesift.{call}", None, sqlstate, says)
    assert error.diag.message_hint


def test_the_largest_budget_answers_within_it(acme):
    rows = acme.execute("select tokens from codesift.repo_map(token_budget => 200000)").fetchall()
    assert rows and sum(t for (t,) in rows) <= 200_000


def _owner_as(db, tenant: int) -> psycopg.Connection:
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    return db


def _lower(db, **caps) -> None:
    """Lower navigation.py's caps in this session's backend (the owner may run plpython3u)."""
    body = "\n".join(f"navigation.{k} = {int(v)}" for k, v in caps.items())
    db.execute(f"do $$\nfrom codesift_db import navigation\n{body}\n$$ language plpython3u")


def test_an_outline_returns_at_most_its_cap_and_says_so(db, two):
    conn = _owner_as(db, two["acme"])
    _lower(db, MAX_OUTLINE_ROWS=1)
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    rows = conn.execute("select qualified_name from codesift.file_outline('app/vault.py')")
    assert rows.fetchall() == [("AcmeVault",)]
    assert any("has 2 symbols; the first 1 are returned" in n for n in notices)


def test_the_stored_ranks_are_read_at_most_to_the_cap(db, two):
    conn = _owner_as(db, two["acme"])
    _lower(db, MAX_MAP_FILES=2)
    rows = conn.execute("select path from codesift.repo_map(token_budget => 100000)").fetchall()
    assert len(rows) == 2


def test_the_map_ranked_on_the_fly_reads_at_most_its_caps_and_says_so(db, two):
    conn = _owner_as(db, two["acme"])
    db.execute("update codesift.files set centrality = null")  # as indexed before 026
    _lower(db, MAX_MAP_FILES=2, MAX_MAP_EDGES=0)
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    rows = conn.execute("select path from codesift.repo_map(token_budget => 100000)").fetchall()
    assert sorted(rows) == [("app/__init__.py",), ("app/acme_notes.py",)]  # the first 2 by path
    assert any("over 2 live files" in n for n in notices)
    assert any("over 0 file edges" in n for n in notices)


# --- privileges ---------------------------------------------------------------------------

FUNCTIONS = (
    "codesift.file_outline(text, text, text)",
    "codesift.repo_map(text, text, integer, text)",
)


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


def test_the_app_role_runs_them_and_a_stranger_cannot(db, dsn, two, acme):
    assert _names(acme, "app/vault.py")
    assert acme.execute("select count(*) from codesift.repo_map()").fetchone()[0] >= 1
    role = f"stranger_{uuid.uuid4().hex[:12]}"
    db.execute(f"create role {role} login password 'pw'")
    try:
        with psycopg.connect(make_conninfo(dsn, user=role, password="pw"), autocommit=True) as conn:
            conn.execute(
                "select set_config('app.current_tenant_id', %s, false)", (str(two["acme"]),)
            )
            for call in (
                "select * from codesift.file_outline('app/vault.py')",
                "select * from codesift.repo_map()",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(call)
    finally:
        db.execute(f"drop role {role}")


def test_rank_files_is_the_writers_and_stays_in_its_tenant(db, two, app_connect):
    other = db.execute(
        "select r.id from codesift.repositories as r join codesift.tenants as t"
        " on t.id = r.tenant_id where t.name = 'globex'"
    ).fetchone()[0]
    db.execute("update codesift.files set centrality = 0.5 where repository_id = %s", (other,))
    acme = app_connect(two["acme"])
    with pytest.raises(psycopg.errors.UndefinedObject, match="no repository with id"):
        acme.execute("select codesift.rank_files(%s)", (other,))
    untouched = db.execute(
        "select bool_and(centrality = 0.5) from codesift.files where repository_id = %s", (other,)
    ).fetchone()[0]
    assert untouched
    assert not db.execute(
        "select has_function_privilege('codesift_tenant', 'codesift.rank_files(bigint)',"
        " 'execute') or has_function_privilege('public', 'codesift.rank_files(bigint)',"
        " 'execute')"
    ).fetchone()[0]
    # ids no repository has, at the ends of bigint: the same clean refusal; null: nothing
    for hostile in (2**63 - 1, -(2**63), 0):
        with pytest.raises(psycopg.errors.UndefinedObject, match="no repository with id"):
            acme.execute("select codesift.rank_files(%s)", (hostile,))
    assert acme.execute("select codesift.rank_files(null)").fetchone() == (None,)
    # no tenant set: refused before anything is read
    with pytest.raises(psycopg.Error):
        app_connect().execute("select codesift.rank_files(%s)", (other,))


# --- what the CLI prints --------------------------------------------------------------------


def test_the_cli_prints_markup_exactly_and_escapes_visibly(two, dsn, make_repo):
    root = make_repo(
        {
            "pages/[id].py": "def render_page(ident):\n    return ident\n",
            "banner.py": 'def colorful(x="\x1b[31mRED\x1b]0;pwned\x07\x1b[2J"):\n    return x\n',
        },
        name="render",
    )
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="render", tenant="acme", embed=False, show_progress=False)
    outline = run_codesift(dsn, "outline", "render:banner.py", "--tenant", "acme")
    assert outline.returncode == 0, outline.stderr
    assert "\x1b" not in outline.stdout and "\x07" not in outline.stdout
    assert 'def colorful(x="\\x1b[31mRED\\x1b]0;pwned\\x07\\x1b[2J"):' in outline.stdout
    page = run_codesift(dsn, "outline", "pages/[id].py", "--repo", "render", "--tenant", "acme")
    assert page.stdout.splitlines()[0] == "render:pages/[id].py"
    mapped = run_codesift(dsn, "repo-map", "--repo", "render", "--tenant", "acme")
    assert mapped.returncode == 0, mapped.stderr
    assert "\x1b" not in mapped.stdout and "render:pages/[id].py" in mapped.stdout
    missing = run_codesift(dsn, "outline", "[bold]x[/bold].py", "--tenant", "acme")
    assert missing.returncode == 1 and "'[bold]x[/bold].py'" in missing.stderr
