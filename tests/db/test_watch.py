"""`codesift watch`: the real CLI following a real git working tree into a real database.

Every wait polls with a generous deadline; nothing is timed. Ordering stands in for
"never": an ignored or out-of-repository file is written before a marker file, and once
the marker is queryable the earlier events have been handled (watch handles batches
in order), so its absence then means it was never indexed.
"""

import os
import shutil
from pathlib import Path

from tests.conftest import commit, git, write_files
from tests.watching import Asker, Proxy, Watch, live_paths, poll, stored_text

A_PY = "def alpha_value():\n    return 1\n"
B_PY = "from pkg.a import alpha_value\n\n\ndef beta_caller():\n    return alpha_value()\n"


def _repo(make_repo) -> Path:
    return make_repo(
        {"pkg/__init__.py": "", "pkg/a.py": A_PY, "pkg/b.py": B_PY, ".gitignore": "secret*.txt\n"}
    )


def test_watched_edits_deletions_and_renames_reach_pack_context(
    db, dsn, make_repo, app_connect, tmp_path
):
    root = _repo(make_repo)
    ask = Asker(app_connect, db)
    with Watch(dsn, root, "--no-embed", log=tmp_path / "watch.log") as w:
        w.wait_for("indexed repo")
        assert "pkg/b.py" in live_paths(db, "repo")

        # an edit: a new function becomes what pack_context answers with
        (root / "pkg/a.py").write_text(A_PY + "\n\ndef zanzibar_quokka_total():\n    return 2\n")
        hits = poll(
            "the edited function in pack_context",
            lambda: [
                r
                for r in ask("zanzibar quokka total", "repo")
                if "def zanzibar_quokka_total" in r[1]
            ],
            log=w.log,
        )
        assert hits[0][0] == "pkg/a.py"

        # a deletion: the path stops being live and its symbol is no longer packed
        (root / "pkg/b.py").unlink()
        poll("pkg/b.py no longer live", lambda: "pkg/b.py" not in live_paths(db, "repo"), log=w.log)
        assert not [r for r in ask("beta caller", "repo") if "def beta_caller" in r[1]]
        assert (
            db.execute(
                "select count(*) from codesift.file_edges where source_path = 'pkg/b.py'"
            ).fetchone()[0]
            == 0
        ), "edges of a deleted file"

        # a rename: the old path goes, the new one comes, in one tree update
        os.rename(root / "pkg/a.py", root / "pkg/renamed.py")
        poll(
            "the rename",
            lambda: (
                (live := live_paths(db, "repo"))
                and "pkg/renamed.py" in live
                and "pkg/a.py" not in live
            ),
            log=w.log,
        )
        # a folder renamed away and a new folder moved in
        os.rename(root / "pkg", root / "lib")
        poll(
            "the folder rename",
            lambda: (
                (live := live_paths(db, "repo"))
                and "lib/renamed.py" in live
                and not any(p.startswith("pkg/") for p in live)
            ),
            log=w.log,
        )
    assert w.proc.returncode == 0, w.text()
    assert "stopped watching" in w.text() and "Traceback" not in w.text()


def test_ignored_and_out_of_repository_files_are_never_read(db, dsn, make_repo, tmp_path):
    root = _repo(make_repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("def outside_leak_marker():\n    return 'outside-secret'\n")
    with Watch(dsn, root, "--no-embed", log=tmp_path / "watch.log") as w:
        w.wait_for("indexed repo")
        (root / "secret_keys.txt").write_text("gitignored-secret-value\n")  # .gitignore
        (root / ".codesiftignore").write_text("private/\n")
        w.wait_for("indexed repo", 2)  # an ignore file changed: the full incremental index
        (root / "private").mkdir()
        (root / "private/notes.py").write_text("codesiftignored_secret = 1\n")
        os.symlink(outside, root / "linked_dir")  # a folder outside the repository
        os.symlink(outside / "leak.py", root / "linked_file.py")
        (root / "marker.py").write_text("def marker_after_all():\n    return 3\n")
        poll("the marker indexed", lambda: "marker.py" in live_paths(db, "repo"), log=w.log)
        # a file written into the linked folder: its events come through the link
        (outside / "later.py").write_text("outside_later_secret = 1\n")
        (root / "marker2.py").write_text("second_marker = 1\n")
        poll("the second marker", lambda: "marker2.py" in live_paths(db, "repo"), log=w.log)
    for needle in (
        "gitignored-secret-value",
        "codesiftignored_secret",
        "outside-secret",
        "outside_later_secret",
    ):
        assert stored_text(db, needle) == 0, needle
    live = live_paths(db, "repo")
    assert not any(p.startswith(("linked_dir", "private/", "secret")) for p in live)
    assert "linked_file.py" not in live


def test_a_vendored_package_in_the_working_tree_is_left_out_until_it_is_ours(
    db, dsn, make_repo, tmp_path
):
    """A package copied into another with a __version__ of its own is skipped as `index`
    skips it (ignore.vendored_packages); once its __init__.py no longer says so, the
    watcher re-reads the rules and indexes it."""
    root = _repo(make_repo)
    with Watch(dsn, root, "--no-embed", log=tmp_path / "watch.log") as w:
        w.wait_for("indexed repo")
        # copied in at once: one event for the folder, which holds an __init__.py
        copy = tmp_path / "netlib"
        copy.mkdir()
        (copy / "__init__.py").write_text('__version__ = "2.4.1"\n')
        (copy / "pool.py").write_text("vendored_pool_marker = 1\n")
        os.rename(copy, root / "pkg/netlib")
        w.wait_for("indexed repo", 2)  # an __init__.py came: the full incremental index
        (root / "marker.py").write_text("def marker_after_vendoring():\n    return 3\n")
        poll("the marker indexed", lambda: "marker.py" in live_paths(db, "repo"), log=w.log)
        assert not any(p.startswith("pkg/netlib/") for p in live_paths(db, "repo"))
        assert stored_text(db, "vendored_pool_marker") == 0

        (root / "pkg/netlib/__init__.py").write_text("from .pool import *\n")
        poll(
            "the package indexed once it is ours",
            lambda: "pkg/netlib/pool.py" in live_paths(db, "repo"),
            log=w.log,
        )
    assert w.proc.returncode == 0, w.text()


def test_commit_and_checkout_under_watch_record_the_new_head(db, dsn, make_repo, tmp_path):
    root = _repo(make_repo)
    with Watch(dsn, root, "--no-embed", log=tmp_path / "watch.log") as w:
        w.wait_for("indexed repo")
        git(root, "checkout", "-q", "-b", "feature")
        write_files(root, {"pkg/feature.py": "def on_feature_branch():\n    return 1\n"})
        head = commit(root, "feature")
        poll(
            "the new commit recorded",
            lambda: (
                db.execute(
                    "select indexed_commit from codesift.repositories where name = 'repo'"
                ).fetchone()[0]
                == head
            ),
            log=w.log,
        )
        git(root, "checkout", "-q", "main")
        poll(
            "the branch's file gone after checkout",
            lambda: "pkg/feature.py" not in live_paths(db, "repo"),
            log=w.log,
        )


def test_embeddings_follow_the_edit(db, dsn, make_repo, app_connect, tmp_path):
    root = _repo(make_repo)

    conns = []

    def backlog() -> int | None:
        tid = db.execute("select id from codesift.tenants where name = 'default'").fetchone()
        if tid is None:
            return None
        conns[:] = conns or [app_connect(tid[0])]
        row = (
            conns[0]
            .execute("select embedding_backlog from codesift.repository_status('repo')")
            .fetchone()
        )
        return None if row is None else row[0]

    with Watch(dsn, root, log=tmp_path / "watch.log") as w:
        w.wait_for("embedded")
        (root / "pkg/a.py").write_text(A_PY + "\n\ndef embedded_after_edit():\n    return 5\n")
        poll(
            "the new symbol stored",
            lambda: db.execute(
                "select count(*) from codesift.code_symbols where name = 'embedded_after_edit'"
            ).fetchone()[0],
            log=w.log,
        )
        w.wait_for("embedded", 2)
        poll("no embedding backlog", lambda: backlog() == 0, log=w.log)


# The real watcher, with one file written the moment its first full index returns.
WRITE_AFTER_THE_FIRST_INDEX = """
import sys
from codesift import watch

index = watch.Watcher.full_sync

def full_sync(self):
    summary = index(self)
    late = self.root / "late.py"
    if not late.exists():
        late.write_text("written_after_the_first_index = 1\\n")
    return summary

watch.Watcher.full_sync = full_sync
watch.watch(sys.argv[1], watch.WatchOptions(embed=False), print)
"""


def test_a_change_right_after_the_first_index_is_not_missed(db, dsn, make_repo, tmp_path):
    # files are watched before the first index starts: a change between the two is an event
    root = _repo(make_repo)
    log = tmp_path / "watch.log"
    with Watch(dsn, root, log=log, driver=WRITE_AFTER_THE_FIRST_INDEX) as w:
        poll(
            "the file written after the first index",
            lambda: "late.py" in live_paths(db, "repo"),
            log=log,
        )
    assert w.proc.returncode == 0 and "Traceback" not in w.text(), w.text()


def test_watch_survives_a_lost_database(db, dsn, make_repo, tmp_path):
    root = _repo(make_repo)
    proxy = Proxy(dsn)
    proxy.start()
    try:
        with Watch(proxy.dsn, root, "--no-embed", log=tmp_path / "watch.log") as w:
            w.wait_for("indexed repo")
            proxy.stop()  # every connection through it drops, new ones are refused
            (root / "pkg/a.py").write_text("def written_while_down():\n    return 9\n")
            w.wait_for("retrying in")
            proxy.start()
            poll(
                "the edit made while the database was away",
                lambda: db.execute(
                    "select count(*) from codesift.code_symbols where name = 'written_while_down'"
                ).fetchone()[0],
                log=w.log,
            )
            w.wait_for("reconnected")
        assert w.proc.returncode == 0 and "Traceback" not in w.text(), w.text()
    finally:
        proxy.stop()


def test_watch_stops_cleanly_while_the_database_is_unreachable(tmp_path, make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    dsn = "postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=2"
    with Watch(dsn, root, "--no-embed", log=tmp_path / "watch.log") as w:
        w.wait_for("database unavailable")
    assert w.proc.returncode == 0, w.text()
    assert "stopped watching" in w.text() and "Traceback" not in w.text()
    assert shutil.which("git")  # the repository stayed untouched
