"""Scope: the tenant the session acts as and the repositories a query searches, with a
notice for each repository that is not indexed yet or whose head has moved on."""

from .. import plans
from ..errcodes import INSUFFICIENT_PRIVILEGE, UNDEFINED_OBJECT
from .degraded import note
from .params import fail

REPO_TYPES = ["bigint", "text", "text"]
REFS_TYPES = ["bigint", "text"]


def current_tenant(plpy) -> int | None:
    """The tenant the session acts as (codesift.current_tenant_id: a per-tenant role's own,
    else app.current_tenant_id, checked there). Under Citus the workers' policies see that
    setting only when the client set it with SET LOCAL in its transaction (a SET LOCAL made
    here, inside PL/Python's subtransactions, would not reach them)."""
    return plans.run(plpy, "select codesift.current_tenant_id() as t")[0]["t"]


# On a hot standby: how far behind the primary it answers (read-only functions only).
REPLICA = (
    "select pg_is_in_recovery() as standby,"
    " extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp())::float8 as age,"
    " pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint as unreplayed"
)


def _repositories(plpy, tenant: int | None, repo: str | None, ref: str | None) -> list[dict]:
    return list(plans.run(plpy, plans.load("repositories"), REPO_TYPES, [tenant, repo, ref]))


def _label(r: dict) -> str:
    return f"repository '{r['name']}'" + ("" if r["is_default"] else f" at ref '{r['ref']}'")


def replica_notice(row: dict) -> str | None:
    """The freshness of a standby's answer, or None on a primary."""
    if not row["standby"]:
        return None
    if row["age"] is None:
        return "answering from a read replica that has replayed no transaction yet"
    waiting = row["unreplayed"] or 0
    return (
        "answering from a read replica: the last transaction it replayed committed "
        f"{row['age']:.1f} s ago on the primary; "
        + (
            f"{waiting} bytes of WAL received wait to be replayed"
            if waiting > 0
            else "it has replayed all it received"
        )
    )


def resolve_scope(
    plpy, repo: str | None, ref: str | None = None, notes: list[dict] | None = None
) -> tuple[int, list[dict]]:
    """The tenant and the repository refs a query searches: `ref` of the repository named
    `repo` (or of every repository that has it), else each one's default ref. Each freshness
    notice goes to `notes` too when given (degraded.note)."""
    tenant = current_tenant(plpy)
    lag = replica_notice(plans.run(plpy, REPLICA)[0])
    if lag:
        note(plpy, notes, "replica_lag", lag)
    repos = _repositories(plpy, tenant, repo, ref)
    if tenant is None:
        # an owner/superuser session without a tenant: a repository name that is
        # unique across tenants identifies one; the application role sees nothing
        tenants = {r["tenant_id"] for r in repos}
        if repo is None or not repos:
            fail(
                plpy,
                "no tenant is set for this session",
                hint="set app.current_tenant_id to your tenant's id first "
                "(select set_config('app.current_tenant_id', '42', false))",
                sqlstate=INSUFFICIENT_PRIVILEGE,
            )
        if len(tenants) > 1:
            fail(
                plpy,
                f"repository '{repo}' exists in several tenants",
                hint="set app.current_tenant_id to choose one",
                sqlstate=INSUFFICIENT_PRIVILEGE,
            )
        tenant = tenants.pop()
    if not repos and ref is not None and _repositories(plpy, tenant, repo, None):
        listed = plans.run(plpy, plans.load("repository_refs"), REFS_TYPES, [tenant, repo])
        refs = [r["ref"] for r in listed]
        where = f"repository '{repo}'" if repo else "any repository"
        fail(
            plpy,
            f"{where} has no indexed ref '{ref}'",
            hint="indexed refs: " + ", ".join(refs[:20]) + " (codesift index PATH --ref REF)",
            sqlstate=UNDEFINED_OBJECT,
        )
    if not repos:
        names = [r["name"] for r in _repositories(plpy, tenant, None, None)]
        hint = (
            ("indexed repositories: " + ", ".join(names[:20]))
            if names
            else ("no repository is indexed yet for this tenant: run codesift index PATH")
        )
        fail(plpy, f"unknown repository '{repo}'", hint=hint, sqlstate=UNDEFINED_OBJECT)
    for r in repos:
        if r["indexed_commit"] is None:
            note(plpy, notes, "not_indexed", f"{_label(r)} has no indexed commit yet")
        elif r["head_commit"] and r["head_commit"] != r["indexed_commit"]:
            note(
                plpy,
                notes,
                "stale_index",
                f"{_label(r)} is indexed at {r['indexed_commit'][:12]} but its "
                f"head has moved to {r['head_commit'][:12]}: results may be stale "
                "(re-run codesift index)",
            )
    return tenant, repos
