"""`codesift refs`, `codesift callers` and `codesift callees`: what find_references, callers
and callees return (the same SQL any client can call), asked as the tenant on the read DSN
(CODESIFT_READ_DSN, a replica, when set).

One line per row: its citation, the symbol it is in, then the use's line, the lines of the
calls, or what the called name resolves to; a row that is only a name match says so.
Repository data is printed with its control characters made visible; notices and errors go
to standard error.
"""

from .console import err, plain, visible
from .outline import as_tenant

REFS = (
    "select citation, symbol, resolution, line_text from codesift.find_references("
    "%s, repo => %s, ref => %s, path => %s, max_rows => %s)"
)
CALLERS = (
    "select citation, caller, lines, resolution from codesift.callers("
    "%s, repo => %s, ref => %s, path => %s, max_rows => %s)"
)
CALLEES = (
    "select repository, path, symbol, callee, qualifier, lines, resolution, definition,"
    " candidates, module from codesift.callees("
    "%s, repo => %s, ref => %s, path => %s, max_rows => %s)"
)


def _lines(numbers: list[int]) -> str:
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(map(str, numbers))


def reference_lines(rows: list[tuple]) -> list[str]:
    """find_references' rows as printed: citation, the symbol the use is in, its line."""
    width = max((len(r[0]) for r in rows), default=0)
    out = []
    for where, symbol, resolution, text in rows:
        line = f"{where:<{width}}  {symbol or '(top level)'}: {(text or '').strip()}"
        out.append(line + ("  [by name]" if resolution == "by_name" else ""))
    return [visible(line) for line in out]


def caller_lines(rows: list[tuple]) -> list[str]:
    """callers' rows as printed: the caller's citation and name, the lines of its calls."""
    width = max((len(r[0]) for r in rows), default=0)
    out = []
    for where, caller, lines, resolution in rows:
        line = f"{where:<{width}}  {caller or '(top level)'} calls it at {_lines(lines)}"
        out.append(line + ("  [by name]" if resolution == "by_name" else ""))
    return [visible(line) for line in out]


def callee_lines(rows: list[tuple]) -> list[str]:
    """callees' rows as printed: per calling definition, each name it calls and where that
    name is defined (or that it is only a name match, or defined outside the ref)."""
    out: list[str] = []
    current = None
    for row in rows:
        repository, path, symbol, callee, qualifier, lines, resolution, definition, n, module = row
        if (repository, path, symbol) != current:
            current = (repository, path, symbol)
            out.append(f"{symbol} ({repository}:{path})")
        called = f"{qualifier}.{callee}" if qualifier else callee
        if resolution == "resolved":
            where = f"-> {definition}"
        elif resolution == "by_name":
            where = f"-> {definition} [by name]" if definition else f"[by name: {n} definitions]"
        else:
            where = f"[not defined at this ref{f'; from {module}' if module else ''}]"
        out.append(f"  {called}  {_lines(lines)}  {where}")
    return [visible(line) for line in out]


def _print(statement: str, args: tuple, tenant: str, render, nothing: str) -> None:
    """Run one lookup as the tenant and print its rendered rows, or say it found nothing."""
    with as_tenant(tenant) as conn:
        rows = conn.execute(statement, args).fetchall()
    if not rows:
        err.print(plain(nothing))
        return
    print("\n".join(render(rows)))


def print_refs(name, repo, ref, path, limit, tenant) -> None:
    args = (name, repo, ref, path, limit)
    _print(REFS, args, tenant, reference_lines, f"{name}: no use found")


def print_callers(symbol, repo, ref, path, limit, tenant) -> None:
    args = (symbol, repo, ref, path, limit)
    _print(CALLERS, args, tenant, caller_lines, f"{symbol}: no caller found")


def print_callees(symbol, repo, ref, path, limit, tenant) -> None:
    args = (symbol, repo, ref, path, limit)
    _print(CALLEES, args, tenant, callee_lines, f"{symbol}: no call found")
