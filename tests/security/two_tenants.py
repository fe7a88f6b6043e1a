"""Two tenants with the same repository name and overlapping content, indexed for real.

acme and globex both index a repository called 'shared' whose files mostly agree; each
also has a file the other must never see (secret_<tenant>.py, with a marker word in it).
"""

import functools
from dataclasses import dataclass
from pathlib import Path

import psycopg
from codesift.indexer import index_repository

from tests.conftest import session_snapshots

COMMON = {
    "app/session.py": (
        "from app.redirects import follow_redirects\n\n\n"
        "def open_session(url):\n    return follow_redirects(url, limit=30)\n"
    ),
    "app/redirects.py": (
        "def follow_redirects(url, limit):\n"
        "    seen = []\n    while limit:\n        limit -= 1\n        seen.append(url)\n"
        "    return seen\n"
    ),
    "README.md": "# shared\n\nWhere redirects are followed.\n",
}


def secret_files(tenant: str) -> dict[str, str]:
    return {
        f"app/secret_{tenant}.py": (
            "from app.redirects import follow_redirects\n\n\n"
            f"def {tenant}_token_vault(url):\n"
            f"    # marker {tenant}zebra\n    return follow_redirects(url, limit=1)\n"
        )
    }


@dataclass
class Tenant:
    name: str
    id: int
    repo_id: int
    root: Path


def index_two_tenants(dsn: str, make_repo, repo_name: str = "shared") -> dict[str, Tenant]:
    """Both tenants' repositories indexed into the test's database at dsn, from repositories
    in make_repo's folder. Indexed once per session and copied into each test's database
    (tests/conftest.py Snapshots), or indexed here when that database is not a fresh one."""
    snapshots = session_snapshots()
    index = functools.partial(_index_two_tenants, repo_name=repo_name)
    if snapshots is None:
        ids = index(dsn, make_repo)
    else:
        ids = snapshots.load(f"two_tenants_{repo_name}", index, dsn, make_repo)
    return {
        name: Tenant(name, tenant_id, repo_id, make_repo.folder / f"{name}-{repo_name}")
        for name, (tenant_id, repo_id) in ids.items()
    }


def _index_two_tenants(dsn: str, make_repo, repo_name: str) -> dict[str, tuple[int, int]]:
    ids = {}
    for name in ("acme", "globex"):
        root = make_repo({**COMMON, **secret_files(name)}, name=f"{name}-{repo_name}")
        with psycopg.connect(dsn) as conn:
            index_repository(
                conn, root, name=repo_name, tenant=name, embed=False, show_progress=False
            )
            tenant_id = conn.execute(
                "select id from codesift.tenants where name = %s", (name,)
            ).fetchone()[0]
            repo_id = conn.execute(
                "select id from codesift.repositories where tenant_id = %s and name = %s",
                (tenant_id, repo_name),
            ).fetchone()[0]
        ids[name] = (tenant_id, repo_id)
    return ids


def tenant_tables(db) -> list[str]:
    """Every table of the schema with a tenant_id column."""
    return [
        r[0]
        for r in db.execute(
            "select c.table_name from information_schema.columns c"
            " join information_schema.tables t on t.table_schema = c.table_schema"
            " and t.table_name = c.table_name and t.table_type = 'BASE TABLE'"
            " where c.table_schema = 'codesift' and c.column_name = 'tenant_id' order by 1"
        ).fetchall()
    ]


def counts(db, tenant_id: int) -> dict[str, int]:
    """Rows of the tenant in every tenant table (plus its tenants row), as the owner sees them."""
    out = {
        t: db.execute(
            f"select count(*) from codesift.{t} where tenant_id = %s", (tenant_id,)
        ).fetchone()[0]
        for t in tenant_tables(db)
    }
    out["tenants"] = db.execute(
        "select count(*) from codesift.tenants where id = %s", (tenant_id,)
    ).fetchone()[0]
    return out
