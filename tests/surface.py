"""The SQL surface of codesift, dumped in a stable order (a golden file, like pgai's contents test).

    .venv/bin/python -m tests.surface           # make expected: writes tests/expected/surface.txt
    .venv/bin/python -m tests.surface --stdout  # prints it instead

Creates a scratch database on the server of CODESIFT_DSN (unset: the embedded cluster), migrates
it with sql/, dumps what a client or a reviewer relies on, and drops it:

* every function in schema codesift: identity arguments (and defaults), result, kind, language,
  volatility, strictness, parallel safety, security definer or invoker, proconfig, ACL, comment;
* every table and view: columns (name, type, nullability, default, identity), constraints,
  indexes, triggers, row-level security (enabled, forced) and policies (command, roles, using,
  with check), options, ACL, comments of the relation and of each column;
* the schema's comment and ACL, the roles codesift creates, the extensions it needs.

Role names are normalised: codesift's own roles by name, PUBLIC as `public`, the role that
installed the schema (the dump's current_user) as `<installer>`, any other as `<other>`.
tests/db/test_surface.py diffs a fresh install against the committed file, and
tests/db/test_upgrade.py an upgrade from earlier versions against a fresh install.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

import psycopg
from codesift.db import current_dsn, database_dsn
from codesift.migrate import SQL_DIR, migrate
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = ROOT / "tests" / "expected" / "surface.txt"
SCHEMA = "codesift"
OWN_ROLES = ("codesift_app", "codesift_loader", "codesift_tenant")

VOLATILITY = {"i": "immutable", "s": "stable", "v": "volatile"}
PARALLEL = {"s": "parallel safe", "r": "parallel restricted", "u": "parallel unsafe"}
KIND = {"f": "function", "p": "procedure", "a": "aggregate", "w": "window"}
RELKIND = {"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view"}
POLICY_CMD = {"*": "all", "r": "select", "a": "insert", "w": "update", "d": "delete"}
PRIVILEGE = {
    "SELECT": "r",
    "INSERT": "a",
    "UPDATE": "w",
    "DELETE": "d",
    "TRUNCATE": "D",
    "REFERENCES": "x",
    "TRIGGER": "t",
    "EXECUTE": "X",
    "USAGE": "U",
    "CREATE": "C",
    "MAINTAIN": "m",
}


STORAGE = {"p": "plain", "e": "external", "m": "main", "x": "extended"}


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


class _Roles:
    def __init__(self, conn: psycopg.Connection):
        self.installer = conn.execute("select current_user").fetchone()[0]

    def name(self, role: str | None) -> str:
        if role is None or role in ("-", "public", "PUBLIC"):
            return "public"
        if role in OWN_ROLES:
            return role
        if role == self.installer:
            return "<installer>"
        return "<other>"


def _acl(conn: psycopg.Connection, roles: _Roles, catalog: str, acl: str, owner: str, oid: int):
    """Grants as `role=privileges` (aclitem letters), sorted, leaving out the owner's own (they
    are implicit and differ between server versions); `default` when the ACL was never set."""
    query = f"""
        select coalesce(r.rolname, '-'), a.privilege_type
        from (select {acl}, {owner} from {catalog} where oid = %s) as src (acl, owner)
        cross join lateral aclexplode(src.acl) as a
        left join pg_roles as r on r.oid = a.grantee
        where a.grantee <> src.owner
        """
    rows = conn.execute(query, (oid,)).fetchall()
    if not rows:
        unset = conn.execute(f"select {acl} is null from {catalog} where oid = %s", (oid,))
        return "default" if unset.fetchone()[0] else "owner only"
    grants: dict[str, set[str]] = {}
    for grantee, privilege in rows:
        grants.setdefault(roles.name(grantee), set()).add(PRIVILEGE.get(privilege, privilege))
    return ", ".join(f"{role}={''.join(sorted(p))}" for role, p in sorted(grants.items()))


def _functions(conn: psycopg.Connection, roles: _Roles) -> list[str]:
    out = ["## functions", ""]
    rows = conn.execute(
        """
        select p.oid, p.proname, pg_get_function_identity_arguments(p.oid),
            pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), p.prokind,
            l.lanname, p.provolatile, p.proisstrict, p.proparallel, p.prosecdef,
            p.proconfig, obj_description(p.oid, 'pg_proc')
        from pg_proc as p
        inner join pg_namespace as n on n.oid = p.pronamespace
        inner join pg_language as l on l.oid = p.prolang
        where n.nspname = %s
        order by p.proname, pg_get_function_identity_arguments(p.oid)
        """,
        (SCHEMA,),
    ).fetchall()
    for row in rows:
        oid, name, identity, arguments, result, kind, lang, vol, strict, par, definer = row[:11]
        config, comment = row[11:]
        out.append(f"{KIND.get(kind, kind)} {SCHEMA}.{name}({identity})")
        if arguments != identity:
            out.append(f"    arguments: {arguments}")
        out.append(f"    returns: {result}")
        attributes = [lang, VOLATILITY[vol], PARALLEL[par]]
        attributes.append("security definer" if definer else "security invoker")
        if strict:
            attributes.append("strict")
        out.append(f"    {' '.join(attributes)}")
        out.append(f"    config: {', '.join(sorted(config)) if config else '-'}")
        acl = _acl(conn, roles, "pg_proc", "proacl", "proowner", oid)
        out.append(f"    acl: {acl}")
        out.append(f"    comment: {_one_line(comment) or '-'}")
        out.append("")
    return out


def _relation(conn: psycopg.Connection, roles: _Roles, oid: int, name: str, kind: str) -> list:
    flags = conn.execute(
        """
        select relrowsecurity, relforcerowsecurity, reloptions, obj_description(oid, 'pg_class')
        from pg_class where oid = %s
        """,
        (oid,),
    ).fetchone()
    rls, forced, options, comment = flags
    out = [f"{RELKIND.get(kind, kind)} {SCHEMA}.{name}"]
    out.append(f"    comment: {_one_line(comment) or '-'}")
    if options:
        out.append(f"    options: {', '.join(sorted(options))}")
    if kind in ("r", "p"):
        rls_text = "enabled" if rls else "disabled"
        out.append(f"    row level security: {rls_text}{', forced' if forced else ''}")
    acl = _acl(conn, roles, "pg_class", "relacl", "relowner", oid)
    out.append(f"    acl: {acl}")
    out.append("    columns:")
    for col in conn.execute(
        """
        select a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
            pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
            col_description(a.attrelid, a.attnum),
            nullif(a.attstorage, t.typstorage)
        from pg_attribute as a
        inner join pg_type as t on t.oid = a.atttypid
        left join pg_attrdef as d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where a.attrelid = %s and a.attnum > 0 and not a.attisdropped
        order by a.attnum
        """,
        (oid,),
    ).fetchall():
        colname, coltype, notnull, default, identity, generated, colcomment, storage = col
        line = f"        {colname} {coltype}{' not null' if notnull else ''}"
        if storage:  # only where it differs from the type's
            line += f" storage {STORAGE[storage]}"
        if identity:
            line += " generated " + ("always" if identity == "a" else "by default") + " as identity"
        elif generated:
            line += f" generated always as ({default}) stored"
        elif default is not None:
            line += f" default {default}"
        out.append(line)
        out.append(f"            comment: {_one_line(colcomment) or '-'}")
    constraints = conn.execute(
        """
        select conname, pg_get_constraintdef(oid) from pg_constraint
        where conrelid = %s order by conname
        """,
        (oid,),
    ).fetchall()
    if constraints:
        out.append("    constraints:")
        out += [f"        {c}: {d}" for c, d in constraints]
    indexes = conn.execute(
        """
        select c.relname, pg_get_indexdef(i.indexrelid) from pg_index as i
        inner join pg_class as c on c.oid = i.indexrelid
        where i.indrelid = %s order by c.relname
        """,
        (oid,),
    ).fetchall()
    if indexes:
        out.append("    indexes:")
        out += [f"        {i}: {d}" for i, d in indexes]
    triggers = conn.execute(
        """
        select tgname, pg_get_triggerdef(oid) from pg_trigger
        where tgrelid = %s and not tgisinternal order by tgname
        """,
        (oid,),
    ).fetchall()
    if triggers:
        out.append("    triggers:")
        out += [f"        {t}: {d}" for t, d in triggers]
    policies = conn.execute(
        """
        select polname, polcmd, polpermissive,
            array(select coalesce(r.rolname, '-') from unnest(polroles) as g (oid)
                  left join pg_roles as r on r.oid = g.oid and g.oid <> 0),
            pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid)
        from pg_policy where polrelid = %s order by polname
        """,
        (oid,),
    ).fetchall()
    if policies:
        out.append("    policies:")
        for pol, cmd, permissive, pol_roles, using, check in policies:
            to = ", ".join(sorted(roles.name(r) for r in pol_roles))
            kind_text = "permissive" if permissive else "restrictive"
            out.append(f"        {pol}: {kind_text} for {POLICY_CMD[cmd]} to {to}")
            if using is not None:
                out.append(f"            using: {_one_line(using)}")
            if check is not None:
                out.append(f"            with check: {_one_line(check)}")
    if kind == "v":
        view = conn.execute("select pg_get_viewdef(%s, true)", (oid,)).fetchone()[0]
        out.append(f"    definition: {_one_line(view)}")
    out.append("")
    return out


def _relations(conn: psycopg.Connection, roles: _Roles) -> list[str]:
    out = ["## tables and views", ""]
    for oid, name, kind in conn.execute(
        """
        select c.oid, c.relname, c.relkind from pg_class as c
        inner join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = %s and c.relkind in ('r', 'p', 'v', 'm')
        order by c.relname
        """,
        (SCHEMA,),
    ).fetchall():
        out += _relation(conn, roles, oid, name, kind)
    return out


def _other_objects(conn: psycopg.Connection, roles: _Roles) -> list[str]:
    """Sequences and types in the schema that no table owns (an identity's sequence is its)."""
    out = []
    for name, kind in conn.execute(
        """
        select c.relname, c.relkind from pg_class as c
        inner join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = %s and c.relkind in ('S', 'c', 'f')
            and not exists (select from pg_depend as d where d.objid = c.oid and d.deptype = 'i')
        union all
        select t.typname, 'type' from pg_type as t
        inner join pg_namespace as n on n.oid = t.typnamespace
        where n.nspname = %s and t.typtype in ('e', 'd', 'r', 'm')
        order by 1
        """,
        (SCHEMA, SCHEMA),
    ).fetchall():
        out.append(f"{kind} {SCHEMA}.{name}")
    return ["## other objects", "", *out, ""] if out else []


def _header(conn: psycopg.Connection, roles: _Roles) -> list[str]:
    out = ["# the SQL surface of codesift (tests/surface.py; refresh with `make expected`)", ""]
    oid, comment = conn.execute(
        "select oid, obj_description(oid, 'pg_namespace') from pg_namespace where nspname = %s",
        (SCHEMA,),
    ).fetchone()
    out.append(f"schema {SCHEMA}")
    out.append(f"    comment: {_one_line(comment) or '-'}")
    acl = _acl(conn, roles, "pg_namespace", "nspacl", "nspowner", oid)
    out.append(f"    acl: {acl}")
    extensions = conn.execute(
        "select extname from pg_extension where extname <> 'plpgsql' order by extname"
    ).fetchall()
    out.append(f"extensions: {', '.join(e for (e,) in extensions)}")
    out.append("")
    out.append("## roles")
    out.append("")
    for row in conn.execute(
        """
        select rolname, rolcanlogin, rolinherit, rolsuper, rolcreatedb, rolcreaterole,
            rolbypassrls, rolreplication
        from pg_roles where rolname = any(%s) order by rolname
        """,
        (list(OWN_ROLES),),
    ).fetchall():
        name, *flags = row
        labels = ("login", "inherit", "superuser", "createdb", "createrole", "bypassrls")
        labels += ("replication",)
        words = [("" if f else "no") + label for f, label in zip(flags, labels, strict=True)]
        out.append(f"role {name}: {' '.join(words)}")
    out.append("")
    return out


def dump(conn: psycopg.Connection) -> str:
    """The surface of the codesift schema in `conn`'s database, as text in a stable order."""
    roles = _Roles(conn)
    # names print qualified (codesift.tenants, public.vector) whatever the session's path
    saved = conn.execute("select current_setting('search_path')").fetchone()[0]
    conn.execute("select set_config('search_path', 'pg_catalog', false)")
    try:
        lines = _header(conn, roles) + _functions(conn, roles) + _relations(conn, roles)
        lines += _other_objects(conn, roles)
    finally:
        conn.execute("select set_config('search_path', %s, false)", (saved,))
    return "\n".join(lines).rstrip("\n") + "\n"


def fresh_surface(dsn: str | None = None, sql_dir: Path = SQL_DIR) -> str:
    """Migrate a scratch database on the server of `dsn`, dump its surface, drop it."""
    dsn = dsn or current_dsn()
    name = f"codesift_surface_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        try:
            with psycopg.connect(database_dsn(name, dsn)) as conn:
                migrate(conn, sql_dir=sql_dir)
                conn.commit()
                return dump(conn)
        finally:
            admin.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(name)))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dsn", help="server to use (default: $CODESIFT_DSN or the embedded one)")
    ap.add_argument("--stdout", action="store_true", help="print instead of writing the file")
    args = ap.parse_args()
    text = fresh_surface(args.dsn)
    if args.stdout:
        sys.stdout.write(text)
        return
    EXPECTED.parent.mkdir(parents=True, exist_ok=True)
    EXPECTED.write_text(text)
    print(f"wrote {EXPECTED.relative_to(ROOT)} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()
