"""Refs: many branches and commits of one repository in one index; every query asks at
a ref. Real git repositories with two branches that differ in three files."""

from pathlib import Path

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift.tenants import forget_repository

from tests.conftest import commit, git, write_files
from tests.security.two_tenants import counts
from tests.watching import run_codesift as _cli

MAIN = {
    "shop/cart.py": "def cart_total(items):\n    return sum(i.price for i in items)  # mainline\n",
    "shop/tax.py": "def tax_rate(region):\n    return 0.2  # mainline\n",
    "shop/ship.py": "def shipping_cost(weight):\n    return 5 + weight  # mainline\n",
    "shop/common.py": "def money(value):\n    return round(value, 2)\n",
    "README.md": "# shop\n\nA small shop.\n",
}
FEATURE = {
    "shop/cart.py": "def cart_total(items):\n    return sum(i.price * i.qty for i in items)"
    "  # featurework\n",
    "shop/tax.py": "def tax_rate(region):\n    return {'eu': 0.2}.get(region, 0.1)"
    "  # featurework\n",
    "shop/ship.py": "def shipping_cost(weight):\n    return 4 + weight  # featurework\n",
}


@pytest.fixture
def shop(make_repo) -> tuple[Path, str, str]:
    """A repository with branches main and feature; (root, main commit, feature commit)."""
    root = make_repo(MAIN, name="shop")
    main = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "feature")
    write_files(root, FEATURE)
    feature = commit(root, "feature work")
    git(root, "checkout", "-q", "main")
    return root, main, feature


def _index(dsn, root, ref, tenant="acme", **kw):
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        return index_repository(
            conn, root, name="shop", tenant=tenant, ref=ref, show_progress=False, **kw
        )


def _as_tenant(dsn, tenant="acme") -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("set role codesift_loader")
    row = conn.execute("select id from codesift.tenants where name = %s", (tenant,)).fetchone()
    assert row is not None
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
    return conn


def _pack(conn, question, **kw):
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    return conn.execute(
        "select path, ref, indexed_commit, text from codesift.pack_context(%(q)s, repo => 'shop'"
        + (", " + args if args else "")
        + ", query_embedding => null)",
        {"q": question, **kw},
    ).fetchall()


def test_each_ref_answers_with_its_own_versions(db, dsn, shop):
    root, main, feature = shop
    _index(dsn, root, "main", embed=False)
    _index(dsn, root, "feature", embed=False)
    question = "cart_total tax_rate shipping_cost"
    with _as_tenant(dsn) as conn:
        for ref, sha, mine, theirs in (
            ("main", main, "mainline", "featurework"),
            ("feature", feature, "featurework", "mainline"),
        ):
            rows = _pack(conn, question, ref=ref)
            changed = [r for r in rows if r[0] in FEATURE]
            assert {r[0] for r in changed} == set(FEATURE), rows
            assert all(r[1] == ref and r[2] == sha for r in rows)
            assert all(mine in r[3] and theirs not in r[3] for r in changed)
        # no ref: the repository's default ref, the first one indexed
        assert {r[1] for r in _pack(conn, question)} == {"main"}


def test_switching_refs_embeds_nothing_new(db, dsn, shop):
    root, main, _ = shop
    first = _index(dsn, root, "main").embedded
    second = _index(dsn, root, "feature").embedded
    assert first.computed > 0
    assert second.computed == 3 * 2  # three changed files: one function and one file each
    again = [_index(dsn, root, ref) for ref in ("main", "feature", "main")]
    assert all(s.unchanged and s.embedded.computed == 0 for s in again)
    git(root, "tag", "v1", main)
    tagged = _index(dsn, root, "v1")  # a new ref at a known tree: rows, no vectors
    assert not tagged.unchanged and tagged.new_blobs == 0 and tagged.embedded.computed == 0


def test_forgetting_a_ref_removes_exactly_what_no_other_ref_uses(db, dsn, shop):
    root, _, _ = shop
    _index(dsn, root, "main")
    _index(dsn, root, "feature")
    _index(dsn, root, "main", tenant="only-main")  # the same repository at main alone
    ids = dict(db.execute("select name, id from codesift.tenants").fetchall())

    with psycopg.connect(dsn, autocommit=True) as conn:
        removed = forget_repository(conn, "acme", "shop", "feature")
    assert removed == 3  # the three blobs only feature had
    assert counts(db, ids["acme"]) == counts(db, ids["only-main"])
    stats = (
        "select tier, term, df from codesift.term_stats where tenant_id = %s order by 1, 2",
        "select tier, docs, total_terms from codesift.corpus_stats where tenant_id = %s",
    )
    for sql in stats:
        assert (
            db.execute(sql, (ids["acme"],)).fetchall()
            == db.execute(sql, (ids["only-main"],)).fetchall()
        )


def test_forgetting_the_default_ref_makes_another_the_default(db, dsn, shop):
    root, _, feature = shop
    _index(dsn, root, "main", embed=False)
    _index(dsn, root, "feature", embed=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        forget_repository(conn, "acme", "shop", "main")
    with _as_tenant(dsn) as conn:
        rows = _pack(conn, "cart_total")
    assert rows and {(r[1], r[2]) for r in rows} == {("feature", feature)}


def test_an_unknown_ref_is_refused_with_the_indexed_ones(db, dsn, shop):
    root, _, _ = shop
    _index(dsn, root, "main", embed=False)
    with _as_tenant(dsn) as conn:
        with pytest.raises(psycopg.errors.UndefinedObject, match="no indexed ref 'nope'") as err:
            _pack(conn, "cart_total", ref="nope")
        assert "main" in (err.value.diag.message_hint or "")
        with pytest.raises(psycopg.errors.UndefinedObject, match="no indexed ref"):
            conn.execute("select * from codesift.find_symbol('cart_total', ref => 'nope')")


def test_another_tenants_ref_is_unknown(db, dsn, shop):
    root, _, _ = shop
    _index(dsn, root, "main", embed=False)
    _index(dsn, root, "feature", tenant="globex", embed=False)
    with _as_tenant(dsn, "acme") as conn:
        with pytest.raises(psycopg.errors.UndefinedObject, match="no indexed ref 'feature'"):
            _pack(conn, "cart_total", ref="feature")


def test_the_worktree_is_its_own_ref(db, dsn, shop):
    root, main, _ = shop
    _index(dsn, root, "HEAD", embed=False)
    write_files(root, {"shop/cart.py": "def cart_total(items):\n    return 0  # uncommitted\n"})
    summary = _index(dsn, root, "HEAD", worktree=True, embed=False)
    assert summary.ref == "HEAD:worktree"
    with _as_tenant(dsn) as conn:
        committed = _pack(conn, "cart_total")
        uncommitted = _pack(conn, "cart_total", ref="HEAD:worktree")
    assert any("mainline" in r[3] for r in committed)
    assert not any("uncommitted" in r[3] for r in committed)
    assert any("uncommitted" in r[3] for r in uncommitted)


def test_the_cli_indexes_refs_and_all_branches_and_forgets_one(db, dsn, shop):
    root, _, _ = shop
    git(root, "branch", "hotfix", "main")
    result = _cli(dsn, "index", str(root), "--tenant", "acme", "--ref", "main", "--ref", "feature")
    assert result.returncode == 0, result.stderr
    assert "shop @ main" in result.stderr and "shop @ feature" in result.stderr
    result = _cli(dsn, "index", str(root), "--tenant", "acme", "--all-branches")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stderr and "shop @ hotfix" in result.stderr
    refs = db.execute("select ref from codesift.repositories order by ref").fetchall()
    assert [r[0] for r in refs] == ["feature", "hotfix", "main"]

    status = _cli(dsn, "status", "--tenant", "acme")
    assert status.returncode == 0 and "hotfix" in status.stdout and "default" in status.stdout
    gone = _cli(dsn, "forget", "shop", "--tenant", "acme", "--ref", "hotfix", "--yes")
    assert gone.returncode == 0, gone.stderr
    refs = db.execute("select ref from codesift.repositories order by ref").fetchall()
    assert [r[0] for r in refs] == ["feature", "main"]
    missing = _cli(dsn, "forget", "shop", "--tenant", "acme", "--ref", "hotfix", "--yes")
    assert missing.returncode == 1 and "no repository 'shop' at ref 'hotfix'" in missing.stderr


@pytest.mark.parametrize("ref", ["x" * 600, "bad\x1bname", "../../etc"])
def test_hostile_ref_names_are_refused_cleanly(db, dsn, shop, ref):
    root, _, _ = shop
    result = _cli(dsn, "index", str(root), "--tenant", "acme", "--ref", ref)
    assert result.returncode == 1 and "error:" in result.stderr
    assert "Traceback" not in result.stderr
    assert db.execute("select count(*) from codesift.repositories").fetchone() == (0,)


def test_an_oversized_ref_argument_is_refused(db, dsn, shop):
    root, _, _ = shop
    _index(dsn, root, "main", embed=False)
    with _as_tenant(dsn) as conn:
        for call in (
            "select * from codesift.pack_context('cart', ref => %s)",
            "select * from codesift.find_symbol('cart_total', ref => %s)",
        ):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="ref"):
                conn.execute(call, ("r" * 100_000,))
