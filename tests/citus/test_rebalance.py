"""Adding a worker and moving one tenant's shards onto it while both tenants' queries run:
no query fails, every query answers as before, and no row is lost. A statement that Citus
could not plan while a move committed is planned again, once."""

import threading
import time

import psycopg

from tests.citus.conftest import COORDINATOR_PORT, QUESTIONS, TENANTS, as_tenant, run_script

PACK = "select * from pack_context(%s, repo => %s, token_budget => 1200)"


def _counts(dsn: str, tenant_id: int) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "select c.relname from pg_dist_partition as p"
                " inner join pg_class as c on p.logicalrelid = c.oid"
                " where c.relnamespace = 'codesift'::regnamespace and p.partmethod = 'h'"
                " order by 1"
            )
        ]
        return {
            t: conn.execute(
                f"select count(*) from codesift.{t} where tenant_id = %s", (tenant_id,)
            ).fetchone()[0]
            for t in tables
        }


def test_moving_a_tenant_to_a_new_worker_under_load(citus_cluster, citus_indexed):
    moving, staying = citus_indexed["express"], citus_indexed["requests"]
    before = {t: _counts(citus_cluster.dsn, i) for t, i in citus_indexed.items()}
    expected = {}
    for tenant, tenant_id in citus_indexed.items():
        with as_tenant(citus_cluster.dsn, tenant_id) as conn:
            expected[tenant] = conn.execute(
                PACK, (QUESTIONS[tenant][0], TENANTS[tenant][0])
            ).fetchall()
        assert expected[tenant]

    added = run_script(citus_cluster.env, "add-worker", timeout=600)
    new_port = int(added.split(":")[-1])
    assert new_port == COORDINATOR_PORT + 3

    stop = threading.Event()
    answered = {t: 0 for t in citus_indexed}
    errors: list[str] = []

    def ask(tenant: str) -> None:
        while not stop.is_set():
            try:
                with as_tenant(citus_cluster.dsn, citus_indexed[tenant]) as conn:
                    rows = conn.execute(PACK, (QUESTIONS[tenant][0], TENANTS[tenant][0])).fetchall()
                if rows != expected[tenant]:
                    errors.append(f"{tenant}: a different answer during the move")
                answered[tenant] += 1
            except psycopg.Error as exc:
                errors.append(f"{tenant}: {exc}")

    threads = [threading.Thread(target=ask, args=(t,)) for t in citus_indexed]
    for t in threads:
        t.start()
    try:
        while min(answered.values()) == 0 and not errors:
            time.sleep(0.1)  # both tenants answer before the move starts
        citus_cluster.move_tenant(moving, new_port)
        during = dict(answered)
        deadline = time.monotonic() + 60
        while any(answered[t] <= during[t] for t in answered) and time.monotonic() < deadline:
            time.sleep(0.1)  # and after it ends
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=120)

    assert not errors, "\n".join(errors[:3])
    assert all(n >= 2 for n in answered.values()), answered
    assert citus_cluster.worker_of(moving) == new_port
    assert citus_cluster.worker_of(staying) != new_port
    after = {t: _counts(citus_cluster.dsn, i) for t, i in citus_indexed.items()}
    assert after == before
    assert sum(after["express"].values()) > 0


# a statement whose first `failures` plannings fail as one racing a shard move's commit does,
# run through codesift_db.plans (the sequence is not rolled back with a failed attempt)
FAILING = """
create sequence pg_temp.attempts;
create function pg_temp.failing(failures int) returns bigint language plpgsql as $$
begin
    if nextval('pg_temp.attempts') <= failures then
        raise exception 'complex joins are only supported when ...'
            using errcode = 'feature_not_supported';
    end if;
    return currval('pg_temp.attempts');
end $$;
create function pg_temp.through_plans(failures int) returns bigint language plpython3u as $$
from codesift_db import plans
return plans.run(plpy, "select pg_temp.failing($1) as n", ["int"], [failures])[0]["n"]
$$;
"""


def _attempts(dsn: str, failures: int) -> tuple[int | None, int]:
    """The statement's answer (None when it failed) and how many times it ran."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(FAILING)
        try:
            answer = conn.execute("select pg_temp.through_plans(%s)", (failures,)).fetchone()[0]
        except psycopg.errors.FeatureNotSupported:
            answer = None
        return answer, conn.execute("select currval('pg_temp.attempts')").fetchone()[0]


def test_a_statement_planned_during_a_move_is_planned_again_once(citus_cluster):
    assert _attempts(citus_cluster.dsn, 0) == (1, 1)
    assert _attempts(citus_cluster.dsn, 1) == (2, 2)
    assert _attempts(citus_cluster.dsn, 5) == (None, 2)


def test_without_citus_a_statement_is_not_planned_again(dsn):
    assert _attempts(dsn, 1) == (None, 1)
