"""diff_context when the tests that reach a change do not fit the budget whole: each one
left out is listed by its lines and name (diff_listing.py), so that every test reaching
the change appears in the pack once, body or line, under the exact budget; with room for
every body nothing is listed. A real repository with 40 tests of one changed function,
indexed at two refs."""

import re

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

TESTS_A, TESTS_B = 28, 12
CORE_BASE = "def target(value):\n    return value + 1\n"
CORE_HEAD = "def target(value):\n    return value + 2\n"
ENTRY = re.compile(r"^(\d+)-(\d+) (\S+)$")


def _tests(prefix: str, n: int) -> str:
    """n tests, each calling target among a dozen lines of its own."""
    out = ["from pkg.core import target\n"]
    for i in range(n):
        body = "".join(f"    v{j} = [{j}, '{prefix}{i}', {j * i}]\n" for j in range(10))
        out.append(f"\n\ndef test_{prefix}{i}():\n{body}    assert target(v0[0]) == {i}\n")
    return "".join(out)


def _spans(text: str) -> dict[str, tuple[int, int]]:
    """Each test's lines, from the file's text (not from our own extraction)."""
    lines = text.split("\n")
    spans, name, start = {}, None, 0
    for no, line in enumerate(lines, 1):
        m = re.match(r"def (test_\w+)\(", line)
        if m or no == len(lines):
            if name:
                end = no - 1 if m else no
                while not lines[end - 1].strip():
                    end -= 1
                spans[name] = (start, end)
            if m:
                name, start = m.group(1), no
    return spans


@pytest.fixture
def many(db, dsn, make_repo, snapshots):
    """many at tags base and head for t1 (indexed once per session, copied into this
    test's database): (tenant id, {(test file, test name): span})."""
    snapshots.load("diff_listing", _index_many, dsn, make_repo)
    spans = {}
    for path in ("tests/test_a.py", "tests/test_b.py"):
        spans.update({(path, n): s for n, s in _spans(MANY[path]).items()})
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    return tenant, spans


MANY = {
    "pkg/__init__.py": "",
    "pkg/core.py": CORE_BASE,
    "tests/test_a.py": _tests("a", TESTS_A),
    "tests/test_b.py": _tests("b", TESTS_B),
}


def _index_many(dsn, make_repo) -> None:
    root = make_repo(MANY, name="many")
    git(root, "tag", "base")
    write_files(root, {"pkg/core.py": CORE_HEAD})
    commit(root, "target adds two")
    git(root, "tag", "head")
    with psycopg.connect(dsn) as conn:
        for ref in ("base", "head"):
            index_repository(
                conn, root, name="many", tenant="t1", ref=ref, embed=False, show_progress=False
            )


def _context(conn, budget):
    notices: list[str] = []
    conn.add_notice_handler(lambda n: notices.append(n.message_primary))
    rows = conn.execute(
        "select role, path, symbol, start_line, end_line, tokens, citation, text"
        " from codesift.diff_context('many', 'base', 'head', %s)",
        (budget,),
    ).fetchall()
    return rows, notices


def _held(rows) -> dict[tuple[str, str], tuple[int, int]]:
    """Each test the pack names, as a body or a listed line: (path, name) -> lines."""
    held: dict[tuple[str, str], tuple[int, int]] = {}
    for role, path, symbol, start, end, _, _, text in rows:
        if role == "test":
            assert (path, symbol) not in held
            held[(path, symbol)] = (start, end)
        elif role == "test_list":
            for line in text.split("\n")[1:]:
                a, b, name = ENTRY.match(line).groups()
                assert (path, name) not in held, "listed once, never beside its body"
                held[(path, name)] = (int(a), int(b))
    return held


# budgets whose listings hold every test left out whole, and smaller ones that hold some
@pytest.mark.parametrize(
    "budget, everyone", [(600, False), (1200, False), (1500, True), (2500, True)]
)
def test_tests_that_do_not_fit_whole_are_listed_by_line_and_name(
    app_connect, many, budget, everyone
):
    tenant, spans = many
    conn = app_connect(tenant)
    rows, notices = _context(conn, budget)
    assert sum(r[5] for r in rows) <= budget
    assert rows[0][0] == "change" and rows[0][2] == "target"
    held = _held(rows)
    bodies = [r for r in rows if r[0] == "test"]
    # the tests reaching the change are in the pack once each, at their own lines: all of
    # them where the budget allows, else many more than the bodies alone
    if everyone:
        assert set(held) == set(spans)
    else:
        assert set(held) < set(spans) and len(held) >= 2 * len(bodies)
    for key, (a, b) in held.items():
        lo, hi = spans[key]
        assert lo <= a <= b <= hi, key  # a body may be cut to the lines around its call
    listings = [r for r in rows if r[0] == "test_list"]
    assert listings and all(r[2] is None for r in listings)
    named = [n for n in notices if "listed by name" in n]
    assert len(named) == 1 and ("did not fit in token_budget" in named[0]) != everyone
    for _, path, _, start, end, _, citation, text in listings:
        assert citation == f"many:{path}:{start}-{end}" and text.startswith(f"# {citation} (")
        assert "not packed: lines and name of each" in text.split("\n")[0]
    # the bodies come first, the listings after them
    roles = [r[0] for r in rows]
    assert roles.index("test_list") > max(i for i, r in enumerate(roles) if r == "test")


def test_with_room_for_every_body_nothing_is_listed(app_connect, many):
    tenant, spans = many
    rows, _ = _context(app_connect(tenant), 40_000)
    assert not [r for r in rows if r[0].endswith("_list")]
    assert {(r[1], r[2]) for r in rows if r[0] == "test"} == set(spans)


def test_a_budget_too_small_for_any_listing_stays_within_it(app_connect, many):
    tenant, _ = many
    conn = app_connect(tenant)
    for budget in (1, 30, 60, 120):
        rows, _ = _context(conn, budget)
        assert sum(r[5] for r in rows) <= budget


def test_a_listing_names_only_the_tenants_own_tests(db, dsn, make_repo, app_connect, many):
    """Another tenant's repository of the same name, at refs of the same names, with other
    tests: each tenant's listings name its own tests only."""
    tenant, spans = many
    root = make_repo(
        {"pkg/__init__.py": "", "pkg/core.py": CORE_BASE, "tests/test_z.py": _tests("z", 30)},
        name="many-t2",
    )
    git(root, "tag", "base")
    write_files(root, {"pkg/core.py": CORE_HEAD})
    commit(root, "target adds two")
    git(root, "tag", "head")
    with psycopg.connect(dsn) as conn:
        for ref in ("base", "head"):
            index_repository(
                conn, root, name="many", tenant="t2", ref=ref, embed=False, show_progress=False
            )
    other = db.execute("select id from codesift.tenants where name = 't2'").fetchone()[0]
    mine, _ = _context(app_connect(tenant), 900)
    theirs, _ = _context(app_connect(other), 900)
    assert {p for p, _ in _held(mine)} <= {"tests/test_a.py", "tests/test_b.py"}
    assert {p for p, _ in _held(theirs)} == {"tests/test_z.py"}
    assert all(name.startswith("test_z") for _, name in _held(theirs))
    assert any(r[0] == "test_list" for r in theirs) and any(r[0] == "test_list" for r in mine)
