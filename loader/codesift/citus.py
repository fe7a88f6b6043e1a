"""`codesift migrate --citus`: the ordinary migrations on a Citus coordinator, then the
sharding by tenant of sql/citus/ (see sql/citus/001-distribute.sql for the rules).

The tenant reaches the workers only as a transaction-local setting propagated by Citus
(`set local app.current_tenant_id` under citus.propagate_set_commands = 'local'), so that
setting is made the database's default on every node here.
"""

from pathlib import Path

import psycopg
from psycopg import sql

from .errors import MigrationError
from .migrate import LOCK_KEY, SQL_DIR

CITUS_DIR = SQL_DIR / "citus"


def citus_files(sql_dir: Path = CITUS_DIR) -> list[Path]:
    return sorted(sql_dir.glob("*.sql"))


def require_citus(conn: psycopg.Connection) -> None:
    """Refuse, with the fix, a server without Citus or a node that is not the coordinator."""
    available = conn.execute(
        "select 1 from pg_available_extensions where name = 'citus'"
    ).fetchone()
    if available is None:
        raise MigrationError(
            "this PostgreSQL server has no Citus extension: install Citus (packages, or "
            "scripts/citus.sh build with CITUS_SOURCE) and add citus to shared_preload_libraries"
        )
    try:
        conn.execute("create extension if not exists citus")
    except psycopg.Error as exc:
        raise MigrationError(
            f"cannot create the citus extension ({exc.diag.message_primary}): add citus to "
            "shared_preload_libraries on every node and restart them (scripts/citus.sh does)"
        ) from None
    workers = conn.execute(
        "select count(*) from pg_dist_node where noderole = 'primary' and groupid <> 0"
    ).fetchone()
    assert workers is not None
    if workers[0] == 0:
        raise MigrationError(
            "this Citus coordinator has no workers: add them first "
            "(select citus_add_node('host', port)), then run codesift migrate --citus"
        )


def is_distributed(conn: psycopg.Connection) -> bool:
    """Whether codesift's tables are already sharded by Citus here (then every migration is
    followed by sql/citus/ again: `create or replace` resets what it set)."""
    row = conn.execute("select to_regclass('pg_catalog.pg_dist_partition') is not null").fetchone()
    if row is None or not row[0]:
        return False
    found = conn.execute(
        "select exists (select from pg_dist_partition as p"
        " inner join pg_class as c on p.logicalrelid = c.oid"
        " where c.relnamespace = 'codesift'::regnamespace)"
    ).fetchone()
    return bool(found and found[0])


def distribute(conn: psycopg.Connection, sql_dir: Path = CITUS_DIR) -> list[str]:
    """Shard the installed schema by tenant (idempotent: distributed tables are skipped)."""
    applied = []
    with conn.transaction():
        conn.execute("select pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        for path in citus_files(sql_dir):
            try:
                with conn.transaction():
                    conn.execute(path.read_text())
            except psycopg.Error as exc:
                message = exc.diag.message_primary or str(exc)
                raise MigrationError(
                    f"sql/citus/{path.name} failed: {message}. The database was left unchanged."
                ) from None
            applied.append(f"citus/{path.name}")
        # the defaults every node's sessions need, on every node (workers included)
        database = sql.Identifier(conn.info.dbname)
        for statement in (
            sql.SQL("alter database {} set citus.propagate_set_commands = 'local'"),
            # a policy's current_tenant_id() reads tenant_roles (a reference table) inside
            # the query on a shard, and the extraction trigger on a blobs shard writes the
            # co-located shards of the same tenant: both are distributed queries nested in
            # a shard's, which Citus refuses unless allowed. Every such statement names its
            # tenant, so it runs locally on the node holding that tenant's shards.
            sql.SQL("alter database {} set citus.allow_nested_distributed_execution = on"),
            # the extraction trigger is re-created on the shards by later migrations
            sql.SQL("alter database {} set citus.enable_unsafe_triggers = on"),
            sql.SQL("alter database {} set search_path = codesift, public"),
        ):
            text = statement.format(database).as_string(conn)
            conn.execute("select run_command_on_workers(%s)", (text,))
            conn.execute(text)
    return applied
