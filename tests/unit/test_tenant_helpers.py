"""Acting as a tenant is tenants.py's alone (tenant_id, use_tenant, as_tenant): no other
module of loader/codesift looks a tenant up by name or sets app.current_tenant_id by
hand, so that the unknown-tenant error and the SET LOCAL that Citus needs cannot drift
apart again. Statements are read from the source's string literals (docstrings aside)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOADER = ROOT / "loader" / "codesift"
OWNERS = {"tenants.py", "db.py"}  # db.share_tenant repeats the session's tenant for Citus
# modules that set the tenant their own way, and why
OWN_WAY = {
    "mcp_backend.py": "an asyncio pool in pipeline mode: begin, SET LOCAL, the statement and "
    "commit in one round trip, which the synchronous as_tenant cannot give",
}

SETS_TENANT = re.compile(
    r"set_config\s*\(\s*'app\.current_tenant_id'|\bset\s+(?:local\s+|session\s+)?"
    r"app\.current_tenant_id\b",
    re.IGNORECASE,
)
LOOKS_UP_BY_NAME = re.compile(
    r"\bcodesift\.tenants\b(?:\s+\w+)?[^;]*?\bwhere\b[^;]*?\b(?:\w+\.)?name\s*=", re.IGNORECASE
)


def _statements(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal in the module but its docstrings."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def _hand_written(path: Path) -> list[str]:
    return [
        f"{path.name}:{line}: {' '.join(text.split())[:100]}"
        for line, text in _statements(path)
        if SETS_TENANT.search(text) or LOOKS_UP_BY_NAME.search(text)
    ]


def test_only_tenants_py_acts_as_a_tenant_by_hand():
    found = [
        hit
        for path in sorted(LOADER.glob("*.py"))
        if path.name not in OWNERS | set(OWN_WAY)
        for hit in _hand_written(path)
    ]
    assert found == [], "use tenants.tenant_id, use_tenant or as_tenant"


def test_the_patterns_find_what_tenants_py_does():
    """Not vacuous: the helpers themselves are what the patterns match."""
    hits = _hand_written(LOADER / "tenants.py")
    assert any("set_config('app.current_tenant_id'" in h for h in hits), hits
    assert any("where name = %s" in h for h in hits), hits
    assert SETS_TENANT.search("set local app.current_tenant_id = {}")
    assert LOOKS_UP_BY_NAME.search(
        "select id, name from codesift.tenants where %(name)s::text is null or name = %(name)s"
    )
    assert not LOOKS_UP_BY_NAME.search("select id, name from codesift.tenants order by name")


def test_the_modules_with_their_own_way_still_need_it():
    """An exception is dropped once its module no longer sets the tenant by hand."""
    assert [name for name in OWN_WAY if not _hand_written(LOADER / name)] == []
