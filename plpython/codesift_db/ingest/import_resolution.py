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

Resolving an import costs the same whatever the size of the repository: every lookup goes
through the index of the paths (_Index, built once per paths object), and what depends on
many paths (the files ending with a Java package path, the nearest of them to the importing
file, a Go package's first file, the top-level folders holding a Python package) is indexed
or computed once and kept. A repository of thousands of namesakes (m0001/src/com/acme/
Util.java, ...) made each import compare the importing file with each of them.
"""

from __future__ import annotations

import posixpath
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..budget import no_ticks
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


# Groups of paths up to this size are searched by reading them; larger ones are indexed.
_SMALL = 16


class _Trie:
    """Paths by their components, first to last (or last to first): each node lists the
    paths through it, in the order they were added (sorted, when added sorted)."""

    __slots__ = ("children", "paths")

    def __init__(self) -> None:
        self.children: dict[str, _Trie] = {}
        self.paths: list[str] = []

    @classmethod
    def of(cls, paths: Iterable[str], reverse: bool = False) -> _Trie:
        root = cls()
        for p in paths:
            root.paths.append(p)
            node = root
            parts = p.split("/")
            for part in reversed(parts) if reverse else parts:
                child = node.children.get(part)
                if child is None:
                    child = node.children[part] = cls()
                child.paths.append(p)
                node = child
        return root

    def ending(self, rel: str) -> list[str]:
        """In a reversed trie: the paths that are rel or end with '/' + rel."""
        node = self
        for part in reversed(rel.split("/")):
            found = node.children.get(part)
            if found is None:
                return []
            node = found
        return node.paths

    def nearest(self, source: str) -> str:
        """In a trie of sorted paths: the first of those sharing the most leading
        components with source (what _closest says, in the length of source)."""
        node = self
        for part in source.split("/"):
            found = node.children.get(part)
            if found is None:
                break
            node = found
        return node.paths[0]


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
        self._tails: dict[str, list[str]] | None = None
        # computed once per key (a folder, a relative path), kept for the index's life
        self._suffixes: dict[tuple[str, str], _Trie] = {}
        self._ending: dict[tuple[str, str], list[str]] = {}
        self._nearest: dict[tuple[str, str], _Trie] = {}
        self._go_files: dict[str, str | None] = {}
        self._go_roots: dict[str, list[str]] = {}
        self._java_files: dict[str, str | None] = {}
        self._java_packages: dict[str, list[str]] = {}
        self._rust_root: tuple[str, str] | None = None

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

    def top_dirs_holding(self, rels: Iterable[str], skip: Sequence[str]) -> str | None:
        """The first top-level folder D (by name, not one of skip) holding a path D/rel for
        one of rels."""
        if self._tails is None:
            tails: dict[str, list[str]] = {}
            for p in self.paths:
                head, slash, tail = p.partition("/")
                if slash:
                    tails.setdefault(tail, []).append(head)
            for heads in tails.values():
                heads.sort()
            self._tails = tails
        first = None
        for rel in rels:
            for head in self._tails.get(rel, ()):
                if head not in skip:
                    if first is None or head < first:
                        first = head
                    break
        return first

    def _ending_in(self, kind: str, group: list[str], rel: str) -> list[str]:
        """The paths of group (sorted, all with rel's last component) that are rel or end
        with '/' + rel, sorted."""
        key = (kind, rel)
        found = self._ending.get(key)
        if found is None:
            if len(group) <= _SMALL:
                found = [p for p in group if p == rel or p.endswith("/" + rel)]
            else:
                last = (kind, rel.rpartition("/")[2])
                trie = self._suffixes.get(last)
                if trie is None:
                    trie = self._suffixes[last] = _Trie.of(group, reverse=True)
                found = trie.ending(rel)
            self._ending[key] = found
        return found

    def files_ending(self, rel: str) -> list[str]:
        """Files that are rel or end with '/' + rel, sorted."""
        return self._ending_in("file", self.basenames.get(rel.rpartition("/")[2], []), rel)

    def dirs_ending(self, rel: str) -> list[str]:
        """Directories that are rel or end with '/' + rel, sorted."""
        return self._ending_in("dir", self.dirs_named(rel.rpartition("/")[2]), rel)

    def closest(self, source: str, kind: str, rel: str, found: list[str]) -> str:
        """_closest(source, found), found being what (kind, rel) names: large lists are
        indexed once."""
        if len(found) <= _SMALL:
            return _closest(source, found)
        key = (kind, rel)
        trie = self._nearest.get(key)
        if trie is None:
            trie = self._nearest[key] = _Trie.of(sorted(found))
        return trie.nearest(source)

    def go_package_file(self, directory: str) -> str | None:
        """The first (by name) .go file of directory that is not a test."""
        if directory not in self._go_files:
            found = None
            for name in self.files_in(directory):
                if name.endswith(".go") and not name.endswith("_test.go"):
                    found = _join(directory, name)
                    break
            self._go_files[directory] = found
        return self._go_files[directory]

    def go_mod_roots(self, directory: str) -> list[str]:
        """The folders from directory up holding a go.mod, innermost first, then ''."""
        roots = self._go_roots.get(directory)
        if roots is None:
            roots = []
            d = directory
            while True:
                if self.has(_join(d, "go.mod")):
                    roots.append(d)
                if not d:
                    break
                d = posixpath.dirname(d)
            if "" not in roots:
                roots.append("")
            self._go_roots[directory] = roots
        return roots

    def java_file(self, directory: str) -> str | None:
        """The first (by name) .java file of directory."""
        if directory not in self._java_files:
            found = None
            for name in self.files_in(directory):
                if name.endswith(".java"):
                    found = _join(directory, name)
                    break
            self._java_files[directory] = found
        return self._java_files[directory]

    def java_package_files(self, rel: str) -> list[str]:
        """The first .java file of each directory that is rel or ends with '/' + rel."""
        found = self._java_packages.get(rel)
        if found is None:
            found = [f for d in self.dirs_ending(rel) if (f := self.java_file(d)) is not None]
            self._java_packages[rel] = found
        return found

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
    # the indexes of paths gone (a finished resolve_edges) are let go with what they keep
    _INDEX_CACHE[:] = [entry for entry in _INDEX_CACHE if entry[0]() is not None]
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
    tick: Callable[[], bool] = no_ticks,
) -> list[dict]:
    """Resolve every import of one file: the resolved ones, each a copy with ``target`` set.

    ``from pkg import a, b`` whose names are submodules gives one entry per submodule file
    (names narrowed to it) plus, for the remaining names, one for the package itself. Self
    edges (an import resolving to its own file) are dropped. Never raises but what `tick`
    (budget.Ticker, called once per import) raises; its True stops with the imports
    resolved so far."""
    out: list[dict] = []
    try:
        idx = _index(paths)
    except Exception:
        return out
    for imp in imports:
        if tick():
            break
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
    more = [r for r in idx.py_roots(top) if r not in roots]
    if len(more) > _SMALL:
        # many top-level folders hold a `top`: the first holding one of the files the
        # import may name (each of them passes the checks below)
        first = idx.top_dirs_holding(_py_candidates(dotted, names), roots)
        more = [first] if first is not None else []
    for root in roots + more:
        if root and root not in idx.dirs:
            continue
        if _join(root, top) not in idx.dirs and not idx.has(_join(root, top) + ".py"):
            if not idx.has(_join(root, top) + ".pyi"):
                continue
        found = _py_resolve_in(root, dotted, idx, names)
        if found is not None:
            return found
    return None


def _py_candidates(dotted: str, names: Sequence[str] | None) -> list[str]:
    """The paths, relative to a root, that _py_resolve_in(root, dotted, names) looks for."""
    modules = [f"{dotted}.{n}" for n in names or () if n and n != "*" and re.fullmatch(r"\w+", n)]
    out = []
    for module in [*modules, dotted]:
        rel = module.replace(".", "/")
        out += [rel + ".py", rel + ".pyi", rel + "/__init__.py", rel + "/__init__.pyi"]
    return out


# --- Go -------------------------------------------------------------------------------


def _go_package_file(directory: str, idx: _Index) -> str | None:
    return idx.go_package_file(directory)


def _resolve_go(source: str, module: str, idx: _Index, go_module: str | None) -> str | None:
    if module.startswith(("./", "../")):  # GOPATH-era relative import
        base = _norm(posixpath.join(posixpath.dirname(source), module))
        return _go_package_file(base, idx) if base is not None else None
    candidates: list[str] = []
    gm = (go_module or "").strip().rstrip("/")
    if gm and (module == gm or module.startswith(gm + "/")):
        rel = module[len(gm) :].lstrip("/")
        # the go.mod may sit in a subdirectory: prefer the one enclosing the source file
        for r in idx.go_mod_roots(posixpath.dirname(source)):
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
    found = idx.files_ending(rel)
    return idx.closest(source, "class", rel, found) if found else None


def _resolve_java(source: str, module: str, idx: _Index) -> str | None:
    segments = [s for s in module.split(".") if s]
    if not segments:
        return None
    if segments[-1] == "*":
        package = segments[:-1]
        if not package:
            return None
        rel = "/".join(package)
        found = idx.java_package_files(rel)
        if found:
            return idx.closest(source, "package", rel, found)
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
    """The folder of the crate root (lib.rs, main.rs) enclosing source; kept for the last
    source asked about (resolve_imports asks once per import of one file)."""
    if idx._rust_root is None or idx._rust_root[0] != source:
        idx._rust_root = (source, _rust_crate_root_of(source, idx))
    return idx._rust_root[1]


def _rust_crate_root_of(source: str, idx: _Index) -> str:
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
