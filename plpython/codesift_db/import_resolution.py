"""Resolution of import statements (import_extraction.extract_imports) to the paths of the
files they name inside the same repository. Plain Python, no database.

* ``resolve_import(source_path, module, language, paths, go_module)`` maps one import string to
  the repo-relative path of the file it names *inside the same repository*, or ``None`` for
  anything external (stdlib, packages, crates, the JDK) or unresolvable.
* ``resolve_imports(...)`` is a convenience over it for one file: it resolves every import and
  also handles ``from pkg import submodule`` (Python) and ``use a::b::{c, d}`` (Rust), where
  the best target depends on the imported names.
* ``go_module_path(go_mod_text)`` reads the ``module`` line of a go.mod.

Which resolver reads a language is its ImportRules.style in languages.py. Nothing here raises
on bad input: anything odd resolves to ``None`` / ``[]``.
"""

from __future__ import annotations

import posixpath
import re
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from .languages import IMPORT_RULES

__all__ = ["go_module_path", "resolve_import", "resolve_imports"]

# --------------------------------------------------------------------------------------
# go.mod
# --------------------------------------------------------------------------------------


def go_module_path(go_mod_text: str) -> str | None:
    """The module path declared by a go.mod (``module example.com/m``), or None."""
    try:
        for line in go_mod_text.splitlines():
            line = line.split("//", 1)[0].strip()
            if line.startswith("module") and line[6:7] in (" ", "\t", '"'):
                value = line[6:].strip().strip('"`').strip()
                return value or None
        return None
    except Exception:
        return None


# --------------------------------------------------------------------------------------
# the repository index (built once per `paths` object)
# --------------------------------------------------------------------------------------


class _Index:
    """Lookups over the set of repository paths, built once per paths object."""

    def __init__(self, paths: Iterable[str]):
        self.paths: frozenset[str] | set[str]
        self.paths = paths if isinstance(paths, (set, frozenset)) else frozenset(paths)
        listing: dict[str, list[str]] = {}
        basenames: dict[str, list[str]] = {}
        dirs: set[str] = {""}
        for p in self.paths:
            if not isinstance(p, str):
                continue
            d, _, base = p.rpartition("/")
            listing.setdefault(d, []).append(base)
            basenames.setdefault(base, []).append(p)
            while d and d not in dirs:
                dirs.add(d)
                d = d.rpartition("/")[0]
        for files in listing.values():
            files.sort()
        for found in basenames.values():
            found.sort()
        self.listing = listing
        self.basenames = basenames
        self.dirs = dirs
        self._py_roots: dict[str, list[str]] | None = None
        self._rust_crates: dict[str, str] | None = None
        self._dirs_by_name: dict[str, list[str]] | None = None

    def has(self, path: str) -> bool:
        return path in self.paths

    def files_in(self, directory: str) -> list[str]:
        return self.listing.get(directory, [])

    def dirs_named(self, name: str) -> list[str]:
        """Directories whose last component is `name`, sorted."""
        if self._dirs_by_name is None:
            by_name: dict[str, list[str]] = {}
            for d in self.dirs:
                by_name.setdefault(d.rpartition("/")[2], []).append(d)
            for found in by_name.values():
                found.sort()
            self._dirs_by_name = by_name
        return self._dirs_by_name.get(name, [])

    def py_roots(self, top: str) -> list[str]:
        """Top-level directories D where D/top is a package dir or D/top.py a module."""
        if self._py_roots is None:
            roots: dict[str, set[str]] = {}
            for d in self.dirs:
                parts = d.split("/")
                if len(parts) == 2:
                    roots.setdefault(parts[1], set()).add(parts[0])
            for p in self.paths:
                parts = p.split("/")
                if len(parts) == 2 and parts[1].endswith((".py", ".pyi")):
                    roots.setdefault(parts[1].rsplit(".", 1)[0], set()).add(parts[0])
            self._py_roots = {k: sorted(v) for k, v in roots.items()}
        return self._py_roots.get(top, [])

    def rust_crates(self) -> dict[str, str]:
        """Workspace crate name (with '_') -> its src directory, from */src/lib.rs."""
        if self._rust_crates is None:
            crates: dict[str, str] = {}
            for p in sorted(self.basenames.get("lib.rs", [])):
                parts = p.split("/")
                if len(parts) >= 3 and parts[-2] == "src":
                    crates.setdefault(parts[-3].replace("-", "_"), "/".join(parts[:-1]))
            self._rust_crates = crates
        return self._rust_crates


_INDEX_CACHE: list[tuple[Any, int, _Index]] = []
_INDEX_CACHE_SIZE = 4


def _index(paths: Any) -> _Index:
    """The index for `paths`, cached per object (weakly) while its size is unchanged.

    A mutable set edited in place to the same size keeps its stale index: pass a new object
    (or a frozenset) after changing the file list."""
    if not isinstance(paths, (set, frozenset)):
        return _Index(paths)
    for i, (ref, size, idx) in enumerate(_INDEX_CACHE):
        if ref() is paths and size == len(paths):
            if i:
                _INDEX_CACHE.insert(0, _INDEX_CACHE.pop(i))
            return idx
    idx = _Index(paths)
    try:
        ref = weakref.ref(paths)
    except TypeError:
        return idx
    _INDEX_CACHE.insert(0, (ref, len(paths), idx))
    del _INDEX_CACHE[_INDEX_CACHE_SIZE:]
    return idx


def _norm(path: str) -> str | None:
    """Normalise a joined repo path; None when it escapes the repository root."""
    if not path:
        return ""
    norm = posixpath.normpath(path)
    if norm == ".":
        return ""
    if norm.startswith("../") or norm == ".." or norm.startswith("/"):
        return None
    return norm


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


# --------------------------------------------------------------------------------------
# resolution
# --------------------------------------------------------------------------------------


def resolve_import(
    source_path: str,
    module: str,
    language: str,
    paths: frozenset[str] | set[str],
    go_module: str | None = None,
    *,
    names: Sequence[str] | None = None,
) -> str | None:
    """Repo-relative path of the file an import names inside the same repository, else None.

    ``names`` (optional, keyword only) are the imported names from extract_imports; with them
    ``from pkg import sub`` resolves to ``pkg/sub.py`` when that submodule exists and
    ``use a::b::c`` tries the item path first. Never raises."""
    try:
        if not isinstance(module, str) or not module or not isinstance(source_path, str):
            return None
        if "\x00" in module or len(module) > 1000:
            return None
        idx = _index(paths)
        rules = IMPORT_RULES.get(language)
        style = rules.style if rules is not None else None
        if style == "js":
            return _resolve_js(source_path, module, language, idx)
        if style == "python":
            return _resolve_python(source_path, module, idx, names)
        if style == "go":
            return _resolve_go(source_path, module, idx, go_module)
        if style == "java":
            return _resolve_java(source_path, module, idx)
        if style == "rust":
            return _resolve_rust(source_path, module, idx, names)
        return None
    except Exception:
        return None


def resolve_imports(
    path: str,
    imports: Sequence[dict],
    language: str,
    paths: frozenset[str] | set[str],
    go_module: str | None = None,
) -> list[dict]:
    """Resolve every import of one file: the resolved ones, each a copy with ``target`` set.

    ``from pkg import a, b`` whose names are submodules gives one entry per submodule file
    (names narrowed to it) plus, for the remaining names, one for the package itself. Self
    edges (an import resolving to its own file) are dropped. Never raises."""
    out: list[dict] = []
    try:
        idx = _index(paths)
        for imp in imports:
            try:
                module = imp["module"]
                names = list(imp.get("names") or [])
                by_target: dict[str, list[str]] = {}
                if language in ("python", "rust") and names:
                    for name in names:
                        target = resolve_import(
                            path, module, language, idx.paths, go_module, names=[name]
                        )
                        if target is not None:
                            by_target.setdefault(target, []).append(name)
                else:
                    target = resolve_import(path, module, language, idx.paths, go_module)
                    if target is not None:
                        by_target[target] = names
                for target, tnames in by_target.items():
                    if target != path:
                        out.append({**imp, "names": tnames, "target": target})
            except Exception:
                continue
    except Exception:
        return out
    return out


# --- JS / TS --------------------------------------------------------------------------

_JS_EXTS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".d.ts", ".json")
_TS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".mjs", ".cjs", ".jsx", ".json")
_TS_FOR_JS = {
    ".js": (".ts", ".tsx", ".d.ts"),
    ".jsx": (".tsx",),
    ".mjs": (".mts", ".d.mts"),
    ".cjs": (".cts", ".d.cts"),
}


def _resolve_js(source: str, spec: str, language: str, idx: _Index) -> str | None:
    spec = spec.split("?", 1)[0].split("#", 1)[0]
    bases: list[str | None]
    if spec.startswith(("./", "../")) or spec in (".", ".."):
        base = _norm(posixpath.join(posixpath.dirname(source), spec))
        bases = [base] if base is not None else []
    elif spec.startswith("/") and not spec.startswith("//"):
        bases = [_norm(spec.lstrip("/"))]
    elif spec.startswith(("@/", "~/")):  # the usual bundler alias for src/ (never a package)
        bases = [_norm("src/" + spec[2:]), _norm(spec[2:])]
    else:
        return None  # bare package, node: builtin, URL
    ts_first = language in ("typescript", "tsx") or source.endswith((".ts", ".tsx", ".mts"))
    exts = _TS_EXTS if ts_first else _JS_EXTS
    for base in bases:
        if base is None:
            continue
        if base and idx.has(base):
            return base
        stem, ext = posixpath.splitext(base)
        for ts_ext in _TS_FOR_JS.get(ext, ()):  # TS ESM: './x.js' names x.ts
            if idx.has(stem + ts_ext):
                return stem + ts_ext
        if base:
            for ext in exts:
                if idx.has(base + ext):
                    return base + ext
        if base in idx.dirs:
            for ext in exts:
                candidate = _join(base, "index" + ext)
                if idx.has(candidate):
                    return candidate
    return None


# --- Python ---------------------------------------------------------------------------


def _py_module_file(directory: str, dotted: str, idx: _Index) -> str | None:
    rel = _join(directory, dotted.replace(".", "/")) if dotted else directory
    if dotted:
        for candidate in (rel + ".py", rel + ".pyi"):
            if idx.has(candidate):
                return candidate
    for candidate in (_join(rel, "__init__.py"), _join(rel, "__init__.pyi")):
        if idx.has(candidate):
            return candidate
    return None


def _py_resolve_in(
    directory: str, dotted: str, idx: _Index, names: Sequence[str] | None
) -> str | None:
    if names:
        for name in names:
            if name and name != "*" and re.fullmatch(r"\w+", name):
                sub = f"{dotted}.{name}" if dotted else name
                found = _py_module_file(directory, sub, idx)
                if found is not None:
                    return found
    return _py_module_file(directory, dotted, idx)


def _resolve_python(
    source: str, module: str, idx: _Index, names: Sequence[str] | None
) -> str | None:
    if not re.fullmatch(r"\.*(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?", module):
        return None
    dots = len(module) - len(module.lstrip("."))
    dotted = module[dots:]
    if dots:
        package = posixpath.dirname(source)
        for _ in range(dots - 1):
            if not package:
                return None
            package = posixpath.dirname(package)
        return _py_resolve_in(package, dotted, idx, names)
    if not dotted:
        return None
    top = dotted.split(".", 1)[0]
    roots = ["", "src"]
    roots.extend(r for r in idx.py_roots(top) if r not in roots)
    for root in roots:
        if root and root not in idx.dirs:
            continue
        if _join(root, top) not in idx.dirs and not idx.has(_join(root, top) + ".py"):
            if not idx.has(_join(root, top) + ".pyi"):
                continue
        found = _py_resolve_in(root, dotted, idx, names)
        if found is not None:
            return found
    return None


# --- Go -------------------------------------------------------------------------------


def _go_package_file(directory: str, idx: _Index) -> str | None:
    for name in idx.files_in(directory):
        if name.endswith(".go") and not name.endswith("_test.go"):
            return _join(directory, name)
    return None


def _resolve_go(source: str, module: str, idx: _Index, go_module: str | None) -> str | None:
    if module.startswith(("./", "../")):  # GOPATH-era relative import
        base = _norm(posixpath.join(posixpath.dirname(source), module))
        return _go_package_file(base, idx) if base is not None else None
    candidates: list[str] = []
    gm = (go_module or "").strip().rstrip("/")
    if gm and (module == gm or module.startswith(gm + "/")):
        rel = module[len(gm) :].lstrip("/")
        # the go.mod may sit in a subdirectory: prefer the one enclosing the source file
        roots = []
        d = posixpath.dirname(source)
        while True:
            if idx.has(_join(d, "go.mod")):
                roots.append(d)
            if not d:
                break
            d = posixpath.dirname(d)
        if "" not in roots:
            roots.append("")
        for r in roots:
            directory = _norm(_join(r, rel))
            if directory is not None:
                candidates.append(directory)
    candidates.append("vendor/" + module)
    for directory in candidates:
        found = _go_package_file(directory, idx)
        if found is not None:
            return found
    return None


# --- Java -----------------------------------------------------------------------------


def _closest(source: str, found: list[str]) -> str:
    """Among candidate paths prefer the one sharing the longest directory prefix with source."""
    if len(found) == 1:
        return found[0]
    src_parts = source.split("/")

    def shared(p: str) -> int:
        n = 0
        for a, b in zip(src_parts, p.split("/"), strict=False):
            if a != b:
                break
            n += 1
        return n

    return sorted(found, key=lambda p: (-shared(p), p))[0]


def _java_class_file(source: str, segments: list[str], idx: _Index) -> str | None:
    rel = "/".join(segments) + ".java"
    candidates = idx.basenames.get(segments[-1] + ".java", [])
    found = [p for p in candidates if p == rel or p.endswith("/" + rel)]
    return _closest(source, found) if found else None


def _resolve_java(source: str, module: str, idx: _Index) -> str | None:
    segments = [s for s in module.split(".") if s]
    if not segments:
        return None
    if segments[-1] == "*":
        package = segments[:-1]
        if not package:
            return None
        rel = "/".join(package)
        dirs = [d for d in idx.dirs_named(package[-1]) if d == rel or d.endswith("/" + rel)]
        found = []
        for d in dirs:
            for name in idx.files_in(d):
                if name.endswith(".java"):
                    found.append(_join(d, name))
                    break
        if found:
            return _closest(source, found)
        segments = package  # import static a.b.Strings.* : the class itself
    # a.b.C, a.b.C.member (static), a.b.Outer.Inner: drop trailing segments while the new
    # last segment still looks like a class name
    k = len(segments)
    while k >= 1:
        if k < len(segments) and not segments[k - 1][:1].isupper():
            break
        found_file = _java_class_file(source, segments[:k], idx)
        if found_file is not None:
            return found_file
        k -= 1
    return None


# --- Rust -----------------------------------------------------------------------------

_RUST_EXTERNAL = {"std", "core", "alloc", "proc_macro", "test"}
_RUST_ROOT_FILES = ("lib.rs", "main.rs")


def _rust_is_crate_root(source: str) -> bool:
    parts = source.split("/")
    if parts[-1] in _RUST_ROOT_FILES:
        return True
    return len(parts) >= 2 and parts[-2] in ("bin", "examples", "tests", "benches")


def _rust_module_dir(source: str) -> str:
    """Directory holding the child modules of the module defined by `source`."""
    if source.endswith("/mod.rs") or source == "mod.rs" or _rust_is_crate_root(source):
        return posixpath.dirname(source)
    return source[:-3] if source.endswith(".rs") else posixpath.dirname(source)


def _rust_crate_root(source: str, idx: _Index) -> str:
    d = posixpath.dirname(source)
    while True:
        if any(idx.has(_join(d, f)) for f in _RUST_ROOT_FILES):
            return d
        if not d:
            break
        d = posixpath.dirname(d)
    parts = source.split("/")
    if "src" in parts:
        return "/".join(parts[: len(parts) - 1 - parts[::-1].index("src")])
    return posixpath.dirname(source)


def _rust_module_file(directory: str, segments: Sequence[str], idx: _Index) -> str | None:
    rel = _join(directory, "/".join(segments)) if segments else directory
    if segments:
        for candidate in (rel + ".rs", _join(rel, "mod.rs")):
            if idx.has(candidate):
                return candidate
        return None
    for name in _RUST_ROOT_FILES:
        if idx.has(_join(rel, name)):
            return _join(rel, name)
    if rel and idx.has(rel + ".rs"):
        return rel + ".rs"
    if idx.has(_join(rel, "mod.rs")):
        return _join(rel, "mod.rs")
    return None


def _rust_longest(directory: str, segments: list[str], idx: _Index, minimum: int) -> str | None:
    for k in range(len(segments), minimum - 1, -1):
        found = _rust_module_file(directory, segments[:k], idx)
        if found is not None:
            return found
    return None


def _resolve_rust(source: str, module: str, idx: _Index, names: Sequence[str] | None) -> str | None:
    segments = [s for s in module.split("::") if s]
    if not segments or not all(re.fullmatch(r"\w+", s) for s in segments):
        return None
    if names:
        extra = [n for n in names if n and n != "*" and re.fullmatch(r"\w+", n)]
        if extra:
            segments = segments + extra[:1]
    head = segments[0]
    if head in _RUST_EXTERNAL:
        return None
    if head == "crate":
        return _rust_longest(_rust_crate_root(source, idx), segments[1:], idx, 0)
    if head in ("self", "super"):
        directory = _rust_module_dir(source)
        rest = segments
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                if not directory:
                    return None
                directory = posixpath.dirname(directory)
            rest = rest[1:]
        return _rust_longest(directory, rest, idx, 0)
    # `mod foo;` or a 2018-edition path starting at a module in scope
    found = _rust_longest(_rust_module_dir(source), segments, idx, 1)
    if found is not None:
        return found
    crate_src = idx.rust_crates().get(head.replace("-", "_"))
    if crate_src is not None:  # another crate of the same workspace
        return _rust_longest(crate_src, segments[1:], idx, 0)
    return None
