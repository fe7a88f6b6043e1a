"""Reference extraction (ingest/references.py) per language, and the resolution of a use
against definitions (references.py Resolver), without a server."""

import pytest
from codesift_db import budget
from codesift_db.ingest import import_extraction
from codesift_db.ingest.references import (
    LANGUAGES,
    MAX_NESTING,
    _query,
    bracket_depth,
    extract_references,
)
from codesift_db.ingest.symbols import extract_symbols
from codesift_db.references import BY_NAME, RESOLVED, Resolver, Use


def refs(path: str, text: str, language: str) -> list[tuple]:
    found = extract_references(path, text, language, extract_symbols(path, text, language))
    return [
        (r["name"], r["line"], r["symbol"], r["call"], r["qualifier"], r["import_line"])
        for r in found
    ]


def names(found: list[tuple]) -> set[str]:
    return {r[0] for r in found}


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_language_has_a_query_its_grammar_accepts(language):
    assert _query(language) is not None


PY = """import a.b as x
import os.path
from m import f as g, h
from pkg import *


def k(p, q=1, *r, s: int = 2, **t):
    y, z = g(p)
    x.c.d(y, key=z)
    for i in q:
        h.m()
    os.path.join(i)
    return [w for w in r] + len(y)


@deco
class C(B):
    def m(self):
        self.n()
        return helper
"""


def test_python_calls_members_aliases_and_enclosing_symbols():
    found = refs("a.py", PY, "python")
    assert ("f", 3, None, False, None, 3) in found  # the import statement names f
    assert ("f", 8, "k", True, None, 3) in found  # g(p): f under its alias
    assert ("d", 9, "k", True, "x.c", 1) in found  # a member of the module a.b
    assert ("m", 11, "k", True, "h", 3) in found
    assert ("join", 12, "k", True, "os.path", 2) in found
    assert ("deco", 16, "C", True, None, None) in found  # a decorator is a call
    assert ("B", 17, "C", False, None, None) in found
    assert ("n", 19, "C.m", True, "self", None) in found
    assert ("helper", 20, "C.m", False, None, None) in found
    # parameters, locals, loop and comprehension variables, keyword argument names,
    # definitions' own names, module aliases and builtins are no uses
    for name in ("p", "q", "r", "s", "t", "y", "z", "i", "w", "key", "k", "C", "x", "len"):
        assert name not in {r[0] for r in found if r[4] is None}, name


def test_a_builtin_name_the_file_defines_is_a_use():
    found = refs("b.py", "def open(p):\n    return p\n\n\ndef g():\n    return open(1)\n", "python")
    assert ("open", 6, "g", True, None, None) in found


def test_a_global_declaration_makes_a_name_no_local():
    text = "def f():\n    global helper\n    helper = 1\n    return helper\n"
    assert ("helper", 4, "f", False, None, None) in refs("c.py", text, "python")


TS = """import d, { a as b, c } from './m';
import * as ns from './n';
const { e, f: g } = require('./r');
export { z1 } from './z';

function k(p: T, q = 1) {
  const y = b(p);
  ns.z.w(y);
  new Cls(q);
  g();
  d.go();
  return console.log(y);
}
"""


def test_typescript_named_default_namespace_and_require_bindings():
    found = refs("a.ts", TS, "typescript")
    assert ("a", 1, None, False, None, 1) in found
    assert ("a", 7, "k", True, None, 1) in found  # b(p): a under its alias
    assert ("w", 8, "k", True, "ns.z", 2) in found
    assert ("Cls", 9, "k", True, None, None) in found  # new Cls()
    assert ("f", 10, "k", True, None, 3) in found  # g(): f of require('./r')
    assert ("go", 11, "k", True, "d", 1) in found
    assert ("z1", 4, None, False, None, 4) in found  # export { z1 } from
    assert ("T", 6, "k", False, None, None) in found  # a type
    assert not {"p", "q", "y", "ns", "console"} & {r[0] for r in found if r[4] is None}


GO = """package p

import (
\t"fmt"
\th "net/http"
\t"example.com/mod/v2"
)

func (s *S) M(a int) error {
\tb := Foo(a)
\tfmt.Println(b, len(b))
\tvar t h.Client
\tmod.Run(t)
\treturn s.Other()
}
"""


def test_go_package_qualified_uses_and_locals():
    found = refs("a.go", GO, "go")
    assert ("Foo", 10, "S.M", True, None, None) in found
    assert ("Println", 11, "S.M", True, "fmt", 4) in found
    assert ("Client", 12, "S.M", False, "h", 5) in found
    assert ("Run", 13, "S.M", True, "mod", 6) in found  # example.com/mod/v2 is package mod
    assert ("Other", 14, "S.M", True, "s", None) in found
    assert not {"a", "b", "t", "s", "len", "int", "error"} & {r[0] for r in found if r[4] is None}


JAVA = """package a.b;
import com.acme.Foo;
import static com.acme.Util.helper;

class C extends B {
  int m(String s, Foo g) {
    int y = helper(s);
    Foo.stat(y);
    this.other();
    new Bar(y);
    return g.value;
  }
}
"""


def test_java_imports_static_imports_and_constructors():
    found = refs("C.java", JAVA, "java")
    assert ("Foo", 2, None, False, None, 2) in found
    assert ("helper", 7, "C.m", True, None, 3) in found
    assert ("stat", 8, "C.m", True, "Foo", 2) in found
    assert ("other", 9, "C.m", True, "this", None) in found
    assert ("Bar", 10, "C.m", True, None, None) in found
    assert ("B", 5, "C", False, None, None) in found
    assert not {"s", "g", "y", "String", "a", "b"} & {r[0] for r in found if r[4] is None}


@pytest.mark.parametrize(
    "path, text, language",
    [
        ("a.py", PY, "python"),
        ("a.ts", TS, "typescript"),
        ("a.go", GO, "go"),
        ("C.java", JAVA, "java"),
    ],
)
def test_import_lines_are_the_lines_import_extraction_records(path, text, language):
    """A use's import_line joins blob_imports and file_edges on their line."""
    recorded = {i["line"] for i in import_extraction.extract_imports(path, text, language)}
    used = {r[5] for r in refs(path, text, language) if r[5] is not None}
    assert used and used <= recorded


def test_a_symbol_split_into_parts_encloses_its_methods():
    methods = "".join(f"    def m{i}(self):\n        return self.m{i + 1}()\n\n" for i in range(80))
    text = "class Big:\n" + methods
    found = refs("big.py", text, "python")
    assert {r[2] for r in found} == {f"Big.m{i}" for i in range(80)}


def test_bounded_and_never_raises():
    assert isinstance(extract_references("x.py", "def f(:\n  )))", "python"), list)
    assert extract_references("x.py", "\x00\ud800 f()", "python") is not None
    assert extract_references("x.rb", "foo()", "ruby") == []  # no rules: nothing
    deep = "x = " + "f(" * 5000 + ")" * 5000 + "\n"
    assert extract_references("deep.py", deep, "python") == [
        {
            "name": "f",
            "line": 1,
            "symbol": None,
            "call": True,
            "qualifier": None,
            "import_line": None,
        }
    ]
    many = "".join(f"f{i}()\n" for i in range(budget.MAX_REFERENCES + 10))
    limits = budget.unlimited()
    found = extract_references("many.py", many, "python", (), limits)
    assert len(found) == budget.MAX_REFERENCES
    assert limits.reason() == f"references cap {budget.MAX_REFERENCES} (10 more)"
    expired = budget.Budget(0.0)
    assert extract_references("a.py", PY, "python", (), expired) == []
    assert "references" in (expired.reason() or "")


# --- resolution --------------------------------------------------------------------------


def _def(path, name, parent=None, kind="function", repo=1):
    return {
        "repository_id": repo,
        "repository": "r",
        "path": path,
        "name": name,
        "qualified_name": f"{parent}.{name}" if parent else name,
        "parent": parent,
        "kind": kind,
        "start_line": 1,
        "end_line": 2,
    }


def _use(path, qualifier=None, import_line=None, symbol="caller", language="python", call=True):
    return Use(1, "r", path, "sha-" + path, 5, symbol, call, qualifier, import_line, "f", language)


def test_resolution_follows_edges_re_exports_and_submodules():
    f = _def("pkg/impl.py", "f")
    r = Resolver(
        edges={
            (1, "a.py"): [(1, "pkg/__init__.py", ["f"])],
            (1, "pkg/__init__.py"): [(1, "pkg/impl.py", ["f"])],
            (1, "b.py"): [(2, "pkg/__init__.py", [])],
            (1, "c.py"): [(1, "other.py", ["f"])],
        },
        imports={"sha-b.py": [(2, "pkg", [])]},
    )
    assert r.resolve(_use("a.py", import_line=1), [f]) == (RESOLVED, f)  # re-exported
    assert r.resolve(_use("b.py", "pkg.impl", 2), [f]) == (RESOLVED, f)  # pkg.impl.f
    assert r.resolve(_use("c.py", import_line=1), [f]) is None  # bound elsewhere
    assert r.resolve(_use("d.py", import_line=3), [f]) is None  # from outside the repository
    assert r.resolve(_use("d.py", import_line=3), [_def("x.py", "f", repo=2)]) == (BY_NAME, None)


def test_resolution_without_imports():
    f = _def("m.py", "f")
    method = _def("m.py", "f", parent="C", kind="method")
    r = Resolver()
    assert r.resolve(_use("m.py"), [f]) == (RESOLVED, f)  # same file
    assert r.resolve(_use("m.py", "self", symbol="C.g"), [method]) == (RESOLVED, method)
    assert r.resolve(_use("n.py", "obj"), [method]) == (BY_NAME, None)
    assert r.resolve(_use("n.py"), [f]) is None  # a bare name nothing binds: a local
    star = Resolver(imports={"sha-n.py": [(1, "m", ["*"])]})
    assert star.resolve(_use("n.py"), [f]) == (BY_NAME, None)
    go = _def("util/a.go", "Reverse")
    assert r.resolve(_use("util/b.go", language="go"), [go]) == (RESOLVED, go)  # package
    assert r.resolve(_use("main.go", language="go"), [go]) is None
    assert r.resolve(_use("x.rb", language="ruby"), [f]) == (BY_NAME, None)


def test_a_file_nested_deeper_than_code_is_not_read():
    """tree-sitter's query cursor takes time with the square of the depth, uninterruptibly:
    half a million nested braces took minutes."""
    deep = "{\n" * (1 << 19) + "f();\n"
    limits = budget.unlimited()
    assert extract_references("deep.js", deep, "javascript", (), limits) == []
    assert (
        limits.reason()
        == f"references cap {MAX_NESTING} ({(1 << 19) + 1} levels of nesting: none read)"
    )
    assert bracket_depth(b"f(a[1], {b: (2)})") == 3


def test_a_minified_bundle_has_no_references():
    bundle = "var a=" + "f(1)+" * 20_000 + "0;\n"
    assert extract_references("app.min.js", bundle, "javascript") == []
