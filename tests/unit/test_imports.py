"""Unit tests of import extraction and resolution (no database)."""

import time

import pytest
from codesift_db.ingest.import_extraction import MAX_PARSE_BYTES, extract_imports
from codesift_db.ingest.import_resolution import go_module_path, resolve_import, resolve_imports


def mods(imports):
    return [i["module"] for i in imports]


def by_module(imports):
    return {i["module"]: i for i in imports}


# --------------------------------------------------------------------------------------
# JavaScript / TypeScript
# --------------------------------------------------------------------------------------

JS_PATHS = frozenset(
    {
        "package.json",
        "index.js",
        "lib/express.js",
        "lib/router/index.js",
        "lib/router/route.js",
        "lib/router/layer.js",
        "lib/utils.js",
        "lib/view.mjs",
        "lib/data.json",
        "lib/middleware/index.ts",
        "test/app.router.js",
    }
)

EXPRESS_JS = """'use strict';
/**
 * Module dependencies. require('./not-a-real-import') in a comment
 */
var bodyParser = require('body-parser');
var EventEmitter = require('events').EventEmitter;
var mixin = require('merge-descriptors');
var proto = require('./application');
var Route = require('./router/route');
var Router = require('./router');
var { compileETag, compileQueryParser } = require('./utils');
var fs = require('node:fs');
const msg = "require('./in-a-string')";

async function lazy() {
  const view = await import('./view.mjs');
  return view;
}
module.exports = createApplication;
"""


def test_js_require_names_and_relations():
    imps = extract_imports("lib/express.js", EXPRESS_JS, "javascript")
    assert mods(imps) == [
        "body-parser",
        "events",
        "merge-descriptors",
        "./application",
        "./router/route",
        "./router",
        "./utils",
        "node:fs",
        "./view.mjs",
    ]
    got = by_module(imps)
    assert got["./router"] == {
        "module": "./router",
        "names": ["Router"],
        "relation": "require",
        "line": 10,
    }
    assert got["events"]["names"] == ["EventEmitter"]  # require('events').EventEmitter
    assert got["./utils"]["names"] == ["compileETag", "compileQueryParser"]
    assert got["./view.mjs"]["relation"] == "dynamic_import"
    assert got["./view.mjs"]["names"] == ["view"]
    assert got["./view.mjs"]["line"] == 16


def test_js_resolution_relative_index_and_extensions():
    src = "lib/express.js"
    assert resolve_import(src, "./router/route", "javascript", JS_PATHS) == "lib/router/route.js"
    # a directory import resolves to its index file
    assert resolve_import(src, "./router", "javascript", JS_PATHS) == "lib/router/index.js"
    assert resolve_import(src, "./view.mjs", "javascript", JS_PATHS) == "lib/view.mjs"
    assert resolve_import(src, "./data", "javascript", JS_PATHS) == "lib/data.json"
    assert resolve_import(src, "./middleware", "javascript", JS_PATHS) == "lib/middleware/index.ts"
    assert resolve_import("test/app.router.js", "../lib/express", "javascript", JS_PATHS) == (
        "lib/express.js"
    )
    assert resolve_import("index.js", "./lib/express", "javascript", JS_PATHS) == "lib/express.js"
    assert resolve_import("lib/router/index.js", "/lib/utils", "javascript", JS_PATHS) == (
        "lib/utils.js"
    )


@pytest.mark.parametrize(
    "spec",
    ["express", "node:fs", "@scope/pkg", "body-parser", "./missing", "../../outside", "lodash/fp"],
)
def test_js_external_or_missing_is_none(spec):
    assert resolve_import("lib/express.js", spec, "javascript", JS_PATHS) is None


TS_PATHS = frozenset(
    {
        "tsconfig.json",
        "src/index.ts",
        "src/server.ts",
        "src/routes/users.ts",
        "src/routes/index.ts",
        "src/models/user.ts",
        "src/types.d.ts",
        "src/components/Button.tsx",
        "src/components/App.tsx",
    }
)

SERVER_TS = """import express, { Request, Response as Res } from 'express';
import type { User } from './models/user.js';
import * as routes from './routes/index.js';
import './types';
export { listUsers, createUser as addUser } from './routes/users.js';
export * from './models/user.js';
import fs = require('fs');

const app = express();
"""


def test_ts_names_default_named_namespace_reexport():
    imps = extract_imports("src/server.ts", SERVER_TS, "typescript")
    got = by_module(imps)
    assert got["express"]["names"] == ["express", "Request", "Response"]  # original names
    assert [i["names"] for i in imps if i["module"] == "./models/user.js"] == [["User"], ["*"]]
    assert got["./routes/index.js"]["names"] == ["*"]
    assert got["./types"]["names"] == []
    assert got["./routes/users.js"]["names"] == ["listUsers", "createUser"]
    assert got["fs"]["relation"] == "require"
    assert got["fs"]["names"] == ["fs"]


def test_ts_js_specifier_resolves_to_ts_file():
    src = "src/server.ts"
    assert resolve_import(src, "./models/user.js", "typescript", TS_PATHS) == "src/models/user.ts"
    assert resolve_import(src, "./routes/index.js", "typescript", TS_PATHS) == (
        "src/routes/index.ts"
    )
    assert resolve_import(src, "./routes", "typescript", TS_PATHS) == "src/routes/index.ts"
    assert resolve_import(src, "./types", "typescript", TS_PATHS) == "src/types.d.ts"
    assert resolve_import(src, "express", "typescript", TS_PATHS) is None
    assert resolve_import(src, "fs", "typescript", TS_PATHS) is None


def test_tsx_jsx_import():
    text = """import React from 'react';
import { Button } from './Button';
export default function App() { return <Button label="hi" />; }
"""
    imps = extract_imports("src/components/App.tsx", text, "tsx")
    assert [(i["module"], i["names"]) for i in imps] == [
        ("react", ["React"]),
        ("./Button", ["Button"]),
    ]
    assert resolve_import("src/components/App.tsx", "./Button", "tsx", TS_PATHS) == (
        "src/components/Button.tsx"
    )


def test_js_prefers_js_for_js_sources_and_ts_for_ts_sources():
    paths = {"a/x.js", "a/x.ts", "a/main.js", "a/main.ts"}
    assert resolve_import("a/main.js", "./x", "javascript", paths) == "a/x.js"
    assert resolve_import("a/main.ts", "./x", "typescript", paths) == "a/x.ts"


# --------------------------------------------------------------------------------------
# Python
# --------------------------------------------------------------------------------------

PY_PATHS = frozenset(
    {
        "setup.py",
        "src/shop/__init__.py",
        "src/shop/models/__init__.py",
        "src/shop/models/user.py",
        "src/shop/api/__init__.py",
        "src/shop/api/views.py",
        "src/shop/api/serializers.py",
        "src/shop/utils.py",
        "tests/conftest.py",
        "tests/helpers.py",
        "tests/test_views.py",
        "lib/vendored/__init__.py",
        "lib/vendored/six.py",
    }
)

VIEWS_PY = '''"""API views. import os  (a docstring, not an import)"""
from __future__ import annotations

import json
import os.path as osp
from typing import Any

from ..models import User
from . import serializers
from .serializers import UserSerializer, dump as dump_user
from shop.utils import slugify
from vendored import six
# from shop.secret import key

try:
    import ujson
except ImportError:  # pragma: no cover
    ujson = None


def handler(request):
    from ..models.user import load_user
    mod = importlib.import_module("shop.api.serializers")
    return load_user(request)
'''


def test_python_extract_names_lines_and_skips():
    imps = extract_imports("src/shop/api/views.py", VIEWS_PY, "python")
    assert mods(imps) == [
        "json",
        "os.path",
        "typing",
        "..models",
        ".",
        ".serializers",
        "shop.utils",
        "vendored",
        "ujson",
        "..models.user",
        "shop.api.serializers",
    ]
    got = by_module(imps)
    assert got["..models"] == {
        "module": "..models",
        "names": ["User"],
        "relation": "import",
        "line": 8,
    }
    assert got["."]["names"] == ["serializers"]
    assert got[".serializers"]["names"] == ["UserSerializer", "dump"]
    assert got["os.path"]["names"] == []
    assert got["shop.api.serializers"]["relation"] == "dynamic_import"


def test_python_star_import():
    imps = extract_imports("a.py", "from pkg.sub import *\n", "python")
    assert imps == [{"module": "pkg.sub", "names": ["*"], "relation": "import", "line": 1}]


def test_python_relative_resolution():
    src = "src/shop/api/views.py"
    assert resolve_import(src, "..models", "python", PY_PATHS) == "src/shop/models/__init__.py"
    assert resolve_import(src, "..models.user", "python", PY_PATHS) == "src/shop/models/user.py"
    assert resolve_import(src, ".serializers", "python", PY_PATHS) == "src/shop/api/serializers.py"
    assert resolve_import(src, ".", "python", PY_PATHS) == "src/shop/api/__init__.py"
    assert resolve_import(src, "..utils", "python", PY_PATHS) == "src/shop/utils.py"
    # submodule preferred over the package when the imported name is a module
    assert (
        resolve_import(src, ".", "python", PY_PATHS, names=["serializers"])
        == "src/shop/api/serializers.py"
    )
    assert (
        resolve_import(src, "..models", "python", PY_PATHS, names=["User"])
        == "src/shop/models/__init__.py"
    )
    assert resolve_import(src, "....too.far", "python", PY_PATHS) is None


def test_python_absolute_src_layout_and_top_level_dirs():
    src = "src/shop/api/views.py"
    assert resolve_import(src, "shop.utils", "python", PY_PATHS) == "src/shop/utils.py"
    assert resolve_import(src, "shop", "python", PY_PATHS) == "src/shop/__init__.py"
    assert resolve_import(src, "shop.api", "python", PY_PATHS, names=["views"]) == (
        "src/shop/api/views.py"
    )
    assert resolve_import(src, "vendored", "python", PY_PATHS) == "lib/vendored/__init__.py"
    assert resolve_import(src, "vendored", "python", PY_PATHS, names=["six"]) == (
        "lib/vendored/six.py"
    )
    # a test module importing a sibling helper (pytest rootdir-style)
    assert resolve_import("tests/test_views.py", "helpers", "python", PY_PATHS) == (
        "tests/helpers.py"
    )


@pytest.mark.parametrize("module", ["json", "os.path", "typing", "ujson", "requests", "shop.nope"])
def test_python_stdlib_third_party_missing_is_none(module):
    assert resolve_import("src/shop/api/views.py", module, "python", PY_PATHS) is None


def test_python_flat_layout_wins_over_src():
    paths = {"pkg/__init__.py", "pkg/core.py", "src/pkg/core.py", "app.py"}
    assert resolve_import("app.py", "pkg.core", "python", paths) == "pkg/core.py"


def test_resolve_imports_splits_submodules_and_drops_externals():
    imps = extract_imports("src/shop/api/views.py", VIEWS_PY, "python")
    edges = resolve_imports("src/shop/api/views.py", imps, "python", PY_PATHS)
    pairs = [(e["target"], e["names"]) for e in edges]
    assert ("src/shop/models/__init__.py", ["User"]) in pairs
    assert ("src/shop/api/serializers.py", ["serializers"]) in pairs
    assert ("src/shop/api/serializers.py", ["UserSerializer", "dump"]) in pairs
    assert ("src/shop/utils.py", ["slugify"]) in pairs
    assert ("lib/vendored/six.py", ["six"]) in pairs
    assert ("src/shop/models/user.py", ["load_user"]) in pairs
    targets = {e["target"] for e in edges}
    assert all(t in PY_PATHS for t in targets)
    assert "src/shop/api/views.py" not in targets
    assert all({"module", "names", "relation", "line", "target"} <= set(e) for e in edges)


# --------------------------------------------------------------------------------------
# Go
# --------------------------------------------------------------------------------------

GO_MOD = """// the module
module github.com/acme/shop

go 1.22

require github.com/google/uuid v1.6.0
"""

GO_PATHS = frozenset(
    {
        "go.mod",
        "go.sum",
        "cmd/shop/main.go",
        "internal/store/store.go",
        "internal/store/memory.go",
        "internal/store/store_test.go",
        "internal/store/a_test.go",
        "pkg/api/handlers.go",
        "pkg/api/routes.go",
        "pkg/onlytests/x_test.go",
    }
)

MAIN_GO = """package main

import (
	"fmt"
	"net/http"

	"github.com/acme/shop/internal/store"
	api "github.com/acme/shop/pkg/api"
	_ "github.com/google/uuid"
)

// import "github.com/acme/shop/not/real"
func main() { fmt.Println(store.New(), api.Routes(), http.StatusOK) }
"""


def test_go_module_path():
    assert go_module_path(GO_MOD) == "github.com/acme/shop"
    assert go_module_path('module "example.com/quoted" // c\n') == "example.com/quoted"
    assert go_module_path("go 1.21\n") is None
    assert go_module_path("") is None


def test_go_extract():
    imps = extract_imports("cmd/shop/main.go", MAIN_GO, "go")
    assert mods(imps) == [
        "fmt",
        "net/http",
        "github.com/acme/shop/internal/store",
        "github.com/acme/shop/pkg/api",
        "github.com/google/uuid",
    ]
    assert imps[2] == {
        "module": "github.com/acme/shop/internal/store",
        "names": [],
        "relation": "import",
        "line": 7,
    }
    single = extract_imports("x.go", 'package x\nimport . "strings"\n', "go")
    assert single == [{"module": "strings", "names": ["*"], "relation": "import", "line": 2}]


def test_go_resolution():
    gm = go_module_path(GO_MOD)
    src = "cmd/shop/main.go"
    mod = "github.com/acme/shop/internal/store"
    # first sorted non-test file of the package directory
    assert resolve_import(src, mod, "go", GO_PATHS, gm) == "internal/store/memory.go"
    assert resolve_import(src, "github.com/acme/shop/pkg/api", "go", GO_PATHS, gm) == (
        "pkg/api/handlers.go"
    )
    for external in ("fmt", "net/http", "github.com/google/uuid", "github.com/acme/shopx/y"):
        assert resolve_import(src, external, "go", GO_PATHS, gm) is None
    assert resolve_import(src, "github.com/acme/shop/pkg/onlytests", "go", GO_PATHS, gm) is None
    assert resolve_import(src, mod, "go", GO_PATHS, None) is None  # no go.mod known


def test_go_module_in_subdirectory():
    paths = {"backend/go.mod", "backend/main.go", "backend/internal/db/db.go", "web/app.js"}
    got = resolve_import(
        "backend/main.go", "example.com/b/internal/db", "go", paths, "example.com/b"
    )
    assert got == "backend/internal/db/db.go"


# --------------------------------------------------------------------------------------
# Java
# --------------------------------------------------------------------------------------

JAVA_PATHS = frozenset(
    {
        "pom.xml",
        "src/main/java/com/acme/shop/App.java",
        "src/main/java/com/acme/util/Strings.java",
        "src/main/java/com/acme/util/Lists.java",
        "src/main/java/com/acme/model/Order.java",
        "src/test/java/com/acme/shop/AppTest.java",
    }
)

APP_JAVA = """package com.acme.shop;

import java.util.List;
import com.acme.util.Strings;
import static com.acme.util.Strings.join;
import com.acme.model.*;
import static org.junit.Assert.*;
/* import com.acme.fake.Nope; */

public class App {
    String s = "import com.acme.fake.InString;";
}
"""


def test_java_extract():
    imps = extract_imports("src/main/java/com/acme/shop/App.java", APP_JAVA, "java")
    assert [(i["module"], i["names"], i["line"]) for i in imps] == [
        ("java.util.List", ["List"], 3),
        ("com.acme.util.Strings", ["Strings"], 4),
        ("com.acme.util.Strings.join", ["join"], 5),
        ("com.acme.model.*", ["*"], 6),
        ("org.junit.Assert.*", ["*"], 7),
    ]
    assert {i["relation"] for i in imps} == {"import"}


def test_java_resolution():
    src = "src/test/java/com/acme/shop/AppTest.java"
    util = "src/main/java/com/acme/util/Strings.java"
    assert resolve_import(src, "com.acme.util.Strings", "java", JAVA_PATHS) == util
    assert resolve_import(src, "com.acme.util.Strings.join", "java", JAVA_PATHS) == util  # static
    assert resolve_import(src, "com.acme.util.Strings.*", "java", JAVA_PATHS) == util
    assert resolve_import(src, "com.acme.model.*", "java", JAVA_PATHS) == (
        "src/main/java/com/acme/model/Order.java"
    )
    assert resolve_import(src, "com.acme.util.*", "java", JAVA_PATHS) == (
        "src/main/java/com/acme/util/Lists.java"
    )
    for external in ("java.util.List", "org.junit.Assert.*", "com.acme.util.Missing"):
        assert resolve_import(src, external, "java", JAVA_PATHS) is None


def test_java_prefers_same_module_in_multi_module_build():
    paths = {
        "core/src/main/java/com/acme/Util.java",
        "web/src/main/java/com/acme/Util.java",
        "web/src/main/java/com/acme/web/Main.java",
    }
    got = resolve_import("web/src/main/java/com/acme/web/Main.java", "com.acme.Util", "java", paths)
    assert got == "web/src/main/java/com/acme/Util.java"


# --------------------------------------------------------------------------------------
# Rust
# --------------------------------------------------------------------------------------

RUST_PATHS = frozenset(
    {
        "Cargo.toml",
        "src/lib.rs",
        "src/main.rs",
        "src/config.rs",
        "src/net/mod.rs",
        "src/net/http.rs",
        "src/net/http/headers.rs",
        "src/net/tcp.rs",
        "src/util/strings.rs",
        "src/util.rs",
        "tests/common/mod.rs",
        "tests/integration.rs",
    }
)

LIB_RS = """//! The crate. mod fake; in a doc comment
pub mod config;
pub mod net;
mod util;
mod missing;
mod inline { pub fn f() {} }

use std::collections::HashMap;
use serde::{Deserialize, Serialize};
use crate::net::http::Client;
use crate::net::{tcp, http::{self, Request as Req}};
use crate::config::*;
"""


def test_rust_extract():
    imps = extract_imports("src/lib.rs", LIB_RS, "rust")
    assert [(i["module"], i["names"], i["relation"], i["line"]) for i in imps] == [
        ("config", [], "mod", 2),
        ("net", [], "mod", 3),
        ("util", [], "mod", 4),
        ("missing", [], "mod", 5),
        ("std::collections", ["HashMap"], "use", 8),
        ("serde", ["Deserialize", "Serialize"], "use", 9),
        ("crate::net::http", ["Client"], "use", 10),
        ("crate::net", ["tcp", "http"], "use", 11),
        ("crate::net::http", ["Request"], "use", 11),
        ("crate::config", ["*"], "use", 12),
    ]


def test_rust_mod_resolution():
    assert resolve_import("src/lib.rs", "config", "rust", RUST_PATHS) == "src/config.rs"
    assert resolve_import("src/lib.rs", "net", "rust", RUST_PATHS) == "src/net/mod.rs"
    assert resolve_import("src/lib.rs", "missing", "rust", RUST_PATHS) is None
    # in mod.rs, children live beside it
    assert resolve_import("src/net/mod.rs", "http", "rust", RUST_PATHS) == "src/net/http.rs"
    # 2018 rule: src/net/http.rs declaring `mod headers;` -> src/net/http/headers.rs
    assert resolve_import("src/net/http.rs", "headers", "rust", RUST_PATHS) == (
        "src/net/http/headers.rs"
    )
    # src/util.rs with `mod strings;` -> src/util/strings.rs
    assert resolve_import("src/util.rs", "strings", "rust", RUST_PATHS) == "src/util/strings.rs"
    # integration tests are crate roots: tests/x.rs `mod common;` -> tests/common/mod.rs
    assert resolve_import("tests/integration.rs", "common", "rust", RUST_PATHS) == (
        "tests/common/mod.rs"
    )


def test_rust_use_resolution():
    src = "src/main.rs"
    assert resolve_import(src, "crate::net::http", "rust", RUST_PATHS) == "src/net/http.rs"
    assert resolve_import(src, "crate::net::http::Client", "rust", RUST_PATHS) == (
        "src/net/http.rs"
    )
    assert resolve_import(src, "crate::net", "rust", RUST_PATHS, names=["tcp"]) == "src/net/tcp.rs"
    assert resolve_import(src, "crate::config", "rust", RUST_PATHS) == "src/config.rs"
    assert resolve_import(src, "crate", "rust", RUST_PATHS) == "src/lib.rs"
    assert resolve_import("src/net/tcp.rs", "super::http", "rust", RUST_PATHS) == (
        "src/net/http.rs"
    )
    assert resolve_import("src/net/tcp.rs", "super", "rust", RUST_PATHS) == "src/net/mod.rs"
    assert resolve_import("src/net/http.rs", "self::headers", "rust", RUST_PATHS) == (
        "src/net/http/headers.rs"
    )
    for external in ("std::collections", "serde", "tokio::net", "core::fmt"):
        assert resolve_import(src, external, "rust", RUST_PATHS) is None


def test_rust_workspace_crate():
    paths = {"crates/shop-core/src/lib.rs", "crates/shop-core/src/db.rs", "app/src/main.rs"}
    got = resolve_import("app/src/main.rs", "shop_core::db", "rust", paths, names=["Pool"])
    assert got == "crates/shop-core/src/db.rs"


# --------------------------------------------------------------------------------------
# robustness
# --------------------------------------------------------------------------------------

LANGS = ["python", "javascript", "typescript", "tsx", "go", "java", "rust"]

NASTY = [
    "",
    "\x00\x00import os\x00",
    "import (((((",
    "from . import",
    "\ud800 lone surrogate import x",
    "import " + "a." * 5000 + "b",
    "require(" * 10000,
    "use crate::{" * 2000,
    "\xff\xfe" + "é" * 1000,
    "import 😀 from '😀'; const x = require('./ü');",
]


@pytest.mark.parametrize("language", LANGS + ["cobol", ""])
@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_never_raises_on_garbage(language, text):
    imps = extract_imports("x", text, language)
    assert isinstance(imps, list)
    for imp in imps:
        assert set(imp) == {"module", "names", "relation", "line"}
        resolve_import("x", imp["module"], language, {"x", "a/b.py"}, "m")


def test_non_string_inputs():
    assert extract_imports("x.py", None, "python") == []  # type: ignore[arg-type]
    assert resolve_import("x.py", None, "python", {"x.py"}) is None  # type: ignore[arg-type]
    assert resolve_import("x.py", "os", "python", None) is None  # type: ignore[arg-type]
    assert resolve_import("x.py", "os", "klingon", {"x.py"}) is None
    assert resolve_imports("x.py", [{"bogus": 1}], "python", {"x.py"}) == []


def test_syntax_errors_keep_the_good_imports():
    text = "import os\nfrom .models import User\ndef broken(:\n    pass\nimport json\n"
    assert mods(extract_imports("a/b.py", text, "python")) == ["os", ".models", "json"]
    js = "import a from './a';\nfunction (( {\nconst b = require('./b');\n"
    assert "./a" in mods(extract_imports("x.js", js, "javascript"))


def test_huge_inputs_are_bounded():
    one_line = "var a = require('./a'); " + "x = 1 + 2; " * 200_000  # ~2 MB, one line
    started = time.monotonic()
    imps = extract_imports("big.js", one_line, "javascript")
    assert mods(imps)[:1] == ["./a"]
    huge = "import os\n" + "x = 1\n" * (MAX_PARSE_BYTES // 3)
    assert mods(extract_imports("big.py", huge, "python")) == ["os"]
    no_imports = "y = 2\n" * 1_000_000
    assert extract_imports("big.py", no_imports, "python") == []
    assert time.monotonic() - started < 30  # generous: a sanity bound, not a benchmark


def test_index_cache_follows_a_new_paths_object():
    paths = {"a/x.js"}
    assert resolve_import("a/m.js", "./x", "javascript", paths) == "a/x.js"
    assert resolve_import("a/m.js", "./y", "javascript", paths) is None
    paths2 = {"a/x.js", "a/y.js"}
    assert resolve_import("a/m.js", "./y", "javascript", paths2) == "a/y.js"
    assert resolve_import("a/m.js", "./y", "javascript", ["a/y.js"]) == "a/y.js"  # any iterable


def test_huge_go_file_keeps_its_import_group():
    text = 'package big\n\nimport (\n\t"fmt"\n\t"example.com/m/a"\n)\n' + "var x = 1\n" * 200_000
    assert mods(extract_imports("big.go", text, "go")) == ["fmt", "example.com/m/a"]
