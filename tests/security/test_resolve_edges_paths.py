"""resolve_edges(repository_id, source_paths), what `codesift watch` calls after an edit:
the same edges as the whole-repository resolution, another tenant's repository refused,
the number of paths bounded, and not executable by the per-tenant login roles."""

import psycopg
import pytest

from tests.security.two_tenants import index_two_tenants


def _edges(conn, tenant_id: int, repo_id: int) -> list[tuple]:
    return conn.execute(
        "select source_path, target_path, relation, names, line from file_edges"
        " where tenant_id = %s and repository_id = %s order by 1, 2, 5",
        (tenant_id, repo_id),
    ).fetchall()


def test_partial_resolution_matches_the_whole_and_stays_in_its_tenant(
    db, dsn, make_repo, app_connect
):
    two = index_two_tenants(dsn, make_repo)
    acme, globex = two["acme"], two["globex"]
    conn = app_connect(acme.id)
    whole = _edges(conn, acme.id, acme.repo_id)
    assert whole, "the sample has import edges"
    # only app/session.py's edges are recomputed: the others stay, the result is the same
    count = conn.execute(
        "select resolve_edges(%s, %s)", (acme.repo_id, ["app/session.py"])
    ).fetchone()[0]
    assert count == sum(1 for e in whole if e[0] == "app/session.py") > 0
    assert _edges(conn, acme.id, acme.repo_id) == whole
    globex_before = _edges(db, globex.id, globex.repo_id)
    # another tenant's repository id: not there for this session
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("select resolve_edges(%s, %s)", (globex.repo_id, ["app/session.py"]))
    assert _edges(db, globex.id, globex.repo_id) == globex_before
    # unbounded work is refused with a clear error
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="at most 10,000"):
        conn.execute(
            "select resolve_edges(%s, %s)", (acme.repo_id, [f"p{i}.py" for i in range(10_001)])
        )
    # null paths: strict, nothing happens
    assert conn.execute("select resolve_edges(%s, null)", (acme.repo_id,)).fetchone()[0] is None
    assert _edges(conn, acme.id, acme.repo_id) == whole
    row = db.execute(
        "select has_function_privilege('codesift_tenant',"
        " 'codesift.resolve_edges(bigint, text[])', 'execute')"
    ).fetchone()
    assert row[0] is False
