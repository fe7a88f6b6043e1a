"""Per-tenant login roles get nothing beyond what codesift grants them (issue 35, item 8).

`codesift tenant create T --login-role R` accepts an existing role, and a role that can
create roles or databases, replicate, read or write the server's files, run programs on it,
act as another role (another tenant's, codesift_app's, any) or be acted as by one, own or hold
privileges on objects, or be named by a policy escapes its tenant one way or another. The
grant refuses every such role (an allow-list: membership in codesift_tenant and nothing
else), naming what to remove; and a role granted cleanly that gains any of it afterwards is
refused at every use: the policies raise instead of showing it its tenant's rows."""

import psycopg
import pytest
from codesift.errors import CodesiftError

from tests.watching import run_codesift

from .login_roles import LoginRoles
from .two_tenants import index_two_tenants

# (what the role gets, as {r}; {other}: another tenant's login role; {plain}: a plain role;
# {db}: this database) -> what the refusal tells the administrator to run
ESCAPES = {
    "superuser": ("alter role {r} superuser", "ALTER ROLE {r} NOSUPERUSER"),
    "bypassrls": ("alter role {r} bypassrls", "ALTER ROLE {r} NOBYPASSRLS"),
    "createrole": ("alter role {r} createrole", "ALTER ROLE {r} NOCREATEROLE"),
    "createdb": ("alter role {r} createdb", "ALTER ROLE {r} NOCREATEDB"),
    "replication": ("alter role {r} replication", "ALTER ROLE {r} NOREPLICATION"),
    "execute_server_program": (
        "grant pg_execute_server_program to {r}",
        "REVOKE pg_execute_server_program FROM {r}",
    ),
    "read_server_files": (
        "grant pg_read_server_files to {r}",
        "REVOKE pg_read_server_files FROM {r}",
    ),
    "write_server_files": (
        "grant pg_write_server_files to {r}",
        "REVOKE pg_write_server_files FROM {r}",
    ),
    "read_all_data": ("grant pg_read_all_data to {r}", "REVOKE pg_read_all_data FROM {r}"),
    "write_all_data": ("grant pg_write_all_data to {r}", "REVOKE pg_write_all_data FROM {r}"),
    "signal_backend": ("grant pg_signal_backend to {r}", "REVOKE pg_signal_backend FROM {r}"),
    "monitor": ("grant pg_monitor to {r}", "REVOKE pg_monitor FROM {r}"),
    "app_role": ("grant codesift_app to {r}", "REVOKE codesift_app FROM {r}"),
    "loader_role": ("grant codesift_loader to {r}", "REVOKE codesift_loader FROM {r}"),
    "other_tenants_role": ("grant {other} to {r}", "REVOKE {other} FROM {r}"),
    "any_other_role": ("grant {plain} to {r}", "REVOKE {plain} FROM {r}"),
    "has_a_member": ("grant {r} to {plain}", "REVOKE {r} FROM {plain}"),
    "admin_of_the_group": (
        "grant codesift_tenant to {r} with admin option",
        "REVOKE ADMIN OPTION FOR codesift_tenant FROM {r}",
    ),
    "truncate": ("grant truncate on codesift.blobs to {r}", "holds privileges on table blobs"),
    "writes": ("grant insert on codesift.files to {r}", "holds privileges on table files"),
    "create_in_schema": ("grant create on schema codesift to {r}", "privileges on schema codesift"),
    "create_in_database": ('grant create on database "{db}" to {r}', "privileges on database"),
    "owns_a_table": (
        "create table public.{r}_t (a int); alter table public.{r}_t owner to {r}",
        "owns table public.{r}_t",
    ),
    "named_by_a_policy": (
        "create policy {r}_p on codesift.blobs for select to {r} using (true)",
        "is named by policy {r}_p on table blobs",
    ),
}

# What a policy can still see at use: PostgreSQL applies no policy to a superuser or a
# BYPASSRLS role, and a policy of its own (`using (true)`) folds the tenant check away.
NOT_SEEN_AT_USE = {"superuser", "bypassrls", "named_by_a_policy"}


@pytest.fixture
def roles(db, dsn):
    made = LoginRoles(db, dsn)
    yield made
    made.close()


@pytest.fixture
def tenants(db):
    db.execute("insert into tenants (name) values ('acme'), ('globex')")


def _apply(db, escape: str, r: str, roles: LoginRoles) -> str:
    """Give role r the escape; the refusal's expected fix."""
    setup, fix = ESCAPES[escape]
    names = {"r": r, "db": db.info.dbname}
    if "{other}" in setup:
        names["other"] = roles.grant("globex").role
    if "{plain}" in setup:
        names["plain"] = roles.plain()
    for statement in setup.format(**names).split(";"):
        db.execute(statement)
    return fix.format(**names)


def _mapped(db, role: str) -> bool:
    return db.execute(
        "select exists (select from tenant_roles where role_name = %s)", (role,)
    ).fetchone()[0]


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_an_existing_role_with_more_is_refused_at_grant(db, tenants, roles, escape):
    r = roles.plain("esc")
    fix = _apply(db, escape, r, roles)
    with pytest.raises(CodesiftError) as refused:
        roles.grant("acme", r)
    message = str(refused.value)
    assert f"role '{r}'" in message and "per-tenant role" in message, message
    assert fix in message, message
    assert not _mapped(db, r)
    if escape not in ("superuser", "admin_of_the_group", "other_tenants_role"):
        assert not db.execute(
            "select pg_has_role(%s, 'codesift_tenant', 'MEMBER')", (r,)
        ).fetchone()[0]


def test_a_refusal_names_every_problem(db, tenants, roles):
    r = roles.plain("esc")
    db.execute(f"alter role {r} createrole createdb")
    db.execute(f"grant pg_read_server_files to {r}")
    with pytest.raises(CodesiftError) as refused:
        roles.grant("acme", r)
    for fix in ("NOCREATEROLE", "NOCREATEDB", f"REVOKE pg_read_server_files FROM {r}"):
        assert fix in str(refused.value)


def test_a_clean_existing_role_is_accepted(db, tenants, roles):
    r = roles.plain("clean")
    # connecting to the database is not more than codesift grants
    db.execute(f'grant connect, temporary on database "{db.info.dbname}" to {r}')
    granted = roles.grant("acme", r)
    assert not granted.created and _mapped(db, r)
    assert db.execute("select codesift.login_role_problems(%s)", (r,)).fetchone()[0] is None


@pytest.fixture
def two(dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


@pytest.mark.parametrize("escape", sorted(set(ESCAPES) - NOT_SEEN_AT_USE))
def test_a_role_that_gains_more_after_its_grant_is_refused_at_use(db, two, roles, escape):
    granted = roles.grant("acme")
    r = granted.role
    conn = roles.connect(r)
    assert conn.execute("select array_agg(distinct tenant_id) from blobs").fetchone()[0] == [
        two["acme"].id
    ]
    fix = _apply(db, escape, r, roles)
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
        conn.execute("select array_agg(distinct tenant_id) from blobs")
    assert f"role {r} may not act as a tenant" in str(refused.value)
    assert fix in str(refused.value)
    # every tenant table, and the query functions (a member of codesift_loader still reads
    # the tenants' names: that role's own policy on tenants, using (true), needs no check)
    for statement in (
        "select count(*) from repositories",
        "select count(*) from files",
        "select count(*) from pack_context('token vault zebra', repo => 'shared')",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
    # a new session of it too
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        roles.connect(r).execute("select count(*) from blobs")


def test_a_login_role_made_a_member_of_another_tenants_role_sees_neither(db, two, roles):
    """acme's role, granted globex's role: SET ROLE to it shows globex's rows without the
    check; with it, the session that logged in as acme's role is refused whatever it is."""
    acme = roles.grant("acme").role
    globex = roles.grant("globex").role
    conn = roles.connect(acme)
    db.execute(f"grant {globex} to {acme}")
    conn.execute(f"set role {globex}")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"role {acme} may not act"):
        conn.execute("select array_agg(distinct tenant_id) from blobs")
    conn.execute("reset role")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select count(*) from blobs")
    # globex's own role now has a member that can act as it: refused too
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"REVOKE {globex} FROM {acme}"):
        roles.connect(globex).execute("select count(*) from blobs")
    # taken back: both see their own tenant again
    db.execute(f"revoke {globex} from {acme}")
    assert conn.execute("select array_agg(distinct tenant_id) from blobs").fetchone()[0] == [
        two["acme"].id
    ]


def test_a_stranger_granted_a_login_role_cannot_act_as_it(db, two, roles):
    """A plain role made a member of acme's role: SET ROLE to it is refused at use."""
    acme = roles.grant("acme").role
    stranger = roles.plain("stranger")
    db.execute(f"grant {acme} to {stranger}")
    conn = roles.connect(stranger)
    conn.execute(f"set role {acme}")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"REVOKE {acme} FROM"):
        conn.execute("select count(*) from blobs")


def test_a_login_role_switched_to_its_group_acts_as_no_tenant(db, two, roles):
    acme = roles.grant("acme").role
    conn = roles.connect(acme)
    conn.execute("set role codesift_tenant")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(two["acme"].id),))
    assert conn.execute("select count(*) from blobs").fetchone()[0] == 0
    assert conn.execute("select count(*) from tenants").fetchone()[0] == 0


def test_temporary_tables_are_not_more(db, two, roles):
    """A BI tool's temporary table is its own: the role keeps its tenant."""
    acme = roles.grant("acme").role
    conn = roles.connect(acme)
    conn.execute("create temporary table scratch (a int)")
    assert conn.execute("select array_agg(distinct tenant_id) from blobs").fetchone()[0] == [
        two["acme"].id
    ]


def test_the_cli_refuses_with_what_to_remove(db, dsn, tenants, roles):
    r = roles.plain("esc")
    db.execute(f"alter role {r} createrole")
    db.execute(f"grant pg_execute_server_program to {r}")
    out = run_codesift(dsn, "tenant", "create", "acme", "--login-role", r)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    for fix in (f"ALTER ROLE {r} NOCREATEROLE", f"REVOKE pg_execute_server_program FROM {r}"):
        assert fix in " ".join(out.stderr.split()), out.stderr
    assert not _mapped(db, r)


def test_the_check_takes_hostile_names_and_the_limits_are_not_the_roles_own(db, two, roles):
    conn = roles.connect(roles.grant("acme").role)
    for name in (None, "", "x" * 1_000_000, "a'; drop table blobs; --", "\x01\u202e"):
        assert conn.execute("select login_role_problems(%s)", (name,)).fetchone()[0] is None
    # a per-tenant role (or the services) cannot lift its own limit through codesift
    for role in ("codesift_app", "codesift_loader", "codesift_tenant"):
        assert not db.execute(
            "select has_function_privilege(%s, 'codesift._limit_login_role(text, integer)',"
            " 'execute')",
            (role,),
        ).fetchone()[0]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select _limit_login_role(current_user, 1000)")
