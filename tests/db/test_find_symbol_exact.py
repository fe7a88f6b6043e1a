# ruff: noqa: E501  (JavaScript source kept on its own lines)
"""find_symbol is exact on real code: every definition of a real Python package (click,
installed with the loader) and of a JavaScript code base written here, each looked up by
name or qualified name, comes back at its file and first line; absent names return
nothing with a NOTICE naming the nearest ones."""

import ast
import shutil
from pathlib import Path

import click
import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import commit, git


def python_definitions(root: Path) -> list[tuple[str, str, int]]:
    """(name or Class.method, path, first line incl. decorators) of top-level functions,
    classes and their methods, read with Python's own parser (not codesift's)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out.append((node.name, rel, _first_line(node)))
            if isinstance(node, ast.ClassDef):
                for child in node.body:
                    if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                        out.append((f"{node.name}.{child.name}", rel, _first_line(child)))
    return out


def _first_line(node) -> int:
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


JS_FILES: dict[str, list[tuple[str, str]]] = {
    # path -> [(qualified name, source)], written one after the other
    "lib/router.js": [
        ("", "'use strict';\n\nconst { parse } = require('./url');\n"),
        (
            "Router",
            "class Router {\n  constructor(options = {}) {\n    this.stack = [];\n"
            "    this.strict = Boolean(options.strict);\n  }\n\n"
            "  use(path, handler) {\n    this.stack.push({ path, handler });\n    return this;\n"
            "  }\n\n  handle(req, res, done) {\n    let index = 0;\n"
            "    const next = (err) => {\n      const layer = this.stack[index++];\n"
            "      if (!layer) return done(err);\n      return layer.handler(req, res, next);\n"
            "    };\n    next();\n  }\n}\n",
        ),
        (
            "matchPath",
            "function matchPath(pattern, pathname) {\n  const keys = [];\n"
            "  const source = pattern.replace(/:(\\w+)/g, (_, key) => {\n    keys.push(key);\n"
            "    return '([^/]+)';\n  });\n  const match = new RegExp(`^${source}$`).exec(pathname);\n"
            "  if (!match) return null;\n"
            "  return Object.fromEntries(keys.map((k, i) => [k, decodeURIComponent(match[i + 1])]));\n}\n",
        ),
        ("", "\nmodule.exports = { Router, matchPath };\n"),
    ],
    "lib/url.js": [
        (
            "parse",
            "function parse(req) {\n  const url = req.url || '/';\n  const q = url.indexOf('?');\n"
            "  return { pathname: q === -1 ? url : url.slice(0, q), query: q === -1 ? '' : url.slice(q + 1) };\n}\n",
        ),
        (
            "parseQuery",
            "function parseQuery(query) {\n  const out = {};\n"
            "  for (const pair of query.split('&')) {\n    if (!pair) continue;\n"
            "    const [k, v = ''] = pair.split('=');\n    out[decodeURIComponent(k)] = decodeURIComponent(v);\n"
            "  }\n  return out;\n}\n",
        ),
        ("", "\nmodule.exports = { parse, parseQuery };\n"),
    ],
    "lib/response.js": [
        (
            "Response",
            "class Response {\n  constructor(res) {\n    this.res = res;\n    this.statusCode = 200;\n  }\n\n"
            "  status(code) {\n    this.statusCode = code;\n    return this;\n  }\n\n"
            "  set(field, value) {\n    this.res.setHeader(field, value);\n    return this;\n  }\n\n"
            "  json(body) {\n    this.set('Content-Type', 'application/json');\n"
            "    return this.send(JSON.stringify(body));\n  }\n\n"
            "  send(body) {\n    this.res.statusCode = this.statusCode;\n    this.res.end(body);\n"
            "    return this;\n  }\n\n"
            "  redirect(url, status = 302) {\n    return this.status(status).set('Location', url).send('');\n"
            "  }\n}\n",
        ),
        (
            "contentType",
            "function contentType(type) {\n  return type.includes('/') ? type : `text/${type}`;\n}\n",
        ),
        ("", "\nmodule.exports = { Response, contentType };\n"),
    ],
    "lib/middleware/cors.js": [
        (
            "cors",
            "function cors(options = {}) {\n  const origin = options.origin || '*';\n"
            "  return function corsMiddleware(req, res, next) {\n"
            "    res.setHeader('Access-Control-Allow-Origin', origin);\n    next();\n  };\n}\n",
        ),
        (
            "isPreflight",
            "function isPreflight(req) {\n  return req.method === 'OPTIONS' &&"
            " Boolean(req.headers['access-control-request-method']);\n}\n",
        ),
        ("", "\nmodule.exports = { cors, isPreflight };\n"),
    ],
    "lib/middleware/logger.js": [
        (
            "Logger",
            "class Logger {\n  constructor(stream) {\n    this.stream = stream;\n  }\n\n"
            "  log(level, message) {\n    this.stream.write(`${new Date().toISOString()} ${level} ${message}\\n`);\n"
            "  }\n\n  info(message) {\n    this.log('info', message);\n  }\n\n"
            "  error(message) {\n    this.log('error', message);\n  }\n}\n",
        ),
        (
            "requestLogger",
            "function requestLogger(logger) {\n  return (req, res, next) => {\n"
            "    const started = Date.now();\n"
            "    res.on('finish', () => logger.info(`${req.method} ${req.url} ${Date.now() - started}ms`));\n"
            "    next();\n  };\n}\n",
        ),
        ("", "\nmodule.exports = { Logger, requestLogger };\n"),
    ],
    "lib/app.js": [
        ("", "const http = require('http');\nconst { Router } = require('./router');\n\n"),
        (
            "createApplication",
            "function createApplication() {\n  const router = new Router();\n"
            "  const app = (req, res) => router.handle(req, res, () => {\n"
            "    res.statusCode = 404;\n    res.end('Not Found');\n  });\n"
            "  app.use = (path, fn) => router.use(path, fn);\n"
            "  app.listen = (...args) => http.createServer(app).listen(...args);\n  return app;\n}\n",
        ),
        (
            "Settings",
            "class Settings {\n  constructor() {\n    this.values = new Map();\n  }\n\n"
            "  get(key) {\n    return this.values.get(key);\n  }\n\n"
            "  enable(key) {\n    this.values.set(key, true);\n  }\n\n"
            "  disable(key) {\n    this.values.set(key, false);\n  }\n\n"
            "  enabled(key) {\n    return this.values.get(key) === true;\n  }\n}\n",
        ),
        (
            "compose",
            "async function compose(middleware, ctx) {\n"
            "  for (const fn of middleware) {\n    await fn(ctx);\n  }\n  return ctx;\n}\n",
        ),
        ("", "\nmodule.exports = { createApplication, Settings, compose };\n"),
    ],
}


def javascript_repo(root: Path) -> list[tuple[str, str, int]]:
    """Write JS_FILES; (name or Class.method, path, first line) of every definition."""
    out = []
    for rel, parts in JS_FILES.items():
        text, line = "", 1
        for name, source in parts:
            if text and not text.endswith("\n\n"):
                text += "\n"
                line += 1
            if name:
                out.append((name, rel, line))
                if source.startswith("class "):
                    for i, src_line in enumerate(source.split("\n")):
                        method = src_line.strip().split("(")[0]
                        if (
                            src_line.startswith("  ")
                            and not src_line.startswith("   ")
                            and src_line.rstrip().endswith("{")
                            and method.isidentifier()
                            and method not in ("if", "for", "return", "constructor")
                        ):
                            out.append((f"{name}.{method}", rel, line + i))
            text += source
            line += source.count("\n")
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return out


def _index_two_codebases(dsn, make_repo):
    py_root = make_repo.folder / "click"
    shutil.copytree(Path(click.__file__).parent, py_root, ignore=shutil.ignore_patterns("*.pyc"))
    js_root = make_repo.folder / "minijs"
    js_root.mkdir()
    pairs = {"click": python_definitions(py_root), "minijs": javascript_repo(js_root)}
    for name, root in (("click", py_root), ("minijs", js_root)):
        git(root, "init", "-q", "-b", "main")
        commit(root, "import")
        with psycopg.connect(dsn) as conn:
            index_repository(conn, root, name=name, tenant="t", embed=False, show_progress=False)
    return pairs


@pytest.fixture
def two_codebases(db, dsn, make_repo, snapshots):
    """click and minijs indexed for t (once per session, copied into this test's database)."""
    pairs = snapshots.load("two_codebases", _index_two_codebases, dsn, make_repo)
    tenant = db.execute("select id from codesift.tenants where name = 't'").fetchone()[0]
    return tenant, pairs


def test_every_definition_is_found_exactly(app_connect, two_codebases):
    tenant, pairs = two_codebases
    conn = app_connect(tenant)
    assert len(pairs["click"]) >= 50 and len(pairs["minijs"]) >= 25
    missed = []
    for repo, expected in pairs.items():
        for name, path, line in expected:
            rows = conn.execute(
                "select path, start_line, symbol, match"
                " from codesift.find_symbol(%s, repo => %s, include_body => false,"
                " max_results => 200)",
                (name, repo),
            ).fetchall()
            if (path, line) not in {(r[0], r[1]) for r in rows}:
                missed.append((repo, name, path, line, rows[:3]))
            assert all(r[3] == "exact" for r in rows), (name, rows)
            assert all(name in (r[2], r[2].rsplit(".", 1)[-1]) for r in rows), (name, rows)
    found = sum(len(v) for v in pairs.values()) - len(missed)
    assert missed == [], f"{found} of {sum(len(v) for v in pairs.values())} found: {missed[:10]}"


def test_absent_names_return_nothing_with_the_nearest(app_connect, two_codebases):
    tenant, _ = two_codebases
    conn = app_connect(tenant)
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    for name, repo, near in (
        ("get_curent_context", "click", "get_current_context"),
        ("createAplication", "minijs", "createApplication"),
        ("matchPaths", "minijs", "matchPath"),
    ):
        notices.clear()
        assert (
            conn.execute(
                "select * from codesift.find_symbol(%s, repo => %s)", (name, repo)
            ).fetchall()
            == []
        )
        assert len(notices) == 1 and "nearest names:" in notices[0] and near in notices[0]
    notices.clear()
    assert conn.execute("select * from codesift.find_symbol('zzqqxxjj')").fetchall() == []
    assert notices == ["no symbol named 'zzqqxxjj'; no similar name is indexed"]


def python_names_and_docstrings(root: Path) -> list[tuple[str, str, int, int, str | None]]:
    """(name or Class.method, path, first line incl. decorators, the line of `def`/`class`,
    the docstring's first line or None) of click's top-level definitions and methods, read
    with Python's own parser."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text())
        for node, name in _definitions(tree):
            doc = ast.get_docstring(node)
            first = doc.split("\n", 1)[0] if doc else None
            out.append((name, rel, _first_line(node), node.lineno, first))
    return out


def _definitions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node, node.name
        if isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield child, f"{node.name}.{child.name}"


def test_name_lines_and_docstrings_of_a_real_package(app_connect, two_codebases):
    """Every definition of click comes back with the line of its `def` or `class` (below
    its decorators: click has hundreds of @t.overload, @property and @classmethod) and, when
    it has a docstring, the docstring's first line as the first line of its doc."""
    tenant, _ = two_codebases
    conn = app_connect(tenant)
    expected = python_names_and_docstrings(Path(click.__file__).parent)
    decorated = [e for e in expected if e[2] != e[3]]
    documented = [e for e in expected if e[4] and "\\" not in e[4]]
    assert len(decorated) >= 20 and len(documented) >= 50
    wrong = []
    for name, path, first, def_line, doc_line in expected:
        rows = conn.execute(
            "select name_line, doc from codesift.find_symbol(%s, repo => 'click',"
            " include_body => false, max_results => 200) where path = %s and start_line = %s",
            (name, path, first),
        ).fetchall()
        got = [(r[0], (r[1] or "").split("\n", 1)[0] or None) for r in rows]
        want = (def_line, doc_line)
        if doc_line is None or "\\" in doc_line:  # a comment above; escapes kept as written
            got = [(line, None) for line, _ in got]
            want = (def_line, None)
        if got != [want]:
            wrong.append((name, path, want, got))
    assert wrong == [], f"{len(wrong)} of {len(expected)}: {wrong[:5]}"
