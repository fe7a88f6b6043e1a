"""The learned ranker against a real database and real git history (issue 33): pairs mined
from the commits before the indexed one (the right gold, incremental, bounded, never a
commit after the ref), the model stored per tenant (another tenant neither reads nor uses
it), the stage off without a model (identical rows), on with one (a deterministic new
order), and a model that cannot be read (the stage off, a degraded notice, no error)."""

import json
import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from codesift import history
from codesift.errors import CodesiftError
from codesift.indexer import index_repository
from codesift.learn import learn
from codesift.tenants import use_tenant
from codesift_db.ranker.model import FORMAT, VERSION

from tests.conftest import commit, git, write_files

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
MATH_PY = (
    "def alpha(x):\n    return round(x, 2)\n\n\n"
    "def beta(items):\n    return sorted(items)\n\n\n"
    "class Gamma:\n"
    "    def delta(self, n):\n        return n * 2\n\n"
    "    def epsilon(self):\n        return 'eps'\n"
)
TEXT_PY = "def render(value):\n    return str(value)\n\n\ndef parse(text):\n    return int(text)\n"
TEST_PY = "from pkg.math import alpha\n\n\ndef test_alpha():\n    assert alpha(1.234) == 1.23\n"
QUESTION = "alpha rounds the value wrong; delta doubles; render and parse text"
EXPLAIN = (
    "select path, start_line, symbol, score, decision, packed, why from explain_context("
    "%s, repo => 'shop', ref => %s) order by candidate"
)


def _edit(root, path, old, new):
    text = (root / path).read_text()
    assert old in text
    (root / path).write_text(text.replace(old, new))


@pytest.fixture
def shop(make_repo):
    """A repository with a history: (root, {name: sha}); the ref to index is `indexed`."""
    root = make_repo(
        {"pkg/math.py": MATH_PY, "pkg/text.py": TEXT_PY, "tests/test_math.py": TEST_PY},
        name="shop",
    )
    shas = {"initial": git(root, "rev-parse", "HEAD").strip()}
    _edit(root, "pkg/math.py", "round(x, 2)", "round(x, 3)")
    _edit(root, "tests/test_math.py", "1.23\n", "1.234\n")
    shas["alpha"] = commit(root, "Fix alpha rounding\n\nRound to three places.\n")
    _edit(root, "pkg/math.py", "return n * 2", "return n + n")
    shas["delta"] = commit(root, "Gamma.delta adds instead of multiplying")
    write_files(root, {"README.md": "# shop\n"})
    shas["docs"] = commit(root, "Add a readme")
    _edit(root, "pkg/text.py", "return str(value)", "return repr(value)")
    shas["indexed"] = commit(root, "render uses repr")
    _edit(root, "pkg/text.py", "return int(text)", "return float(text)")
    shas["after"] = commit(root, "parse reads floats")  # after the indexed ref
    return root, shas


def _index(dsn, root, ref, tenant="acme"):
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="shop", tenant=tenant, ref=ref, show_progress=False)


def _loader(dsn, tenant="acme"):
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("set role codesift_loader")
    return conn, use_tenant(conn, tenant)


def _repo_id(conn, tenant_id, ref):
    return conn.execute(
        "select id from codesift.repositories where tenant_id = %s and ref = %s",
        (tenant_id, ref),
    ).fetchone()[0]


def _pairs(conn, repo_id):
    return {
        sha: gold
        for sha, gold in conn.execute(
            "select commit_sha, gold from codesift.history_pairs where repository_id = %s",
            (repo_id,),
        )
    }


def test_mining_finds_the_changed_definitions_before_the_ref_only(dsn, shop):
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref)
    conn, tenant = _loader(dsn)
    repo = _repo_id(conn, tenant, ref)
    summary = history.mine(conn, root, tenant, repo, ref)
    pairs = _pairs(conn, repo)
    # every commit before the ref, none after it and not the ref's own
    assert set(pairs) == {shas["initial"], shas["alpha"], shas["delta"], shas["docs"]}
    assert summary.commits_read == 4 and summary.with_gold == 2 and summary.kept == 4
    # the definitions changed, by their lines in the parent's version; the test left out
    assert [(g["path"], g["symbol"]) for g in pairs[shas["alpha"]]] == [("pkg/math.py", "alpha")]
    assert [g["symbol"] for g in pairs[shas["delta"]]] == ["Gamma.delta"]
    assert pairs[shas["docs"]] == [] and pairs[shas["initial"]] == []
    question = conn.execute(
        "select question from codesift.history_pairs where commit_sha = %s", (shas["alpha"],)
    ).fetchone()[0]
    assert question == "Fix alpha rounding\n\nRound to three places."


def test_mining_is_incremental_and_bounded(dsn, shop):
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref)
    conn, tenant = _loader(dsn)
    repo = _repo_id(conn, tenant, ref)
    first = history.mine(conn, root, tenant, repo, ref, limit=2)
    assert first.commits_read == 2 and first.kept == 2
    assert set(_pairs(conn, repo)) == {shas["delta"], shas["docs"]}  # the newest two
    again = history.mine(conn, root, tenant, repo, ref, limit=10)
    assert again.already == 2 and again.commits_read == 2 and again.kept == 4
    assert history.mine(conn, root, tenant, repo, ref, limit=10).commits_read == 0
    trimmed = history.mine(conn, root, tenant, repo, ref, limit=1)
    assert trimmed.kept == 1 and set(_pairs(conn, repo)) == {shas["docs"]}


@pytest.mark.parametrize("limit", [0, -5, history.MAX_LIMIT + 1, 10**12])
def test_unbounded_mining_is_refused(dsn, shop, limit):
    root, shas = shop
    _index(dsn, root, shas["indexed"])
    conn, tenant = _loader(dsn)
    repo = _repo_id(conn, tenant, shas["indexed"])
    with pytest.raises(CodesiftError, match="--commits"):
        history.mine(conn, root, tenant, repo, shas["indexed"], limit=limit)
    with pytest.raises(CodesiftError, match="--questions"):
        learn(conn, root, "shop", "acme", shas["indexed"], questions=10**9)


def _explain(conn, ref, off=None):
    conn.execute("select set_config('codesift.retrieval_off', %s, false)", (off or "",))
    rows = conn.execute(EXPLAIN, (QUESTION, ref)).fetchall()
    return [(*r[:6], {k: v for k, v in r[6].items() if k != "stage_ms"}) for r in rows]


def _store_model(conn, tenant, repo, model):
    conn.execute(
        "insert into codesift.ranker_models"
        " (tenant_id, repository_id, model, trained_through, pairs) values (%s, %s, %s, %s, 1)"
        " on conflict (tenant_id, repository_id) do update set model = excluded.model",
        (tenant, repo, json.dumps(model), "a" * 40),
    )


BIGGEST_FIRST = {
    "format": FORMAT,
    "version": VERSION,
    "features": ["log_lines", "is_file"],
    "mean": [0.0, 0.0],
    "scale": [1.0, 1.0],
    "weights": [5.0, -20.0],  # the longest definition first, whole files last
}


def _search(conn, ref):
    """hybrid_search's rows: stage 1, whose last stage is the ranker."""
    return conn.execute(
        "select path, start_line, symbol, kind, score from hybrid_search(%s, repo => 'shop',"
        " ref => %s, k => 100) order by rank",
        (QUESTION, ref),
    ).fetchall()


def _files(rows):
    """The files of ranked rows in the order of their best candidates."""
    return list(dict.fromkeys(r[0] for r in rows))


def test_stage_is_off_without_a_model_and_on_with_one(dsn, shop):
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref)
    conn, tenant = _loader(dsn)
    repo = _repo_id(conn, tenant, ref)
    without = _explain(conn, ref)
    searched = _search(conn, ref)
    assert without and searched, "the question finds candidates"
    # no model: the same rows as with the stage switched off
    assert without == _explain(conn, ref, off="ranker,evidence")
    _store_model(conn, tenant, repo, BIGGEST_FIRST)
    conn.execute("select set_config('codesift.retrieval_off', '', false)")
    ranked = _search(conn, ref)
    assert ranked == _search(conn, ref)  # deterministic
    # inside each file: the longest definition first, the whole file last
    math = [r for r in ranked if r[0] == "pkg/math.py"]
    assert math[0][2] == "Gamma"
    for path in {r[0] for r in ranked}:
        is_file = [r[3] == "file" for r in ranked if r[0] == path]
        assert is_file == sorted(is_file), path
    # no file moves: the files in the order of their best candidates, as without the model
    assert _files(ranked) == _files(searched)
    # the same candidates, and each file's scores as without the model, in a new order
    assert sorted(repr(r[:4]) for r in ranked) == sorted(repr(r[:4]) for r in searched)
    assert sorted((r[0], r[4]) for r in ranked) == sorted((r[0], r[4]) for r in searched)
    assert [r[:3] for r in ranked] != [r[:3] for r in searched]
    with_model = _explain(conn, ref)
    assert with_model == _explain(conn, ref)
    assert [r[:3] for r in with_model] != [r[:3] for r in without]
    # switched off, the model changes nothing
    assert _explain(conn, ref, off="ranker,evidence") == without
    # pack_context packs in the new order too
    conn.execute("select set_config('codesift.retrieval_off', '', false)")
    packed = conn.execute(
        "select path, start_line, symbol from pack_context(%s, repo => 'shop', ref => %s)"
        " order by rank",
        (QUESTION, ref),
    ).fetchall()
    assert packed == [r[:3] for r in with_model if r[5]]
    assert packed != [r[:3] for r in without if r[5]]


@pytest.mark.parametrize(
    "model",
    [
        {"format": "other"},
        {**BIGGEST_FIRST, "weights": [1.0]},
        {**BIGGEST_FIRST, "features": ["drop table x", "is_file"]},
        {**BIGGEST_FIRST, "scale": [0, 1]},
        [1, 2, 3],
    ],
)
def test_a_model_that_cannot_be_read_leaves_the_stage_off_and_says_so(dsn, shop, model):
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref)
    conn, tenant = _loader(dsn)
    repo = _repo_id(conn, tenant, ref)
    without = _explain(conn, ref)
    _store_model(conn, tenant, repo, model)
    notices: list[str] = []
    conn.add_notice_handler(lambda n: notices.append(n.message_primary))
    broken = _explain(conn, ref)
    assert any("shop's stored model) cannot be used" in n for n in notices)
    assert [r[:6] for r in broken] == [r[:6] for r in without]
    codes = {d["code"] for d in broken[0][6]["degraded"]}
    assert "ranker_model" in codes


def test_the_model_is_the_tenants_own(dsn, db, shop, app_connect):
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref, tenant="acme")
    _index(dsn, root, ref, tenant="globex")
    acme_conn, acme = _loader(dsn, "acme")
    globex_conn, globex = _loader(dsn, "globex")
    acme_repo, globex_repo = _repo_id(acme_conn, acme, ref), _repo_id(globex_conn, globex, ref)
    before = _explain(globex_conn, ref)
    _store_model(acme_conn, acme, acme_repo, BIGGEST_FIRST)
    history.mine(acme_conn, root, acme, acme_repo, ref)
    # globex neither sees acme's model or pairs nor ranks by them
    app = app_connect(globex)
    assert app.execute("select count(*) from ranker_models").fetchone()[0] == 0
    assert app.execute("select count(*) from history_pairs").fetchone()[0] == 0
    assert _explain(globex_conn, ref) == before
    # nor can it write a model for acme's repository, or for its own under acme's id
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _store_model(app, acme, acme_repo, BIGGEST_FIRST)
    with pytest.raises(psycopg.Error):
        _store_model(app, globex, acme_repo, BIGGEST_FIRST)
    # a per-tenant read-only role reads, never writes
    assert db.execute(
        "select has_table_privilege('codesift_tenant', 'codesift.ranker_models', 'insert')"
    ).fetchone() == (False,)
    assert globex_repo != acme_repo


def test_learn_trains_and_stores_a_model_from_history(dsn, shop):
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref)
    conn, tenant = _loader(dsn)
    summary = learn(conn, root, "shop", "acme", ref, commits=50, questions=50)
    assert summary.mined.commits_read == 4 and summary.questions == 2
    assert summary.examples >= 1 and summary.stored and summary.model_bytes > 0
    row = conn.execute(
        "select trained_through, pairs, model->>'format' from codesift.ranker_models"
    ).fetchone()
    assert row == (ref, summary.examples, FORMAT)
    # a checkout that lacks the indexed commit cannot be mined for it
    conn.execute("update codesift.repositories set indexed_commit = %s", ("f" * 40,))
    with pytest.raises(CodesiftError, match="does not hold commit"):
        learn(conn, root, "shop", "acme", ref)


def test_a_session_model_ranks_that_session_only_and_hostile_ones_are_refused(dsn, shop):
    """codesift.ranker_model (evaluation: a database without stored models) ranks the
    session's own answers; garbage in it leaves the stage off with a notice."""
    root, shas = shop
    ref = shas["indexed"]
    _index(dsn, root, ref)
    conn, _ = _loader(dsn)
    other, _ = _loader(dsn)
    without = _explain(conn, ref)
    conn.execute(
        "select set_config('codesift.ranker_model', %s, false)", (json.dumps(BIGGEST_FIRST),)
    )
    ranked = _explain(conn, ref)
    math = [r for r in _search(conn, ref) if r[0] == "pkg/math.py"]
    assert math[0][2] == "Gamma" and ranked != without
    assert _explain(other, ref) == without  # another session: no model
    for hostile in ("{not json", "x" * 300_000, json.dumps({**BIGGEST_FIRST, "weights": [1]})):
        conn.execute("select set_config('codesift.ranker_model', %s, false)", (hostile,))
        notices: list[str] = []
        conn.add_notice_handler(lambda n, keep=notices: keep.append(n.message_primary))
        rows = _explain(conn, ref)
        assert [r[:6] for r in rows] == [r[:6] for r in without]
        assert any("codesift.ranker_model) cannot be used" in n for n in notices)


def test_codesift_learn_on_the_command_line(dsn, shop):
    root, shas = shop
    _index(dsn, root, shas["indexed"])
    env = {**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "200"}
    ran = subprocess.run(
        [CODESIFT, "learn", str(root), "--tenant", "acme", "--ref", shas["indexed"]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert "mined 4 new commits (2 changed definitions" in ran.stderr
    assert "stored the model" in ran.stderr
    refused = subprocess.run(
        [CODESIFT, "learn", str(root), "--tenant", "acme", "--commits", "999999999"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert refused.returncode != 0 and "--commits is a number of commits" in refused.stderr
    assert "Traceback" not in refused.stderr
