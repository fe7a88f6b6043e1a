"""A test database that is put back to its freshly cloned state after a test, so that
the next test of the same worker reuses it.

Dropping a database forces a checkpoint of the whole cluster and cloning one writes
the template through the WAL; under parallel workers that cost more than most
database tests themselves. A reset empties the tables the test filled, puts back the
template's own rows and sequence positions and forgets statistics. It is refused (and
the database dropped as before) when the test changed anything a reset does not put
back: a schema object, a privilege, a setting.

Each reset also renames the database, so that a process a test started and left running
(a git hook's background index, a server) cannot write into the next test's database:
it finds no database of the name it was given, as when each test had its own.
"""

from dataclasses import dataclass

import psycopg
from psycopg import sql
from pytest_postgresql.executors import NoopExecutor
from pytest_postgresql.janitor import DatabaseJanitor

# Everything in the catalogs that a test could change and a reset does not restore.
# Object OIDs are included: a clone has the template's, so an object dropped and
# created again under the same name is a change too.
FINGERPRINT = """
with rows(line) as (
  select format('class %s %s %s %s %s %s %s %s %s %s', c.oid, c.relname, c.relnamespace,
         c.relkind, c.relowner, c.relacl, c.relrowsecurity, c.relforcerowsecurity,
         c.reloptions, c.relpersistence)
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname !~ '^pg_(toast_)?temp_'
  union all
  select format('attribute %s %s %s %s %s %s %s %s', attrelid, attnum, attname, atttypid,
         attnotnull, atthasdef, attisdropped, attstattarget)
    from pg_attribute where attrelid >= 16384
  union all
  select format('default %s %s %s', adrelid, adnum, pg_get_expr(adbin, adrelid)) from pg_attrdef
  union all
  select format('proc %s %s %s %s %s %s %s %s', oid, proname, pronamespace, proowner, proacl,
         proconfig, prosecdef, case when oid >= 16384 then md5(prosrc) end)
    from pg_proc  -- a built-in function counts once changed from how initdb made it
   where oid >= 16384 or proacl is not null or proconfig is not null or proowner <> 10
  union all
  select format('namespace %s %s %s %s', oid, nspname, nspowner, nspacl) from pg_namespace
   where nspname !~ '^pg_(toast_)?temp_'
  union all
  select format('constraint %s %s %s %s', oid, conname, conrelid, contype) from pg_constraint
  union all
  select format('policy %s %s %s %s %s %s %s', oid, polname, polrelid, polcmd, polroles,
         pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid))
    from pg_policy
  union all
  select format('trigger %s %s %s %s', oid, tgname, tgrelid, tgenabled) from pg_trigger
  union all
  select format('rewrite %s %s %s', oid, ev_class, md5(ev_action::text)) from pg_rewrite
   where oid >= 16384
  union all
  select format('type %s %s %s', oid, typname, typnamespace) from pg_type where oid >= 16384
  union all
  select format('extension %s %s %s', extname, extversion, extconfig) from pg_extension
  union all
  select format('sequence %s %s %s %s %s %s', seqrelid, seqincrement, seqmin, seqmax, seqstart,
         seqcycle) from pg_sequence
  union all
  select format('default acl %s', d.*) from pg_default_acl d
  union all
  select format('description %s %s %s', objoid, objsubid, md5(description)) from pg_description
   where objoid >= 16384
  union all
  select format('setting %s %s', setrole, setconfig) from pg_db_role_setting
   where setdatabase = (select oid from pg_database where datname = current_database())
  union all
  select format('database %s %s %s %s', datacl, datallowconn, datconnlimit, datistemplate)
    from pg_database where datname = current_database()
  union all
  select format('largeobjects %s', count(*)) from pg_largeobject_metadata
  union all
  select format('publications %s', count(*)) from pg_publication
  union all
  select format('event triggers %s', count(*)) from pg_event_trigger
)
select md5(string_agg(line, E'\\n' order by line)) from rows
"""

TABLES = """
select c.relname::text, array_agg(a.attname::text order by a.attnum)
  from pg_class c join pg_attribute a on a.attrelid = c.oid
 where c.relnamespace = 'codesift'::regnamespace and c.relkind = 'r'
   and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
 group by c.relname order by c.relname
"""

# A table that held rows at some point has pages (VACUUM truncates an emptied one).
USED_TABLES = """
select relname::text from pg_class
 where relnamespace = 'codesift'::regnamespace and relkind = 'r' and pg_relation_size(oid) > 0
"""

# the tables and sequences whose rows and positions state() reads, in one statement
STATE_OBJECTS = """
select relname::text, relkind = 'S' from pg_class
 where relnamespace = 'codesift'::regnamespace and relkind in ('r', 'S') order by relname
"""

PLANNER_SIZES = """
select oid::int, relpages, reltuples, relallvisible from pg_class
 where relnamespace = 'codesift'::regnamespace order by oid
"""


@dataclass
class Fresh:
    """A freshly cloned database's state, as far as a reset restores and checks it."""

    fingerprint: str
    tables: list[tuple[str, list[str]]]  # (table, its stored columns)
    rows: dict[str, bytes]  # binary COPY of the tables the template fills
    sequences: list[tuple[str, int, bool]]  # (sequence, last_value, is_called)
    counts: dict[str, int]  # rows per table
    planner_sizes: list[tuple[int, int, float, int]]  # (oid, relpages, reltuples, relallvisible)


class ReusableDatabase:
    """A worker's test database: a clone of the migrated template, reset between tests."""

    def __init__(
        self, template: NoopExecutor, reuse: bool = True, dbname: str | None = None
    ) -> None:
        self.template = template  # its template_dbname is the one cloned
        self.base = dbname or template.dbname
        self.dbname = self.base
        self.generation = 0  # the suffix of the next name the database takes
        self.reuse = reuse
        self.fresh: Fresh | None = None  # the same for every clone of the template
        self.exists = False
        self.resets = self.drops = 0
        self.refusals: list[str] = []  # why each refused reset was refused, for failing tests
        self.terminate_ms = 10_000  # how long a session left open may take to end

    def open(self) -> psycopg.Connection:
        """A superuser connection to the database in its freshly cloned state."""
        if not self.exists:
            janitor = self._janitor()
            janitor.drop()
            janitor.init()
            self.exists = True
            if self.fresh is None:
                with self._connect() as conn:
                    self.fresh = capture(conn)
        return self._connect()

    def close(self) -> None:
        """After a test: reset the database for the next one, else drop it."""
        if not self.exists:
            return
        try:
            refusal = self._reset() if self.reuse else "not reused"
        except psycopg.Error as error:
            refusal = f"{type(error).__name__}: {error}"
        if refusal is None:
            self.resets += 1
        else:
            self.refusals.append(refusal)
            self.drop()

    def drop(self) -> None:
        self._janitor().drop()
        self.exists = False
        self.drops += 1
        self.dbname = self._next_name()  # the next clone is not found under the old name

    def _next_name(self) -> str:
        self.generation += 1
        return f"{self.base}_{self.generation}"

    def _reset(self) -> str | None:
        """Reset the database, or say why it cannot be."""
        with self._janitor().cursor() as cur:  # on the maintenance database
            if not end_sessions(cur, self.dbname, sessions(cur, self.dbname), self.terminate_ms):
                return "a session outlived its termination"  # it could write on
            renamed = self._next_name()
            try:  # refused when a session connected since: then the database is dropped
                cur.execute(
                    sql.SQL("alter database {} rename to {}").format(
                        sql.Identifier(self.dbname), sql.Identifier(renamed)
                    )
                )
            except psycopg.errors.ObjectInUse as error:
                return f"renaming: {error}"
            self.dbname = renamed
            cur.execute(sql.SQL("alter database {} reset all").format(sql.Identifier(self.dbname)))
        assert self.fresh is not None
        with self._connect() as conn:
            return reset(conn, self.fresh)

    def _connect(self) -> psycopg.Connection:
        t = self.template
        return psycopg.connect(
            host=t.host,
            port=t.port,
            user=t.user,
            password=t.password,
            dbname=self.dbname,
            options=t.options,
            autocommit=True,
        )

    def _janitor(self) -> DatabaseJanitor:
        return clone_janitor(self.template, self.dbname)


def sessions(cur: psycopg.Cursor, dbname: str) -> list[int]:
    """The process ids of the other sessions on database `dbname`."""
    cur.execute(
        "select pid from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
        (dbname,),
    )
    return [pid for (pid,) in cur.fetchall()]


def end_sessions(cur: psycopg.Cursor, dbname: str, pids: list[int], wait_ms: int) -> bool:
    """Terminate these sessions on `dbname`, waiting up to `wait_ms` for each; whether they
    all ended. One that ended by itself after it was listed has ended too, though
    pg_terminate_backend says false for it (no such process)."""
    cur.execute(
        "select pg_terminate_backend(pid, %s) from unnest(%s::int[]) as pid", (wait_ms, pids)
    )
    cur.execute(
        "select not exists (select from pg_stat_activity where datname = %s and pid = any(%s))",
        (dbname, pids),
    )
    row = cur.fetchone()
    return bool(row and row[0])


def clone_janitor(template: NoopExecutor, dbname: str) -> DatabaseJanitor:
    """Creates (init) and drops database `dbname` as a clone of the template's template."""
    t = template
    return DatabaseJanitor(
        user=t.user,
        host=t.host,
        port=t.port,
        dbname=dbname,
        template_dbname=t.template_dbname,
        maintenance_dbname=t.maintenance_dbname,
        password=t.password,
    )


def table_columns(conn: psycopg.Connection) -> list[tuple[str, list[str]]]:
    """The codesift schema's tables and their stored (not generated) columns."""
    return [(t, list(cols)) for t, cols in conn.execute(TABLES).fetchall()]


def state(conn: psycopg.Connection) -> tuple[dict[str, int], list[tuple[str, int, bool]]]:
    """Rows per table and sequence positions: equal for every fresh clone of the template."""
    count = sql.SQL("select {}, count(*), null::bool from only {}")
    position = sql.SQL("select {}, last_value, is_called from {}")
    reads = [
        (position if is_sequence else count).format(
            sql.Literal(name), sql.Identifier("codesift", name)
        )
        for name, is_sequence in conn.execute(STATE_OBJECTS).fetchall()
    ]
    counts, sequences = {}, []
    for name, value, is_called in conn.execute(sql.SQL(" union all ").join(reads)).fetchall():
        if is_called is None:
            counts[name] = value
        else:
            sequences.append((name, int(value), bool(is_called)))
    return counts, sorted(sequences)


def capture(conn: psycopg.Connection) -> Fresh:
    """Read the state a reset must restore from a database cloned a moment ago."""
    tables = table_columns(conn)
    rows = {}
    for table, cols in tables:
        name = sql.Identifier("codesift", table)
        if conn.execute(sql.SQL("select exists (select from only {})").format(name)).fetchone()[0]:
            read = sql.SQL("copy (select {} from only {}) to stdout (format binary)")
            with conn.cursor().copy(read.format(_columns(cols), name)) as copy:
                rows[table] = b"".join(bytes(block) for block in copy)
    counts, sequences = state(conn)
    return Fresh(_fingerprint(conn), tables, rows, sequences, counts, _sizes(conn))


def reset(conn: psycopg.Connection, fresh: Fresh) -> str | None:
    """Put a database back to `fresh`, or say why that is not possible (the caller then
    drops it). `conn`: a superuser connection in autocommit, the only
    session on the database."""
    if _fingerprint(conn) != fresh.fingerprint:
        return "the catalogs changed"
    # DELETE and VACUUM rather than TRUNCATE: truncating builds every index of the
    # table again, and each build syncs its new file to disk.
    used = {t for (t,) in conn.execute(USED_TABLES).fetchall()}
    filled = [(t, cols) for t, cols in fresh.tables if t in used or t in fresh.rows]
    with conn.transaction():
        conn.execute("set local session_replication_role = replica")  # no triggers
        for table, cols in filled:
            name = sql.Identifier("codesift", table)
            conn.execute(sql.SQL("delete from only {}").format(name))
            if table in fresh.rows:
                write = sql.SQL("copy {} ({}) from stdin (format binary)")
                with conn.cursor().copy(write.format(name, _columns(cols))) as copy:
                    copy.write(fresh.rows[table])
        for sequence, last_value, is_called in fresh.sequences:
            name = f"codesift.{sequence}"
            conn.execute("select setval(%s::regclass, %s, %s)", (name, last_value, is_called))
    if filled:  # dead rows out of the indexes too (an HNSW scan would still visit them)
        names = sql.SQL(", ").join(sql.Identifier("codesift", t) for t, _ in filled)
        conn.execute(sql.SQL("vacuum {}").format(names))
    # an autovacuum worker that began on the test's writes may end after this and write its
    # own sizes and statistics: it is stopped, and the planner's view set again
    for _ in range(SIZE_TRIES):
        _planner_view(conn, fresh)
        if not _stop_autovacuum(conn) and _sizes(conn) == fresh.planner_sizes:
            if state(conn) != (fresh.counts, fresh.sequences):
                return "rows or sequences differ after the reset"
            return None
    return f"autovacuum or the planner's sizes still moving after {SIZE_TRIES} tries"


SIZE_TRIES = 3
AUTOVACUUM_HERE = (
    "select coalesce(bool_or(pg_terminate_backend(pid)), false) from pg_stat_activity"
    " where datname = current_database() and backend_type = 'autovacuum worker'"
)


def _planner_view(conn: psycopg.Connection, fresh: Fresh) -> None:
    """What the planner knew of a fresh clone, and no more: its sizes, no statistics."""
    with conn.transaction():
        conn.execute(
            "update pg_class c set relpages = f.relpages, reltuples = f.reltuples,"
            " relallvisible = f.relallvisible"
            " from unnest(%s::oid[], %s::int[], %s::real[], %s::int[])"
            " as f(oid, relpages, reltuples, relallvisible) where c.oid = f.oid",
            [list(column) for column in zip(*fresh.planner_sizes, strict=True)],
        )
        conn.execute(
            "delete from pg_statistic where starelid in"
            " (select oid from pg_class where relnamespace = 'codesift'::regnamespace)"
        )
    conn.execute("select pg_stat_reset()")


def _stop_autovacuum(conn: psycopg.Connection) -> bool:
    """Whether an autovacuum worker was at work on this database (it is stopped)."""
    row = conn.execute(AUTOVACUUM_HERE).fetchone()
    return bool(row and row[0])


def _sizes(conn: psycopg.Connection) -> list[tuple]:
    return [tuple(row) for row in conn.execute(PLANNER_SIZES).fetchall()]


def _fingerprint(conn: psycopg.Connection) -> str:
    return str(conn.execute(FINGERPRINT).fetchone()[0])


def _columns(cols: list[str]) -> sql.Composable:
    return sql.SQL(", ").join(map(sql.Identifier, cols))
