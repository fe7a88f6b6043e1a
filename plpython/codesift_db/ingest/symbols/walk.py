"""The tree-sitter walk shared by every language: the parsers (loaded lazily), the registry
of language specs (_SPECS), the iterative walk over a parsed file, and what makes a found
definition a symbol: its range (_def_range), signature, and the syntax cuts that split it."""

from __future__ import annotations

import importlib

from ... import budget
from ..languages import GRAMMARS
from .c import _C_SPEC, _CPP_SPEC
from .core import MAX_SIGNATURE_CHARS, _collapse, _emit, _Out, _Source, _within_limits
from .csharp import _CSHARP_SPEC
from .go import _GO_SPEC
from .java import _JAVA_SPEC
from .javascript import _JS_SPEC
from .php import _PHP_SPEC
from .python import _PYTHON_SPEC
from .ruby import _RUBY_SPEC
from .rust import _RUST_SPEC
from .spec import _clean_name, _Container, _Ctx, _Def, _Spec

# Bigger files are not parsed (generated code); they get fallback blocks.
MAX_PARSE_CHARS = 4_000_000
# Symbols nested deeper than this are not reported (their bodies would repeat quadratically).
MAX_NESTING = 32
# Below this depth under a symbol, syntax boundaries are no longer worth preferring as cuts.
_CUT_DEPTH_LIMIT = 12

# The languages, their extensions and grammars: languages.py.
_PARSERS: dict[str, object] = {}  # language -> Parser, or None once known to be unavailable


def _parser(language: str):
    if language not in _PARSERS:
        try:
            from tree_sitter import Language, Parser

            module_name, func = GRAMMARS[language]
            module = importlib.import_module(module_name)
            _PARSERS[language] = Parser(Language(getattr(module, func)()))
        except Exception:
            _PARSERS[language] = None
    return _PARSERS[language]


# The tree rules of each language with a grammar: a _Spec from the language's module.
_SPECS = {
    "python": _PYTHON_SPEC,
    "javascript": _JS_SPEC,
    "typescript": _JS_SPEC,
    "tsx": _JS_SPEC,
    "go": _GO_SPEC,
    "java": _JAVA_SPEC,
    "csharp": _CSHARP_SPEC,
    "rust": _RUST_SPEC,
    "c": _C_SPEC,
    "cpp": _CPP_SPEC,
    "ruby": _RUBY_SPEC,
    "php": _PHP_SPEC,
}
_CLASSLIKE = frozenset({"class", "interface", "type"})
# Subtrees that hold no definition worth reporting in any language: not walked.
_COMMON_OPAQUE = frozenset(
    """comment line_comment block_comment string string_literal raw_string_literal
    interpreted_string_literal parameters formal_parameters parameter_list
    method_parameters import_statement import_from_statement future_import_statement
    import_declaration package_declaration use_declaration preproc_include using_directive
    namespace_use_declaration""".split()
)

_READ_CHUNK = 1 << 16
# The last tree _tree_symbols parsed, [language, bytes, tree], taken (once) by reference
# extraction (ingest/references.py) for the same file, which then needs no parse of its own.
_LAST_TREE: list = []


def take_tree(language: str, src_bytes: bytes):
    """The tree symbol extraction parsed last, when it was of `src_bytes` in `language`
    (then forgotten), else None."""
    last = _LAST_TREE[:]
    _LAST_TREE.clear()
    if last and last[0] == language and last[1] == src_bytes:
        return last[2]
    return None


def _parse(parser, src_bytes: bytes, limits: budget.Budget):
    """The tree of `src_bytes`, or None; with a deadline the parse is read in chunks so that
    tree-sitter's progress callback can cancel it at the deadline."""
    if limits.deadline is None:
        return parser.parse(src_bytes)
    view = memoryview(src_bytes)

    def read(offset: int, _point) -> bytes:
        return bytes(view[offset : offset + _READ_CHUNK])

    try:
        return parser.parse(read, progress_callback=limits.progress)
    except Exception:  # cancelled (ValueError): a parser resumes a cancelled parse unless reset
        parser.reset()
        return None


def _tree_symbols(src: _Source, language: str, out: _Out) -> None:
    if len(src.text) > MAX_PARSE_CHARS or _looks_minified(src):
        return  # generated/minified: the caller falls back to plain blocks
    spec = _SPECS[language]
    src_bytes = src.text.encode("utf-8", "surrogatepass")
    limits = out.limits
    tree = _parse(_parser(language), src_bytes, limits)
    _LAST_TREE[:] = [language, src_bytes, tree] if tree is not None else []
    if tree is None or limits.expired():
        return
    ctx = _Ctx(src_bytes, src.text)
    # Iterative walk with a TreeCursor (far cheaper than materialising child lists); scopes
    # holds (depth of the node that opened it, qualifier path, class-like?). The path of
    # nodes gives parents in O(1) (node.parent walks down from the root: O(depth)).
    cursor = tree.walk()
    path, runs = ctx.path, ctx.runs
    path.append(cursor.node)
    runs.append([])
    scopes = [(-1, (), False)]
    handlers, opaque, attached = spec.handlers, spec.opaque | _COMMON_OPAQUE, spec.attached
    depth = 0  # len(path) - 1
    steps = 0
    node = path[0]
    while True:
        steps += 1
        if not steps & budget.CHECK_EVERY and (out.counting_stops() or limits.expired()):
            return
        node_type = node.type
        handler = handlers.get(node_type)
        if handler is not None:
            found = handler(node, ctx)
            _, names, classlike = scopes[-1]
            if isinstance(found, _Container):
                scopes.append((depth, names + found.parts, found.classlike))
            elif isinstance(found, _Def) and _clean_name(found.name) and len(names) < MAX_NESTING:
                scope = _emit_def(out, src, ctx, spec, found, names, classlike)
                if scope is not None:
                    scopes.append((depth,) + scope)
        if node_type not in opaque and cursor.goto_first_child():
            depth += 1
            node = cursor.node
            path.append(node)
            if attached:
                runs.append([])
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
            depth -= 1
            path.pop()
            if attached:
                runs.pop()
        if attached:  # the run of attached named siblings before the next node
            left = path[-1]
            if left.is_named:
                if left.type in attached:
                    runs[-1].append(left)
                elif runs[-1]:
                    runs[-1] = []
        node = path[-1] = cursor.node
        while scopes[-1][0] >= depth:  # left the subtree that opened these scopes
            scopes.pop()


def _looks_minified(src: _Source) -> bool:
    """True when lines over 10,000 characters hold most of the text (bundles, data blobs)."""
    long_chars = sum(len(line) for line in src.lines if len(line) > 10_000)
    return long_chars * 2 > len(src.text)


def _emit_def(out, src, ctx, spec, d: _Def, path: tuple, classlike: bool):
    """Emit one definition; returns the scope its children live in, or None."""
    kind = d.kind
    if kind in ("function", "method") and d.body is None:
        return None  # a declaration only (interface/abstract/prototype): not a definition
    if out.full:  # over the cap: only counted (its header is not checked)
        out.more += 1
        inner = d.classlike if d.classlike is not None else kind in _CLASSLIKE
        return path + tuple(q for q in d.quals if q) + (_clean_name(d.name),), inner
    if d.body is not None and any(
        c.type == "ERROR" and c.start_byte < d.body.start_byte and c.end_point[0] > c.start_point[0]
        for c in d.node.children
    ):
        return None  # a multi-line error in the header swallowed other code: skip the header
    if kind == "function" and classlike:
        kind = "method"
    start_node, start_row, end_row = _def_range(d.node, spec, ctx)
    if end_row < start_row:
        return None
    name = _clean_name(d.name)
    scope = path + tuple(q for q in d.quals if q)
    inner_classlike = d.classlike if d.classlike is not None else kind in _CLASSLIKE
    if not _within_limits(src, start_row, end_row):
        # Many symbols sharing one over-limit range (minified code) would repeat its body.
        if (start_row, end_row) in ctx.emitted_huge:
            return scope + (name,), inner_classlike
        ctx.emitted_huge.add((start_row, end_row))
    qualified = ".".join(scope + (name,))
    name_row = d.name_row if d.name_row is not None else d.node.start_point[0]
    sym = {
        "name": name,
        "qualified_name": qualified,
        "kind": kind,
        "signature": _signature(ctx.src_bytes, start_node, d),
        "parent": ".".join(scope) or None,
        "name_line": min(max(name_row, start_row), end_row) + 1,
        "docstring": spec.docstring(d, ctx) if spec.docstring is not None else "",
    }
    _emit(out, src, sym, start_row, end_row, lambda: _syntax_cuts(src, d.node, start_row))
    return scope + (name,), inner_classlike


def _def_range(node, spec: _Spec, ctx):
    """(first node, first row, last row) of a definition, wrappers and attachments included.

    `node` is the walk's current node or a near ancestor: its wrappers and the attached
    siblings before them come from the walk's path (node.parent and prev_named_sibling
    cost the node's depth)."""
    path = ctx.path
    level = next(
        (i for i in range(len(path) - 1, max(len(path) - 8, 0) - 1, -1) if path[i] is node),
        None,
    )
    if level is None:  # not on the path (not expected): ask the tree
        top = node
        while top.parent is not None and top.parent.type in spec.wrappers:
            top = top.parent
        run = []
        prev = top.prev_named_sibling
        while prev is not None and prev.type in spec.attached:
            run.append(prev)
            prev = prev.prev_named_sibling
        run.reverse()
    else:
        while level > 0 and path[level - 1].type in spec.wrappers:
            level -= 1
        top, run = path[level], (ctx.runs[level] if spec.attached else [])
    first, start_row = top, top.start_point[0]
    for prev in reversed(run):
        if prev.end_point[0] < start_row - 1:
            break
        first, start_row = prev, prev.start_point[0]
    end_row, end_col = top.end_point
    if end_col == 0 and end_row > start_row:  # a node that swallowed the final newline
        end_row -= 1
    return first, start_row, end_row


def _signature(src_bytes: bytes, start_node, d: _Def) -> str:
    begin = start_node.start_byte
    # only the bytes the signature can use are read (never the whole definition)
    end = min(max(d.node.end_byte, begin), begin + MAX_SIGNATURE_CHARS * 8)
    if d.body is not None and d.body.start_byte > begin:
        stop = d.body.start_byte
        for child in d.node.children:  # Ruby puts comments between header and body
            if child.start_byte >= stop:
                break
            if "comment" in child.type and begin < child.start_byte:
                stop = child.start_byte
                break
        text = src_bytes[begin : min(stop, end)]
    else:
        # No body: the declaration up to the end of its first line.
        newline = src_bytes.find(b"\n", min(d.node.start_byte, end), end)
        text = src_bytes[begin : end if newline < 0 else newline]
    return _collapse(text.decode("utf-8", "replace"))


def _syntax_cuts(src: _Source, node, start_row: int) -> dict[int, float]:
    """Row -> score for a part boundary: the depth of the shallowest node starting that row.

    Only nodes that begin their line count (a cut there falls between two constructs). A row
    right after a comment or decorator scores half a level worse, so both stay together.
    """
    cuts: dict[int, float] = {}
    stack = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if depth >= _CUT_DEPTH_LIMIT:
            continue
        glued_row = -1
        for child in current.named_children:
            row, col = child.start_point
            if row > start_row and col == src.indent(row):
                score = depth + (0.5 if row == glued_row else 0)
                if score < cuts.get(row, 1e9):
                    cuts[row] = score
            if "comment" in child.type or child.type in ("decorator", "attribute_item"):
                glued_row = child.end_point[0] + 1
            if child.end_point[0] > child.start_point[0]:
                stack.append((child, depth + 1))
    return cuts
