"""References: every use of a name in a source file that could name a definition, found
with tree-sitter, so that finding the uses of a definition (find_references, callers,
callees: plpython/codesift_db/references.py) is an index read, not a scan of the code.

    extract_references(path, text, language, symbols, limits=None) -> [reference dict]

Each reference is {name, line, symbol, call, qualifier, import_line}:

* `name`: the name used (for a name imported under an alias, `from m import f as g` then
  `g()`, the imported name `f`, so the use is found under the name of its definition);
* `line`: 1-based;
* `symbol`: the qualified name of the innermost definition (of `symbols`, the blob's
  extracted symbols) whose lines hold the use, None at the top level of the file;
* `call`: whether the name is called (`f()`, `x.f()`, `new F()`, a decorator, a JSX tag);
* `qualifier`: None for a bare name; for a member (`x.f`, `a.b.f`, `pkg.F`) the object as
  a dotted name ('x', 'a.b', 'self', 'this'), or '?' when the object is another expression
  (`f().g`, `a[0].g`);
* `import_line`: the line of the import statement that binds the name (or the head of its
  qualifier: `np` in `np.array`), the line blob_imports and file_edges record for
  that statement, so a lookup follows the statement's resolved edge to the file it
  imports; None when no import binds it. The names of an import statement itself
  (`from m import f`, `import {f} from './m'`, `import a.b.F;`) are uses bound to it.

What is left out: definitions' own names, parameters and local variables (a name a
function binds: its parameters, assignments, loop and `with` targets; their uses inside it
and the functions nested in it, which cannot name a definition elsewhere), keyword
argument and object-literal keys, bare uses of an imported module's name, and the
language's builtins (`len`, `String`, `console`) unless the file defines or imports that
name. Identical uses on one line in one symbol are one reference.

Languages: Python, JavaScript, TypeScript/TSX, Go, Java (REFERENCE_RULES). Plain Python,
no database; never raises on content. Bounded like the rest of extraction (budget.py): the
file's size (symbols' MAX_PARSE_CHARS; minified files are skipped), its nesting (tree-sitter's
query cursor takes time growing with the square of the depth and cannot be interrupted: a
file nested deeper than MAX_NESTING brackets is not read), budget.MAX_REFERENCES per blob
(the first in file order; the rest counted), and the time budget, checked in its loops.
The tree symbol extraction just parsed is reused (symbols.walk.take_tree).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import budget
from .languages import GRAMMARS
from .symbols.walk import MAX_PARSE_CHARS, _parse, _parser, take_tree

__all__ = ["EXPRESSION", "LANGUAGES", "extract_references"]

MAX_NAME_CHARS = 200  # a longer identifier is no one's name (generated code): skipped
MAX_QUALIFIER_CHARS = 200
EXPRESSION = "?"  # the qualifier of a member of an expression that is not a dotted name
# symbol kinds that enclose no reference: fallback blocks and markdown sections are no
# definitions (a file with none of its own gets them)
NOT_DEFINITIONS = frozenset({"block", "section"})
DEFAULT = "default"  # what a JS default import or a require() binds: the module's export
_DOTTED = re.compile(r"(?:[^\W\d]|\$)[\w$]*(?:\.(?:[^\W\d]|\$)[\w$]*)*")

# A role's priority: a node captured by several patterns takes the highest.
_DEF, _LOCAL, _MCALL, _CALL, _MEMBER, _REF = 6, 5, 4, 3, 2, 1
_SCOPE, _IMPORT, _GLOBAL = -1, -2, -3  # captures that are no role of a name
_CAPTURES = {
    "def": _DEF,
    "local": _LOCAL,
    "mcall": _MCALL,
    "call": _CALL,
    "member": _MEMBER,
    "ref": _REF,
    "scope": _SCOPE,
    "import": _IMPORT,
    "require": _IMPORT,
    "global": _GLOBAL,
}


@dataclass(frozen=True)
class Binding:
    """A name an import statement binds in the file: `local` as written in the file,
    `original` the name it imports (None for a module, DEFAULT for what a JS default
    import or require() gives), the statement's `line`, and the `module` as written."""

    local: str
    original: str | None
    line: int
    module: str


@dataclass(frozen=True)
class _Rules:
    query: str
    # import node -> (the bindings it makes, its names as uses: (name, line))
    bind: Callable[[Any, bytes], tuple[list[Binding], list[tuple[str, int]]]]
    builtins: frozenset[str]


def _txt(src: bytes, node: Any) -> str:
    """The text of a node, from the parsed bytes (a tree parsed through a read callback, at
    a deadline, has no node.text)."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _line(node: Any) -> int:
    return node.start_point[0] + 1


def _field(node: Any, name: str) -> Any:
    return node.child_by_field_name(name)


# --- Python -------------------------------------------------------------------------------

_PY_PARAMS = """
  [(identifier) @local
   (default_parameter name: (identifier) @local)
   (typed_parameter (identifier) @local)
   (typed_default_parameter name: (identifier) @local)
   (list_splat_pattern (identifier) @local)
   (dictionary_splat_pattern (identifier) @local)]
"""
_PY_TARGETS = "[(identifier) @local (pattern_list (identifier) @local) (tuple_pattern (identifier) @local) (list_pattern (identifier) @local)]"  # noqa: E501
_PY_QUERY = f"""
(function_definition name: (identifier) @def)
(class_definition name: (identifier) @def)
(keyword_argument name: (identifier) @def)
[(function_definition) (lambda) (list_comprehension) (set_comprehension)
 (dictionary_comprehension) (generator_expression)] @scope
(parameters {_PY_PARAMS})
(lambda_parameters {_PY_PARAMS})
(assignment left: {_PY_TARGETS})
(augmented_assignment left: (identifier) @local)
(for_statement left: {_PY_TARGETS})
(for_in_clause left: {_PY_TARGETS})
(as_pattern_target (identifier) @local)
(named_expression name: (identifier) @local)
(global_statement (identifier) @global)
(nonlocal_statement (identifier) @global)
(call function: (identifier) @call)
(call function: (attribute object: (_) @obj attribute: (identifier) @mcall))
(decorator (identifier) @call)
(decorator (attribute object: (_) @obj attribute: (identifier) @mcall))
(attribute object: (_) @obj attribute: (identifier) @member)
(identifier) @ref
[(import_statement) (import_from_statement) (future_import_statement)] @import
"""


def _py_bind(node: Any, src: bytes) -> tuple[list[Binding], list[tuple[str, int]]]:
    line = _line(node)
    binds: list[Binding] = []
    uses: list[tuple[str, int]] = []
    if node.type == "import_statement":
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                module = "".join(_txt(src, _field(child, "name")).split())
                alias = _field(child, "alias")
                if alias is not None and module:
                    binds.append(Binding(_txt(src, alias), None, line, module))
            elif child.type == "dotted_name":
                module = "".join(_txt(src, child).split())
                if module:
                    binds.append(Binding(module.split(".")[0], None, line, module))
    elif node.type == "import_from_statement":
        mod_node = _field(node, "module_name")
        module = "".join(_txt(src, mod_node).split()) if mod_node is not None else ""
        for child in node.children_by_field_name("name"):
            name_node, local_node = child, child
            if child.type == "aliased_import":
                name_node, local_node = _field(child, "name"), _field(child, "alias")
            if name_node is None or local_node is None:
                continue
            name = "".join(_txt(src, name_node).split())
            if not name or "." in name:
                continue
            binds.append(Binding(_txt(src, local_node), name, line, module))
            uses.append((name, _line(name_node)))
    return binds, uses


_PY_BUILTINS = frozenset(
    """abs all any ascii bin bool breakpoint bytearray bytes callable chr classmethod
    compile complex delattr dict dir divmod enumerate eval exec filter float format
    frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter
    len list locals map max memoryview min next object oct open ord pow print property
    range repr reversed round set setattr slice sorted staticmethod str sum super tuple
    type vars zip self cls __name__ __file__ __doc__ __all__ NotImplemented Ellipsis
    Exception BaseException ValueError TypeError KeyError IndexError AttributeError
    RuntimeError OSError IOError StopIteration NotImplementedError ImportError
    AssertionError""".split()
)

# --- JavaScript / TypeScript --------------------------------------------------------------

_JS_FUNCTION_VALUES = "[(arrow_function) (function_expression) (class)]"
_JS_COMMON = f"""
(function_declaration name: (identifier) @def)
(generator_function_declaration name: (identifier) @def)
(variable_declarator name: (identifier) @def value: {_JS_FUNCTION_VALUES})
[(function_declaration) (generator_function_declaration) (function_expression)
 (arrow_function) (method_definition)] @scope
(arrow_function parameter: (identifier) @local)
(variable_declarator name: (identifier) @local)
(object_pattern (shorthand_property_identifier_pattern) @local)
(pair_pattern value: (identifier) @local)
(array_pattern (identifier) @local)
(catch_clause parameter: (identifier) @local)
(for_in_statement left: (identifier) @local)
(call_expression function: (identifier) @call)
(call_expression function: (member_expression object: (_) @obj property: (property_identifier) @mcall))
(new_expression constructor: (identifier) @call)
(new_expression constructor: (member_expression object: (_) @obj property: (property_identifier) @mcall))
(member_expression object: (_) @obj property: (property_identifier) @member)
(identifier) @ref
(shorthand_property_identifier) @ref
(import_statement) @import
(export_statement source: (_)) @import
(variable_declarator value: (call_expression function: (identifier) @fn arguments: (arguments . (string)))) @require
"""  # noqa: E501
_JSX = """
(jsx_opening_element name: (identifier) @call)
(jsx_self_closing_element name: (identifier) @call)
"""
_JS_QUERY = (
    _JS_COMMON
    + _JSX
    + """
(class_declaration name: (identifier) @def)
(formal_parameters (identifier) @local)
(formal_parameters (assignment_pattern left: (identifier) @local))
(formal_parameters (rest_pattern (identifier) @local))
"""
)
_TS_QUERY = (
    _JS_COMMON
    + """
(class_declaration name: (type_identifier) @def)
(abstract_class_declaration name: (type_identifier) @def)
(interface_declaration name: (type_identifier) @def)
(type_alias_declaration name: (type_identifier) @def)
(enum_declaration name: (identifier) @def)
(required_parameter pattern: (identifier) @local)
(optional_parameter pattern: (identifier) @local)
(required_parameter pattern: (rest_pattern (identifier) @local))
(type_identifier) @ref
"""
)
_TSX_QUERY = _TS_QUERY + _JSX


def _js_string(src: bytes, node: Any) -> str | None:
    if node is None or node.type != "string":
        return None
    return "".join(_txt(src, c) for c in node.named_children if c.type == "string_fragment")


def _js_bind(node: Any, src: bytes) -> tuple[list[Binding], list[tuple[str, int]]]:
    binds: list[Binding] = []
    uses: list[tuple[str, int]] = []
    if node.type == "variable_declarator":  # const x = require('m'), const {a, b: c} = ...
        value = _field(node, "value")
        fn = _field(value, "function") if value is not None else None
        args = _field(value, "arguments") if value is not None else None
        if fn is None or _txt(src, fn) != "require" or args is None or not args.named_children:
            return binds, uses
        module = _js_string(src, args.named_children[0])
        target = _field(node, "name")
        if module is None or target is None:
            return binds, uses
        line = _line(value)  # import_extraction records a require() at the call's line
        if target.type == "identifier":
            binds.append(Binding(_txt(src, target), DEFAULT, line, module))
        elif target.type == "object_pattern":
            for child in target.named_children:
                if child.type == "shorthand_property_identifier_pattern":
                    name = _txt(src, child)
                    binds.append(Binding(name, name, line, module))
                    uses.append((name, _line(child)))
                elif child.type == "pair_pattern":
                    key, local = _field(child, "key"), _field(child, "value")
                    if key is not None and local is not None and local.type == "identifier":
                        binds.append(Binding(_txt(src, local), _txt(src, key), line, module))
                        uses.append((_txt(src, key), _line(key)))
        return binds, uses
    module = _js_string(src, _field(node, "source"))
    if module is None:
        return binds, uses
    line = _line(node)
    for child in node.named_children:
        if child.type == "import_clause":
            for part in child.named_children:
                if part.type == "identifier":  # default import
                    binds.append(Binding(_txt(src, part), DEFAULT, line, module))
                elif part.type == "namespace_import":
                    for sub in part.named_children:
                        if sub.type == "identifier":
                            binds.append(Binding(_txt(src, sub), None, line, module))
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        name_node = _field(spec, "name")
                        if spec.type != "import_specifier" or name_node is None:
                            continue
                        name = _txt(src, name_node).strip("'\"")
                        alias = _field(spec, "alias")
                        local = _txt(src, alias) if alias is not None else name
                        binds.append(Binding(local, name, line, module))
                        uses.append((name, _line(name_node)))
        elif child.type == "export_clause":  # export {a, b as c} from './m'
            for spec in child.named_children:
                name_node = _field(spec, "name")
                if spec.type == "export_specifier" and name_node is not None:
                    uses.append((_txt(src, name_node).strip("'\""), _line(name_node)))
    return binds, uses


_JS_BUILTINS = frozenset(
    """console Object Array String Number Boolean JSON Math Date Promise Error TypeError
    RegExp Map Set WeakMap Symbol BigInt undefined NaN Infinity window document globalThis
    require module exports process parseInt parseFloat isNaN setTimeout clearTimeout
    setInterval clearInterval Buffer Record Partial Readonly Pick Omit ReturnType
    Required Exclude Extract NonNullable Awaited Parameters Uint8Array""".split()
)

# --- Go -----------------------------------------------------------------------------------

_GO_QUERY = """
(function_declaration name: (identifier) @def)
(method_declaration name: (field_identifier) @def)
(type_spec name: (type_identifier) @def)
(type_alias name: (type_identifier) @def)
(field_declaration name: (field_identifier) @def)
(keyed_element . (literal_element (identifier) @def))
[(function_declaration) (method_declaration) (func_literal)] @scope
(parameter_declaration name: (identifier) @local)
(variadic_parameter_declaration name: (identifier) @local)
(short_var_declaration left: (expression_list (identifier) @local))
(var_spec name: (identifier) @local)
(const_spec name: (identifier) @local)
(range_clause left: (expression_list (identifier) @local))
(type_switch_statement alias: (expression_list (identifier) @local))
(call_expression function: (identifier) @call)
(call_expression function: (selector_expression operand: (_) @obj field: (field_identifier) @mcall))
(selector_expression operand: (_) @obj field: (field_identifier) @member)
(qualified_type package: (package_identifier) @obj name: (type_identifier) @member)
(identifier) @ref
(type_identifier) @ref
(import_spec) @import
"""  # noqa: E501
_GO_VERSION = re.compile(r"v\d+")


def _go_bind(node: Any, src: bytes) -> tuple[list[Binding], list[tuple[str, int]]]:
    path = _field(node, "path")
    raw = _txt(src, path) if path is not None else ""
    if len(raw) < 2 or raw[0] not in '"`' or raw[-1] != raw[0]:
        return [], []
    module = raw[1:-1]
    alias = _field(node, "name")
    if alias is not None:
        if alias.type != "package_identifier":  # `.` or `_`: no name bound
            return [], []
        local = _txt(src, alias)
    else:
        parts = [p for p in module.split("/") if p]
        if len(parts) > 1 and _GO_VERSION.fullmatch(parts[-1]):  # example.com/x/v2
            parts.pop()
        if not parts:
            return [], []
        local = re.sub(r"\.v\d+$", "", parts[-1])  # gopkg.in/yaml.v3
        local = local.rsplit("-", 1)[-1]  # go-sqlite3 declares package sqlite3
    return [Binding(local, None, _line(node), module)], []


_GO_BUILTINS = frozenset(
    """bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune
    string uint uint8 uint16 uint32 uint64 uintptr any comparable append cap clear close
    complex copy delete imag len make max min new panic print println real recover _
    """.split()
)

# --- Java ---------------------------------------------------------------------------------

_JAVA_QUERY = """
(class_declaration name: (identifier) @def)
(interface_declaration name: (identifier) @def)
(enum_declaration name: (identifier) @def)
(record_declaration name: (identifier) @def)
(annotation_type_declaration name: (identifier) @def)
(method_declaration name: (identifier) @def)
(constructor_declaration name: (identifier) @def)
(field_declaration declarator: (variable_declarator name: (identifier) @def))
(enum_constant name: (identifier) @def)
(element_value_pair key: (identifier) @def)
[(method_declaration) (constructor_declaration) (lambda_expression)] @scope
(formal_parameter name: (identifier) @local)
(spread_parameter (variable_declarator name: (identifier) @local))
(local_variable_declaration declarator: (variable_declarator name: (identifier) @local))
(lambda_expression parameters: (identifier) @local)
(inferred_parameters (identifier) @local)
(catch_formal_parameter name: (identifier) @local)
(enhanced_for_statement name: (identifier) @local)
(resource name: (identifier) @local)
(method_invocation name: (identifier) @call)
(method_invocation object: (_) @obj name: (identifier) @mcall)
(object_creation_expression type: (type_identifier) @call)
(field_access object: (_) @obj field: (identifier) @member)
(identifier) @ref
(type_identifier) @ref
[(import_declaration) (package_declaration)] @import
"""


def _java_bind(node: Any, src: bytes) -> tuple[list[Binding], list[tuple[str, int]]]:
    if node.type != "import_declaration":
        return [], []
    target = None
    for child in node.named_children:
        if child.type == "asterisk":
            return [], []  # import a.b.*: binds no name of its own
        if child.type in ("scoped_identifier", "identifier"):
            target = child
    if target is None:
        return [], []
    module = "".join(_txt(src, target).split())
    last = _field(target, "name") if target.type == "scoped_identifier" else target
    if last is None:
        return [], []
    name = _txt(src, last)
    return [Binding(name, name, _line(node), module)], [(name, _line(last))]


_JAVA_BUILTINS = frozenset(
    """String Object Integer Long Boolean Double Float Character Byte Short Number Math
    System Exception RuntimeException IllegalArgumentException IllegalStateException
    NullPointerException Override Deprecated SuppressWarnings FunctionalInterface Thread
    Class Iterable Comparable Runnable StringBuilder Void Throwable Error var""".split()
)

# --- the table ----------------------------------------------------------------------------

REFERENCE_RULES: dict[str, _Rules] = {
    "python": _Rules(_PY_QUERY, _py_bind, _PY_BUILTINS),
    "javascript": _Rules(_JS_QUERY, _js_bind, _JS_BUILTINS),
    "typescript": _Rules(_TS_QUERY, _js_bind, _JS_BUILTINS),
    "tsx": _Rules(_TSX_QUERY, _js_bind, _JS_BUILTINS),
    "go": _Rules(_GO_QUERY, _go_bind, _GO_BUILTINS),
    "java": _Rules(_JAVA_QUERY, _java_bind, _JAVA_BUILTINS),
}
LANGUAGES = tuple(REFERENCE_RULES)

_QUERIES: dict[str, Any] = {}  # language -> (Query, QueryCursor class), or None


def _query(language: str) -> Any:
    if language not in _QUERIES:
        try:
            import tree_sitter as ts

            parser = _parser(language)
            if parser is None:
                raise LookupError(language)
            _QUERIES[language] = ts.Query(parser.language, REFERENCE_RULES[language].query)
        except Exception:  # a grammar without a node type the query names: no references
            _QUERIES[language] = None
    return _QUERIES[language]


# --- extraction ---------------------------------------------------------------------------


def extract_references(
    path: str,
    text: str,
    language: str | None,
    symbols: Iterable[dict] = (),
    limits: budget.Budget | None = None,
) -> list[dict]:
    """The references of one file (see the module docstring), in file order; `symbols`
    (extract_symbols' dicts: name, qualified_name, start_line, end_line) give each its
    enclosing definition. Never raises."""
    if limits is None:
        limits = budget.unlimited()
    try:
        if not isinstance(text, str) or language not in REFERENCE_RULES:
            return []
        if language not in GRAMMARS or not text.strip():
            return []
        limits.phase("references")
        if len(text) > MAX_PARSE_CHARS:
            limits.over("references", MAX_PARSE_CHARS, len(text), "characters not read")
            return []
        if _minified(text):
            return []  # a bundle: no one's definitions are used there by name
        src = text.encode("utf-8", "surrogatepass")
        depth = bracket_depth(src)
        if depth > MAX_NESTING:
            limits.over("references", MAX_NESTING, depth, "levels of nesting: none read")
            return []
        query = _query(language)
        parser = _parser(language)
        if query is None or parser is None or limits.expired():
            return []
        tree = take_tree(language, src) or _parse(parser, src, limits)
        if tree is None or limits.expired():
            return []
        spans = [s for s in symbols if s.get("kind") not in NOT_DEFINITIONS]
        return _references(src, tree, query, REFERENCE_RULES[language], spans, limits)
    except (Exception, RecursionError):
        return []


def _references(
    src: bytes, tree: Any, query: Any, rules: _Rules, symbols: list[dict], limits
) -> list:
    import tree_sitter as ts

    scopes: list[tuple[int, int]] = []
    binders: list[tuple[int, str, bool]] = []  # (start byte, name, is a global declaration)
    roles: dict[int, tuple[int, Any, Any]] = {}  # start byte -> (role, node, object node)
    imports: list[Any] = []
    captures = _CAPTURES
    for i, (_index, caps) in enumerate(ts.QueryCursor(query).matches(tree.root_node)):
        if not i & budget.CHECK_EVERY and limits.expired():
            return []
        for capture, nodes in caps.items():
            role = captures.get(capture)
            if role is None:
                continue  # obj, fn: read with their member
            node = nodes[0]
            if role > 0:
                key = node.start_byte
                held = roles.get(key)
                if held is None or held[0] < role:
                    obj = caps["obj"][0] if role in (_MCALL, _MEMBER) and "obj" in caps else None
                    roles[key] = (role, node, obj)
            elif role == _SCOPE:
                scopes.append((node.start_byte, node.end_byte))
            elif role == _IMPORT:
                imports.append(node)
            else:  # `global x`: a declaration, no use
                binders.append((node.start_byte, _txt(src, node), True))
                roles[node.start_byte] = (_DEF, node, None)
    binders += [(k, _txt(src, r[1]), False) for k, r in roles.items() if r[0] == _LOCAL]
    bindings: dict[str, list[Binding]] = {}
    uses: list[tuple[str, int, int]] = []  # import statements' names: (name, line, import line)
    spans: list[tuple[int, int]] = []  # import statements: their identifiers are no uses
    for node in imports:
        binds, named = rules.bind(node, src)
        if node.type != "variable_declarator":
            spans.append((node.start_byte, node.end_byte))
        for b in binds:
            bindings.setdefault(b.local, []).append(b)
        line = binds[0].line if binds else _line(node)
        uses.extend((name, use_line, line) for name, use_line in named)
    spans.sort()
    scopes.sort(key=lambda s: (s[0], -s[1]))
    locals_of = _locals(scopes, binders)
    enclosing = _enclosing(symbols)
    defined = {s["name"] for s in symbols}
    out: dict[tuple, None] = {}
    for used, at_line, statement in uses:
        if 0 < len(used) <= MAX_NAME_CHARS:
            out[(used, at_line, enclosing(at_line), False, None, statement)] = None
    open_scopes: list[int] = []  # indexes into scopes of those holding the current node
    visible: set[str] | frozenset[str] = frozenset()  # the locals of the open scopes
    next_scope = 0
    next_span = 0
    builtins = rules.builtins
    for n, key in enumerate(sorted(roles)):
        if not n & budget.CHECK_EVERY and limits.expired():
            break
        role, node, obj = roles[key]
        if role >= _LOCAL:
            continue
        changed = False
        while open_scopes and scopes[open_scopes[-1]][1] <= key:
            open_scopes.pop()
            changed = True
        while next_scope < len(scopes) and scopes[next_scope][0] <= key:
            if scopes[next_scope][1] > key:
                while open_scopes and scopes[open_scopes[-1]][1] <= scopes[next_scope][0]:
                    open_scopes.pop()
                open_scopes.append(next_scope)
                changed = True
            next_scope += 1
        if changed:
            visible = set().union(*(locals_of[i] for i in open_scopes))
        while next_span < len(spans) and spans[next_span][1] <= key:
            next_span += 1
        if next_span < len(spans) and spans[next_span][0] <= key:
            continue  # inside an import statement: its names are read by rules.bind
        end = node.end_byte
        if not 0 < end - key <= MAX_NAME_CHARS:
            continue
        name = src[key:end].decode("utf-8", "replace")
        line = node.start_point[0] + 1
        qualifier: str | None = None
        import_line = None
        if obj is not None:
            qualifier = _qualifier(src, obj)
            head = qualifier.split(".", 1)[0]
            if qualifier != EXPRESSION and head not in visible:
                import_line = _binding_line(bindings.get(head), qualifier, line)
        else:
            if name in visible:
                continue
            bound = _binding(bindings.get(name), line)
            if bound is not None:
                if bound.original is None:
                    continue  # a module's own name: not a definition
                import_line = bound.line
                if bound.original not in (name, DEFAULT):
                    name = bound.original  # used under an alias: found under its name
            elif name in builtins and name not in defined:
                continue
        key_out = (name, line, enclosing(line), role in (_CALL, _MCALL), qualifier, import_line)
        out[key_out] = None
    refs = [
        {
            "name": k[0],
            "line": k[1],
            "symbol": k[2],
            "call": k[3],
            "qualifier": k[4],
            "import_line": k[5],
        }
        for k in out
    ]
    refs.sort(key=lambda r: r["line"])
    if len(refs) > budget.MAX_REFERENCES:
        limits.over("references", budget.MAX_REFERENCES, len(refs) - budget.MAX_REFERENCES)
        del refs[budget.MAX_REFERENCES :]
    return refs


# Far deeper than code is written (a few dozen levels) and still a small share of the
# extraction budget at the square of the depth; a 1 MiB file of `{` is 500,000 deep.
MAX_NESTING = 10_000
_OPEN, _CLOSE = b"([{", b")]}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _OPEN + _CLOSE)
_STEP = {**dict.fromkeys(_OPEN, 1), **dict.fromkeys(_CLOSE, -1)}


def bracket_depth(src: bytes) -> int:
    """The deepest nesting of (), [] and {} in src (brackets in strings and comments count
    too: an estimate of the syntax tree's depth that costs one pass over the brackets)."""
    depth = deepest = 0
    step = _STEP
    for b in src.translate(None, _NOT_BRACKETS):
        depth += step[b]
        if depth > deepest:
            deepest = depth
    return deepest


def _minified(text: str) -> bool:
    """True when lines over 10,000 characters hold most of the text (as symbols.walk
    judges a file it gives fallback blocks instead)."""
    if len(text) < 20_000:
        return False
    return sum(len(line) for line in text.split("\n") if len(line) > 10_000) * 2 > len(text)


def _locals(scopes: list[tuple[int, int]], binders: list[tuple[int, str, bool]]) -> list:
    """Per scope (index into scopes): the names it binds, less those it declares global."""
    bound: list[set[str]] = [set() for _ in scopes]
    declared: list[set[str]] = [set() for _ in scopes]
    starts = [s for s, _ in scopes]
    for key, name, is_global in binders:
        # the innermost scope holding key: the last one starting before it that ends after
        i = bisect.bisect_right(starts, key) - 1
        while i >= 0 and scopes[i][1] <= key:
            i -= 1
        if i < 0:
            continue  # the top level of the file: module variables are not locals
        (declared if is_global else bound)[i].add(name)
    return [b - d for b, d in zip(bound, declared, strict=True)]


def _binding(found: list[Binding] | None, line: int) -> Binding | None:
    """The import of a name that binds it at `line`: the last before it, else the first."""
    if not found:
        return None
    before = [b for b in found if b.line <= line]
    return before[-1] if before else found[0]


def _binding_line(found: list[Binding] | None, qualifier: str, line: int) -> int | None:
    """The import statement binding the head of `qualifier`: of Python's `import a.b` and
    `import a.c` (both bind `a`), the one whose module `qualifier` names."""
    if not found:
        return None
    modules = [b for b in found if b.original is None]
    best = max(
        (b for b in modules if qualifier == b.module or qualifier.startswith(b.module + ".")),
        key=lambda b: len(b.module),
        default=None,
    )
    if best is not None:
        return best.line
    bound = _binding(found, line)
    return bound.line if bound is not None else None


def _qualifier(src: bytes, obj: Any) -> str:
    if obj.end_byte - obj.start_byte > MAX_QUALIFIER_CHARS:
        return EXPRESSION
    text = "".join(_txt(src, obj).split())
    return text if _DOTTED.fullmatch(text) else EXPRESSION


def _enclosing(symbols: list[dict]) -> Callable[[int], str | None]:
    """line -> the qualified name of the innermost symbol holding it (None: top level)."""
    if not symbols:
        return lambda _line: None
    ordered = sorted(_whole(symbols), key=lambda s: (s["start_line"], -s["end_line"]))
    # the lines where the innermost symbol changes, and the symbol from there on
    marks: list[int] = []
    names: list[str | None] = []
    stack: list[dict] = []

    def close_until(line: int) -> None:
        while stack and stack[-1]["end_line"] < line:
            done = stack.pop()
            marks.append(done["end_line"] + 1)
            names.append(stack[-1]["qualified_name"] if stack else None)

    for s in ordered:
        close_until(s["start_line"])
        stack.append(s)
        marks.append(s["start_line"])
        names.append(s["qualified_name"])
    close_until(1 << 31)

    def find(line: int) -> str | None:
        i = bisect.bisect_right(marks, line) - 1
        return names[i] if i >= 0 else None

    return find


def _whole(symbols: list[dict]) -> list[dict]:
    """The symbols with a long definition's parts 1..n (which tile its lines) as one span:
    a method that crosses a boundary between two parts of its class is inside the class."""
    out: list[dict] = []
    last: dict[tuple, dict] = {}  # (qualified name, kind) -> its span so far
    for s in sorted(symbols, key=lambda s: (s["start_line"], s.get("part", 0))):
        key = (s["qualified_name"], s.get("kind"))
        span = last.get(key)
        part = s.get("part", 0)
        if part > 1 and span is not None and span["end_line"] + 1 >= s["start_line"]:
            span["end_line"] = max(span["end_line"], s["end_line"])
            continue
        span = {
            "qualified_name": s["qualified_name"],
            "start_line": s["start_line"],
            "end_line": s["end_line"],
        }
        last[key] = span
        out.append(span)
    return out
