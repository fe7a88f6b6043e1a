"""Roles for the per-tenant login role tests: made by the real grant path (or by hand, for
a role a test gives more than codesift does), connected with their passwords, and dropped
afterwards. Roles are cluster-wide and other test runs share the cluster: every name is
unique, and nothing here changes codesift's own roles."""

import uuid

import psycopg
from codesift.tenants import LoginRole, grant_login_role
from psycopg import sql
from psycopg.conninfo import make_conninfo

PASSWORD = "pw-" + uuid.uuid4().hex


class LoginRoles:
    def __init__(self, db: psycopg.Connection, dsn: str) -> None:
        self.db = db
        self.dsn = dsn
        self.made: list[str] = []
        self.opened: list[psycopg.Connection] = []
        self.passwords: dict[str, str] = {}

    def name(self, prefix: str = "bi") -> str:
        role = f"{prefix}_{uuid.uuid4().hex[:12]}"
        self.made.append(role)
        return role

    def grant(self, tenant: str = "acme", role: str | None = None, **limits) -> LoginRole:
        """A role confined to `tenant` by grant_login_role (a new one unless `role`)."""
        granted = grant_login_role(self.db, tenant, role or self.name(), **limits)
        if granted.password:
            self.passwords[granted.role] = granted.password
        return granted

    def plain(self, prefix: str = "plain") -> str:
        """A login role made by hand, with a password and nothing else."""
        role = self.name(prefix)
        self.db.execute(
            sql.SQL("create role {} login password {}").format(
                sql.Identifier(role), sql.Literal(PASSWORD)
            )
        )
        self.passwords[role] = PASSWORD
        return role

    def connect(self, role: str, **kwargs) -> psycopg.Connection:
        conn = psycopg.connect(
            make_conninfo(self.dsn, user=role, password=self.passwords[role]),
            autocommit=True,
            **kwargs,
        )
        self.opened.append(conn)
        return conn

    def close(self) -> None:
        for conn in self.opened:
            conn.close()
        for role in reversed(self.made):
            exists = self.db.execute("select 1 from pg_roles where rolname = %s", (role,))
            if exists.fetchone():
                self.db.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
                self.db.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
