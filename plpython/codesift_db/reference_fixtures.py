"""The uses of a pytest fixture: pytest passes a fixture to every test and fixture function
of its scope that names it as a parameter, with no import and no call, so the reference
index (which leaves parameters out) has no row for them. Called by find_references for a
Python function decorated with `fixture` (`@pytest.fixture`, `@pytest.fixture(...)`,
`@fixture`).

    fixture_uses(plpy, tenant, definition) -> [Use]

Its scope: every test module (test_*.py, *_test.py) and conftest.py under the folder of the
conftest.py that defines it, or the module that defines it; less the modules where a closer
fixture of the same name overrides it (the module's own, or a conftest.py in a folder
between). A use is the line of the parameter and each line of that function's body naming
the parameter (not as an attribute `x.name` nor a keyword `name=`), read from the blob's
text: only the live files of the definition's repository and ref holding the name are
read, at most MAX_FILES of them and MAX_BYTES of text.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from . import plans
from .ingest.symbols.walk import _parser

MAX_FILES = 500
MAX_BYTES = 8 << 20
_FIXTURE = re.compile(r"^\s*@\s*(?:[\w.]+\.)?fixture\b")
_TESTS = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$")
_PARAMS = ("identifier", "default_parameter", "typed_parameter", "typed_default_parameter")


MAX_DECORATOR_LINES = 20


def is_fixture(plpy, tenant: int, d: dict) -> bool:
    """Whether the decorators of d (a top-level Python function; the lines from its start
    to its name) hold a fixture."""
    if d["kind"] != "function" or d["parent"] is not None or not d["path"].endswith(".py"):
        return False
    name_line = d.get("name_line") or d["start_line"]
    wanted = list(range(d["start_line"], min(name_line, d["start_line"] + MAX_DECORATOR_LINES)))
    if not wanted:
        return False
    rows = plans.run(
        plpy,
        plans.load("reference_lines"),
        ["bigint", "text[]", "int[]", "integer"],
        [tenant, [d["blob_sha"]] * len(wanted), wanted, 300],
    )
    return any(_FIXTURE.match(r["text"] or "") for r in rows)


def _like_prefix(folder: str) -> str:
    escaped = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}/%" if folder else "%"


def fixture_uses(plpy, tenant: int, d: dict, use_type: Any) -> list:
    """The uses of the fixture d (a definition row of references.py, is_fixture) as
    use_type (Use)."""
    name = d["name"]
    conftest = posixpath.basename(d["path"]) == "conftest.py"
    folder = posixpath.dirname(d["path"])
    rows = plans.run(
        plpy,
        plans.load("fixture_files"),
        ["bigint", "bigint", "text", "text", "text", "integer"],
        [tenant, d["repository_id"], _like_prefix(folder), d["path"], name, MAX_FILES],
    )
    texts: dict[str, tuple[str, str]] = {}
    size = 0
    for r in rows:
        if not conftest and r["path"] != d["path"]:
            continue
        if not _TESTS.search(r["path"]) and r["path"] != d["path"]:
            continue
        size += len(r["content"])
        if size > MAX_BYTES:
            plpy.notice(f"the uses of fixture '{name}' are read in the first {len(texts)} files")
            break
        texts[r["path"]] = (r["blob_sha"], r["content"])
    if d["path"] not in texts:
        return []
    parser = _parser("python")
    if parser is None:
        return []
    found: dict[str, list[tuple[int, str | None]]] = {}
    overriding_folders = []
    for path, (_sha, text) in texts.items():
        src = text.encode("utf-8", "surrogatepass")
        uses, defines = _in_module(parser.parse(src).root_node, text, src, name)
        if defines and path != d["path"]:
            if posixpath.basename(path) == "conftest.py":
                overriding_folders.append(posixpath.dirname(path))
            continue  # the module's own fixture of that name is the one its tests get
        found[path] = uses
    out = []
    for path, uses in found.items():
        here = posixpath.dirname(path)
        if any(
            len(o) > len(folder) and (here == o or here.startswith(o + "/"))
            for o in overriding_folders
        ):
            continue
        for line, symbol in uses:
            if (path, line) == (d["path"], d.get("name_line")):
                continue
            out.append(
                use_type(
                    d["repository_id"],
                    d["repository"],
                    path,
                    texts[path][0],
                    line,
                    symbol,
                    False,
                    None,
                    None,
                    name,
                    "python",
                )
            )
    return out


def _in_module(root: Any, text: str, src: bytes, name: str) -> tuple[list, bool]:
    """([(line, enclosing function)] of the parameters named `name` of the test and fixture
    functions of a module, and their body's uses), whether the module defines a fixture
    called `name`."""
    lines = text.split("\n")
    use = re.compile(rf"(?<![\w.]){re.escape(name)}\b(?!\s*=[^=])")
    out: list[tuple[int, str | None]] = []
    defines = False
    stack = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.children:
            if child.type in ("decorated_definition", "block"):
                stack.append((child, prefix))
            elif child.type == "class_definition":
                body = child.child_by_field_name("body")
                cls = child.child_by_field_name("name")
                if body is not None and cls is not None:
                    stack.append((body, f"{prefix}{_text(src, cls)}."))
            elif child.type == "function_definition":
                fn = child.child_by_field_name("name")
                if fn is None:
                    continue
                fn_name = _text(src, fn)
                decorated = node.type == "decorated_definition" and any(
                    _FIXTURE.match(_text(src, dec))
                    for dec in node.children
                    if dec.type == "decorator"
                )
                if fn_name == name and decorated:
                    defines = True
                if not (fn_name.startswith("test") or decorated):
                    continue
                param = _parameter(child, src, name)
                if param is None:
                    continue
                symbol = prefix + fn_name
                out.append((param, symbol))
                body = child.child_by_field_name("body")
                if body is None:
                    continue
                for n in range(body.start_point[0], body.end_point[0] + 1):
                    line = lines[n] if n < len(lines) else ""
                    if not line.lstrip().startswith("#") and use.search(line):
                        out.append((n + 1, symbol))
    return sorted(set(out), key=lambda u: u[0]), defines


def _parameter(fn: Any, src: bytes, name: str) -> int | None:
    """The line of the parameter `name` of the function node fn, or None."""
    params = fn.child_by_field_name("parameters")
    if params is None:
        return None
    for p in params.named_children:
        node = p if p.type == "identifier" else p.child_by_field_name("name")
        if p.type == "typed_parameter":
            node = next((c for c in p.named_children if c.type == "identifier"), None)
        if p.type in _PARAMS and node is not None and _text(src, node) == name:
            return node.start_point[0] + 1
    return None


def _text(src: bytes, node: Any) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")
