"""find_references and callers resolve a member through an object whose class is known
where it is used (plpython/codesift_db/reference_types.py): `self.f` in a subclass, an
object constructed from the class or a subclass, annotated or declared with it; in Python,
Go and JavaScript, in real repositories indexed with the loader. A namesake class, an
override, an unknown object stay apart; another tenant's and another ref's uses never show."""

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

PYTHON = {
    "app/__init__.py": "",
    "app/core.py": (
        "class Base:\n"  # 1
        "    def hook(self):\n"  # 2
        "        return 1\n"
        "\n"
        "    def overridden(self):\n"  # 5
        "        return 2\n"
        "\n"
        "\n"
        "class App(Base):\n"  # 9
        "    def overridden(self):\n"  # 10
        "        return 3\n"
        "\n"
        "    def run(self):\n"  # 13
        "        return self.hook() + self.overridden()\n"  # 14
        "\n"
        "\n"
        "class Deeper(App):\n"  # 17
        "    def more(self):\n"
        "        return self.hook()\n"  # 19
    ),
    "app/other.py": "class App:\n    def hook(self):\n        return 0\n",
    "app/use.py": (
        "from app.core import App\n"  # 1
        "from app import core\n"  # 2
        "from app import other\n"  # 3
        "\n"
        "\n"
        "def build():\n"  # 6
        "    a = App()\n"  # 7
        "    a.hook()\n"  # 8: App inherits Base.hook
        "    b = core.Base()\n"  # 9
        "    b.hook()\n"  # 10
        "    c = other.App()\n"  # 11
        "    c.hook()\n"  # 12: a namesake class's method
        "    return a.overridden()\n"  # 13: App's own overridden
        "\n"
        "\n"
        "def typed(x: App, y):\n"  # 16
        "    with core.Base() as z:\n"  # 17
        "        z.hook()\n"  # 18
        "    return x.hook() + y.hook()\n"  # 19: x is an App, y unknown
    ),
}

GO = {
    "go.mod": "module example.com/m\n\ngo 1.22\n",
    "srv/engine.go": (
        "package srv\n\n"
        "type Engine struct{}\n\n"  # 3
        "func (e *Engine) Run() {}\n\n"  # 5
        "func (e *Engine) Start() {\n\te.Run()\n}\n"  # 7, 8
    ),
    "srv/other.go": "package srv\n\ntype Other struct{}\n\nfunc (o *Other) Run() {}\n",
    "main.go": (
        "package main\n\n"
        'import "example.com/m/srv"\n\n'
        "func handle(e *srv.Engine, o *srv.Other) {\n"  # 5
        "\te.Run()\n"  # 6
        "\to.Run()\n"  # 7
        "\tx := &srv.Engine{}\n"  # 8
        "\tx.Run()\n"  # 9
        "}\n"
    ),
}

JAVASCRIPT = {
    "lib/server.js": (
        "export class Server {\n  listen() {\n    return 1;\n  }\n}\n\n"
        "export class Tls extends Server {\n  secure() {\n    return this.listen();\n  }\n}\n"
    ),
    "lib/main.js": (
        "import { Server, Tls } from './server.js';\n\n"
        "function start(other) {\n"  # 3
        "  const s = new Server();\n"  # 4
        "  s.listen();\n"  # 5
        "  const t = new Tls();\n"  # 6
        "  t.listen();\n"  # 7
        "  other.listen();\n"  # 8
        "}\n"
    ),
}


def _index_all(dsn, make_repo):
    with psycopg.connect(dsn) as conn:
        for name, files in (("py", PYTHON), ("go", GO), ("js", JAVASCRIPT)):
            root = make_repo(files, name=name)
            index_repository(conn, root, name=name, tenant="t1", embed=False, show_progress=False)
            if name == "py":  # a branch with a typed use the default ref does not have
                git(root, "checkout", "-q", "-b", "feature")
                write_files(
                    root,
                    {
                        "app/feature.py": "from app.core import App\n\n\ndef f():\n"
                        "    q = App()\n    return q.hook()\n"
                    },
                )
                commit(root, "feature")
                git(root, "checkout", "-q", "main")
                index_repository(
                    conn,
                    root,
                    name=name,
                    tenant="t1",
                    ref="feature",
                    embed=False,
                    show_progress=False,
                )
        # another tenant: the same repository name, a subclass and typed uses of its own
        theirs = make_repo(
            {
                **PYTHON,
                "app/theirs.py": "from app.core import App\n\n\nclass Mine(App):\n"
                "    pass\n\n\ndef g():\n    m = Mine()\n    return m.hook()\n",
            },
            name="py-t2",
        )
        index_repository(conn, theirs, name="py", tenant="t2", embed=False, show_progress=False)


@pytest.fixture
def conn(db, dsn, make_repo, app_connect, snapshots):
    snapshots.load("reference-types", _index_all, dsn, make_repo)
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    c = app_connect(tenant)
    c.add_notice_handler(lambda n: None)
    return c


def _refs(conn, name, **kw):
    args = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(
        f"select path, line, resolution, definition from codesift.find_references(%(name)s{args})",
        {"name": name, **kw},
    ).fetchall()
    out = {}
    for path, line, resolution, definition in rows:  # a resolved use on a line wins
        if out.get((path, line), ("by_name",))[0] == "by_name":
            out[path, line] = (resolution, definition)
    return out


def test_python_members_through_subclasses_constructions_and_annotations(conn):
    got = _refs(conn, "Base.hook", repo="py")
    hook = "py:app/core.py:2-3"
    resolved = {p for p, (res, d) in got.items() if res == "resolved"}
    assert resolved == {
        ("app/core.py", 14),  # self.hook() in App(Base)
        ("app/core.py", 19),  # self.hook() in Deeper(App): two hops
        ("app/use.py", 8),  # a = App()
        ("app/use.py", 10),  # b = core.Base()
        ("app/use.py", 18),  # with core.Base() as z
        ("app/use.py", 19),  # x: App
    }
    assert all(got[p][1] == hook for p in resolved)
    # the namesake class's object and an unknown object: by name only
    assert got[("app/use.py", 12)] == ("by_name", None)
    rows = conn.execute(
        "select qualifier, resolution from codesift.find_references('Base.hook', repo => 'py')"
        " where path = 'app/use.py' and line = 19 order by 1"
    ).fetchall()
    assert rows == [("x", "resolved"), ("y", "by_name")]


def test_an_override_keeps_its_own_uses(conn):
    base = _refs(conn, "Base.overridden", repo="py")
    own = _refs(conn, "App.overridden", repo="py")
    # self.overridden() in App and a.overridden() on an App are App's
    assert own[("app/core.py", 14)][0] == "resolved"
    assert own[("app/use.py", 13)][0] == "resolved"
    assert base.get(("app/core.py", 14), ("by_name",))[0] == "by_name"
    assert base.get(("app/use.py", 13), ("by_name",))[0] == "by_name"


def test_a_namesake_class_gets_only_its_own_typed_uses(conn):
    got = _refs(conn, "py:app/other.py:2")
    assert got[("app/use.py", 12)][0] == "resolved"  # c = other.App()
    assert got[("app/use.py", 8)][0] == "by_name"  # a = App() is core's App


def test_go_receivers_parameters_and_composite_literals(conn):
    got = _refs(conn, "go:srv/engine.go:5")
    assert got[("srv/engine.go", 8)][0] == "resolved"  # e.Run() on the receiver e *Engine
    assert got[("main.go", 6)][0] == "resolved"  # e *srv.Engine
    assert got[("main.go", 9)][0] == "resolved"  # x := &srv.Engine{}
    assert got[("main.go", 7)][0] == "by_name"  # o *srv.Other
    other = _refs(conn, "go:srv/other.go:5")
    assert other[("main.go", 7)][0] == "resolved"
    assert other[("main.go", 6)][0] == "by_name"


def test_javascript_new_and_extends(conn):
    got = _refs(conn, "Server.listen", repo="js")
    assert got[("lib/server.js", 9)][0] == "resolved"  # this.listen() in Tls extends Server
    assert got[("lib/main.js", 5)][0] == "resolved"  # s = new Server()
    assert got[("lib/main.js", 7)][0] == "resolved"  # t = new Tls()
    assert got[("lib/main.js", 8)][0] == "by_name"  # other.listen()


def test_callers_count_the_typed_calls(conn):
    rows = conn.execute(
        "select path, caller, resolution from codesift.callers('Base.hook', repo => 'py')"
    ).fetchall()
    resolved = {(r[0], r[1]) for r in rows if r[2] == "resolved"}
    assert {
        ("app/core.py", "App.run"),
        ("app/use.py", "build"),
        ("app/use.py", "typed"),
    } <= resolved


def test_typed_uses_stay_in_their_ref_and_tenant(conn, db, app_connect):
    assert not any(p == "app/feature.py" for p, _ in _refs(conn, "Base.hook", repo="py"))
    on_branch = _refs(conn, "Base.hook", repo="py", ref="feature")
    assert on_branch[("app/feature.py", 6)][0] == "resolved"
    # t2's subclass Mine and its use are t2's only
    assert not any(p == "app/theirs.py" for p, _ in _refs(conn, "Base.hook", repo="py"))
    t2 = db.execute("select id from codesift.tenants where name = 't2'").fetchone()[0]
    other = app_connect(t2)
    other.add_notice_handler(lambda n: None)
    theirs = _refs(other, "Base.hook", repo="py")
    assert theirs[("app/theirs.py", 10)][0] == "resolved"
    assert not any(p == "app/feature.py" for p, _ in theirs)
