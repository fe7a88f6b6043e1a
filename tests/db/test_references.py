"""find_references, callers and callees against real repositories indexed with the loader:
Python, JavaScript and Go; uses resolved through imports (re-exports, aliases, packages),
by name only, or left out when bound elsewhere; refs kept apart; the backfill of blobs
indexed before references existed."""

import re

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

PYTHON = {
    "pkg/__init__.py": "from pkg.transport import send_request\n",
    "pkg/transport.py": (
        "class Transport:\n"
        "    def send(self, data):\n"
        "        return self.encode(data)\n\n"
        "    def encode(self, data):\n"
        "        return data\n\n"
        "    def resend(self):\n"
        "        return self.send(None)\n\n\n"
        "def send_request(method, url):\n"
        "    return Transport().send((method, url))\n"
    ),
    "pkg/client.py": (
        "from pkg.transport import send_request, Transport\n"
        "import pkg.transport\n\n\n"
        "class Client:\n"
        "    def get(self, url):\n"
        "        return send_request('GET', url)\n\n"
        "    def post(self, url):\n"
        "        return pkg.transport.send_request('POST', url)\n\n\n"
        "def make_client():\n"
        "    return Client()\n\n\n"
        "def shadowed(send_request):\n"
        "    return send_request\n"
    ),
    "pkg/other.py": (
        "from pkg import send_request as fetch\n\n\n"
        "def via_package():\n"
        "    return fetch('X', 'y')\n\n\n"
        "def unknown(obj):\n"
        "    return obj.send(1)\n"
    ),
    "pkg/external.py": (
        "from requests import send_request\n\n\ndef ext():\n    return send_request()\n"
    ),
    "tests/test_client.py": (
        "from pkg.client import make_client\n\n\n"
        "def test_get():\n    assert make_client().get('x')\n"
    ),
}

JAVASCRIPT = {
    "web/util.js": (
        "export function formatDate(d) {\n  return d;\n}\n\n"
        "export function helper() {\n  return formatDate(1);\n}\n"
    ),
    "web/index.js": "export { formatDate } from './util.js';\n",
    "web/app.js": (
        "import { formatDate as fmt } from './util.js';\n"
        "import * as u from './util.js';\n"
        "import { formatDate } from './index.js';\n\n"
        "function render(x) {\n"
        "  return fmt(x) + u.formatDate(x) + formatDate(x);\n"
        "}\n"
    ),
    "web/other.js": (
        "import { formatDate } from 'date-lib';\n\nfunction show(d) {\n  return formatDate(d);\n}\n"
    ),
}

GO = {
    "go.mod": "module example.com/m\n\ngo 1.22\n",
    "util/strings.go": "package util\n\nfunc Reverse(s string) string {\n\treturn s\n}\n",
    "util/more.go": (
        "package util\n\nfunc Twice(s string) string {\n\treturn Reverse(Reverse(s))\n}\n"
    ),
    "main.go": (
        'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/m/util"\n)\n\n'
        'func main() {\n\tfmt.Println(util.Reverse("x"))\n}\n\n'
        "func Reverse(n int) int {\n\treturn n\n}\n"
    ),
}


def _index_all(dsn, make_repo):
    with psycopg.connect(dsn) as conn:
        for name, files in (("py", PYTHON), ("js", JAVASCRIPT), ("go", GO)):
            root = make_repo(files, name=name)
            index_repository(conn, root, name=name, tenant="t1", embed=False, show_progress=False)
            if name == "py":  # a branch with a use the default ref does not have
                git(root, "checkout", "-q", "-b", "feature")
                write_files(
                    root,
                    {
                        "pkg/feature.py": (
                            "from pkg.transport import send_request\n\n\n"
                            "def feature_call():\n    return send_request('F', 'f')\n"
                        )
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


@pytest.fixture
def conn(db, dsn, make_repo, app_connect, snapshots):
    snapshots.load("references", _index_all, dsn, make_repo)
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    return app_connect(tenant)


def _refs(conn, name, **kw):
    args = "".join(f", {k} => %({k})s" for k in kw)
    return conn.execute(
        "select path, line, symbol, is_call, qualifier, resolution, definition, line_text"
        f" from codesift.find_references(%(name)s{args})",
        {"name": name, **kw},
    ).fetchall()


def test_python_uses_resolved_through_imports_re_exports_and_aliases(conn):
    rows = _refs(conn, "send_request", repo="py")
    got = {(r[0], r[1]): r for r in rows}
    definition = "py:pkg/transport.py:12-13"
    resolved = {
        ("pkg/__init__.py", 1),  # the import statement itself
        ("pkg/client.py", 1),
        ("pkg/client.py", 7),  # send_request('GET', url)
        ("pkg/client.py", 10),  # pkg.transport.send_request: `import pkg.transport`
        ("pkg/other.py", 1),  # from pkg import send_request as fetch: the package re-exports
        ("pkg/other.py", 5),  # fetch(...) is a use under an alias
    }
    assert set(got) == resolved
    assert all(r[5] == "resolved" and r[6] == definition for r in rows)
    assert got[("pkg/client.py", 7)][2:5] == ("Client.get", True, None)
    assert got[("pkg/client.py", 10)][4] == "pkg.transport"
    assert got[("pkg/other.py", 5)][2] == "via_package"
    assert got[("pkg/other.py", 5)][7] == "    return fetch('X', 'y')"
    # a parameter of the same name, the definition itself, and a name imported from
    # outside the repository are no uses of it
    assert not any(r[0] in ("pkg/external.py", "pkg/transport.py") for r in rows)
    assert ("pkg/client.py", 18) not in got


def test_a_method_on_an_unknown_object_is_by_name(conn):
    rows = _refs(conn, "Transport.send", repo="py")
    got = {(r[0], r[1]): (r[5], r[6]) for r in rows}
    assert got == {
        ("pkg/transport.py", 9): ("resolved", "py:pkg/transport.py:2-3"),  # self.send in class
        ("pkg/transport.py", 13): ("by_name", None),  # Transport().send: an expression
        ("pkg/other.py", 9): ("by_name", None),  # obj.send
    }
    # resolved rows come first
    assert [r[5] for r in rows] == ["resolved", "by_name", "by_name"]


def test_a_citation_names_the_definition(conn):
    by_citation = _refs(conn, "py:pkg/transport.py:13")  # a line inside send_request
    assert {(r[0], r[1]) for r in by_citation} == {
        (r[0], r[1]) for r in _refs(conn, "send_request", repo="py")
    }
    # path keeps the definitions of one file: the Go repository defines Reverse twice
    assert {(r[0], r[1]) for r in _refs(conn, "Reverse", path="go:main.go")} == set()
    assert {(r[0], r[1]) for r in _refs(conn, "Reverse", path="util/strings.go")} == {
        ("util/more.go", 4),
        ("main.go", 10),
    }


def test_javascript_named_namespace_aliased_and_re_exported_imports(conn):
    rows = _refs(conn, "formatDate", repo="js")
    got = {(r[0], r[1]): r[5] for r in rows}
    assert got == {
        ("web/util.js", 6): "resolved",  # helper() calls it in its own file
        ("web/index.js", 1): "resolved",  # export { formatDate } from './util.js'
        ("web/app.js", 1): "resolved",
        ("web/app.js", 3): "resolved",  # through index.js's re-export
        ("web/app.js", 6): "resolved",  # fmt(x), u.formatDate(x), formatDate(x)
    }
    line6 = [r for r in rows if r[:2] == ("web/app.js", 6)]
    assert {r[4] for r in line6} == {None, "u"}
    # web/other.js imports a namesake from a package: not this definition


def test_go_package_qualified_and_same_package_uses(conn):
    rows = _refs(conn, "Reverse", repo="go")
    got = {(r[0], r[1]): (r[5], r[6]) for r in rows}
    strings = "go:util/strings.go:3-5"
    assert got[("util/more.go", 4)] == ("resolved", strings)
    assert got[("main.go", 10)] == ("resolved", strings)  # util.Reverse: the package util
    # main.go's own Reverse is not called anywhere
    assert "go:main.go:13-15" not in {r[6] for r in rows}


def test_callers_group_the_calls_by_calling_symbol(conn):
    rows = conn.execute(
        "select path, caller, caller_kind, start_line, end_line, lines, resolution, citation"
        " from codesift.callers('send_request', repo => 'py')"
    ).fetchall()
    assert rows == [
        ("pkg/client.py", "Client.get", "method", 6, 7, [7], "resolved", "py:pkg/client.py:6-7"),
        (
            "pkg/client.py",
            "Client.post",
            "method",
            9,
            10,
            [10],
            "resolved",
            "py:pkg/client.py:9-10",
        ),
        ("pkg/other.py", "via_package", "function", 4, 5, [5], "resolved", "py:pkg/other.py:4-5"),
    ]
    go = conn.execute(
        "select path, caller, lines from codesift.callers('Reverse', path => 'go:util/strings.go')"
    ).fetchall()
    assert go == [("main.go", "main", [10]), ("util/more.go", "Twice", [4])]


def test_callees_resolve_each_called_name(conn):
    rows = conn.execute(
        "select callee, qualifier, lines, resolution, definition, candidates, module"
        " from codesift.callees('send_request', repo => 'py')"
    ).fetchall()
    assert rows == [
        ("Transport", None, [13], "resolved", "py:pkg/transport.py:1-9", 1, None),
        # Transport().send: by name, but the only definition named send
        ("send", "?", [13], "by_name", "py:pkg/transport.py:2-3", 1, None),
    ]
    rows = conn.execute(
        "select callee, resolution, definition from codesift.callees('Client.post')"
    ).fetchall()
    assert rows == [("send_request", "resolved", "py:pkg/transport.py:12-13")]
    go = conn.execute(
        "select callee, qualifier, resolution, definition, module"
        " from codesift.callees('main', repo => 'go')"
    ).fetchall()
    assert go == [
        ("Reverse", "util", "resolved", "go:util/strings.go:3-5", "example.com/m/util"),
        ("Println", "fmt", "external", None, "fmt"),  # Go's builtins (len, println) are no uses
    ]


def test_a_use_only_on_another_branch_is_not_shown_at_this_ref(conn):
    default = _refs(conn, "send_request", repo="py")
    assert not any(r[0] == "pkg/feature.py" for r in default)
    feature = _refs(conn, "send_request", repo="py", ref="feature")
    assert ("pkg/feature.py", 5) in {(r[0], r[1]) for r in feature}
    callers = conn.execute(
        "select caller from codesift.callers('send_request', repo => 'py', ref => 'feature')"
    ).fetchall()
    assert ("feature_call",) in callers
    assert ("feature_call",) not in conn.execute(
        "select caller from codesift.callers('send_request', repo => 'py')"
    ).fetchall()


def test_an_unknown_name_is_empty_with_a_notice(conn):
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    assert _refs(conn, "no_such_function_anywhere") == []
    assert any("no definition of 'no_such_function_anywhere'" in n for n in notices)
    # a name nothing defines: its uses by name (a library's function)
    rows = _refs(conn, "Println", repo="go")
    assert [(r[0], r[1], r[5]) for r in rows] == [("main.go", 10, "by_name")]


def test_blobs_indexed_before_references_are_backfilled(db, conn):
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    # as after migration 020 on a database indexed before it
    db.execute(
        "update codesift.blobs set references_extracted = false where tenant_id = %s", (tenant,)
    )
    db.execute("delete from codesift.code_references where tenant_id = %s", (tenant,))
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    assert _refs(conn, "send_request", repo="py") == []
    assert any("backfill_references" in n for n in notices)
    done = [conn.execute("select codesift.backfill_references(3)").fetchone()[0]]
    while done[-1]:
        done.append(conn.execute("select codesift.backfill_references()").fetchone()[0])
    assert done[0] == 3 and done[-1] == 0
    assert len(_refs(conn, "send_request", repo="py")) == 6
    assert db.execute(
        "select count(*) from codesift.blobs where not references_extracted"
    ).fetchone() == (0,)


def test_the_lookups_read_the_indexes_under_row_level_security(conn):
    """Equality on plain columns is leakproof: the policy does not keep the planner from
    the indexes (a seq scan is made as costly as can be, to see whether one is possible)."""
    from codesift_db import plans

    tenant = conn.execute("select codesift.current_tenant_id()").fetchone()[0]
    ids = [r[0] for r in conn.execute("select id from codesift.repositories").fetchall()]
    conn.execute("set enable_seqscan = off")
    for name, types, args, index in (
        (
            "reference_uses",
            "bigint, text, bigint[], boolean, integer",
            (tenant, "send_request", ids, False, 100),
            "code_references_name",
        ),
        (
            "symbol_calls",
            "bigint, text[], text[], integer",
            (tenant, ["0" * 40], ["send_request"], 100),
            "code_references_blob",
        ),
    ):
        kinds = [t.strip() for t in types.split(",")]
        order: list[int] = []

        def bind(m, order=order, kinds=kinds):
            order.append(int(m[1]) - 1)
            return f"%s::{kinds[int(m[1]) - 1]}"

        text = re.sub(r"--[^\n]*", "", plans.load(name))  # the comments name $1.. too
        statement = re.sub(r"\$(\d+)", bind, text)
        bound = [args[i] for i in order]
        plan = "\n".join(r[0] for r in conn.execute(f"explain {statement}", bound))
        assert index in plan, plan
