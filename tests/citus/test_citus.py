"""codesift on a real Citus cluster (a coordinator and two workers on loopback): sharded by
tenant, the same answers as one node, each tenant's query on its own worker only, and the
row-level policies in force on the workers' shards."""

import math
import re
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from tests.citus.conftest import COORDINATOR_PORT, QUESTIONS, TENANTS, as_tenant, index_tenants
from tests.explained import explained, pipeline_statement

ROOT = Path(__file__).resolve().parents[2]
# Keyed by tenant_id but read by another key before a tenant is known (sql/citus/).
REFERENCE_BY_DESIGN = {"tenant_roles", "mcp_tokens"}
QUERIES = {
    "pack_context": "select * from pack_context(%s, repo => %s, token_budget => 1200)",
    "explain_context": "select * from explain_context(%s, repo => %s)",
    "hybrid_search": "select * from hybrid_search(%s, repo => %s, k => 8)",
}


def test_every_table_is_distributed_by_tenant_or_a_reference_table(citus_cluster):
    with psycopg.connect(citus_cluster.dsn) as conn:
        rows = conn.execute(
            """
            select c.relname,
                   exists (select from pg_attribute as a where a.attrelid = c.oid
                           and a.attname = 'tenant_id' and not a.attisdropped),
                   p.partmethod, p.colocationid,
                   case when p.partmethod = 'h'
                        then column_to_column_name(p.logicalrelid, p.partkey) end
            from pg_class as c
            left join pg_dist_partition as p on p.logicalrelid = c.oid
            where c.relnamespace = 'codesift'::regnamespace and c.relkind in ('r', 'p')
            """
        ).fetchall()
    undistributed = [r[0] for r in rows if r[2] is None]
    assert not undistributed, f"codesift tables left out of Citus: {undistributed}"
    by_tenant = {r[0]: r for r in rows if r[1] and r[0] not in REFERENCE_BY_DESIGN}
    assert {"blobs", "code_symbols", "files", "repositories", "symbol_terms"} <= set(by_tenant)
    for name, (_, _, method, _, column) in by_tenant.items():
        assert (method, column) == ("h", "tenant_id"), f"{name} is not distributed by tenant_id"
    assert len({r[3] for r in by_tenant.values()}) == 1, "the tenant tables are not co-located"
    for name, has_tenant, method, _, _ in rows:
        if not has_tenant or name in REFERENCE_BY_DESIGN:
            assert method == "n", f"{name} should be a reference table"


def test_each_tenant_on_its_own_worker(citus_cluster, citus_indexed):
    ports = {t: citus_cluster.worker_of(i) for t, i in citus_indexed.items()}
    assert len(set(ports.values())) == 2, ports
    assert COORDINATOR_PORT not in ports.values()


def _single_node_ids(db, dsn, citus_repos) -> dict[str, int]:
    return index_tenants(dsn, citus_repos)


def _same(a, b) -> bool:
    """Equal, floats within a relative 1e-6: the loader's embeddings of two indexing runs may
    differ in the last bits (threaded BLAS), and so the distances computed from them."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _comparable(function: str, rows: list) -> list:
    """explain_context lists every candidate, many tied on score, and names what pruned one by
    its surrogate key ('s:<symbol id>', not the same in two databases): compared as the set
    of candidates with each stage's ranks and decision."""
    if function != "explain_context":
        return rows
    return sorted(
        # (repository .. rrf, graph_hop, decision, packed, tokens): not recency, score
        # or pruned_by
        ((r[1:11], r[12], r[14], r[16], r[17]) for r in rows),
        key=lambda r: repr(r[0][:7]),
    )


@pytest.mark.parametrize("function", sorted(QUERIES))
def test_same_rows_as_a_single_node(citus_cluster, citus_indexed, citus_repos, db, dsn, function):
    single = _single_node_ids(db, dsn, citus_repos)
    compared = 0
    for tenant, (repo, _) in TENANTS.items():
        for question in QUESTIONS[tenant]:
            with as_tenant(dsn, single[tenant]) as one:
                want = one.execute(QUERIES[function], (question, repo)).fetchall()
            with as_tenant(citus_cluster.dsn, citus_indexed[tenant]) as sharded:
                got = sharded.execute(QUERIES[function], (question, repo)).fetchall()
            assert want, f"{function} found nothing for {question!r} on one node"
            assert _same(_comparable(function, got), _comparable(function, want)), (
                tenant,
                question,
                got,
                want,
            )
            compared += len(want)
    assert compared > 8


# the BM25 legs under a path filter, read one posting a term first and asked for more rows
# than pass: the read deepens until it would reach every posting, and then what passes the
# filter is summed alone
FILTERED_LEGS = [
    "select b.* from _bm25_symbols(%s, %s, %s, 'lib/', null, null, 50, 1.2, 0.75) as b",
    "select b.path, b.score from _bm25_files(%s, %s, %s, 'lib/', null, 50, 1.2, 0.75) as b",
]


def test_a_filtered_leg_read_whole_gives_the_same_rows(
    citus_cluster, citus_indexed, citus_repos, db, dsn
):
    tenants = {"one": (dsn, _single_node_ids(db, dsn, citus_repos)["express"])}
    tenants["sharded"] = (citus_cluster.dsn, citus_indexed["express"])
    compared, repo = 0, {}
    for sql in FILTERED_LEGS:
        found = {}
        for where, (target, tenant_id) in tenants.items():
            with as_tenant(target, tenant_id) as conn:
                conn.execute("set local codesift.bm25_depth = 1")
                repo[where] = conn.execute("select id from codesift.repositories").fetchone()[0]
                terms = conn.execute("select codesift._query_terms('router handle')").fetchone()[0]
                rows = conn.execute(sql, (tenant_id, terms, [repo[where]])).fetchall()
                if sql.startswith("select b.*"):  # symbol ids differ: compared by name
                    name = "select qualified_name from codesift.code_symbols where id = %s"
                    rows = [(conn.execute(name, (i,)).fetchone()[0], score) for i, score in rows]
                found[where] = rows
        assert found["one"] and _same(found["sharded"], found["one"]), (sql, found)
        compared += len(found["one"])
        # and on one node that is the whole read (the statement summing the filter's postings)
        db.execute("set codesift.bm25_depth = 1")
        _, plans = explained(db, sql, (tenants["one"][1], terms, [repo["one"]]))
        db.execute("reset codesift.bm25_depth")
        assert sum("hits as (" in p["Query Text"] for p in plans) == 1, sql
    assert compared >= 4


def test_lookups_give_the_same_rows(citus_cluster, citus_indexed, citus_repos, db, dsn):
    single = _single_node_ids(db, dsn, citus_repos)
    lookups = [
        ("express", "select * from find_symbol('handle', repo => 'express')"),
        ("express", "select * from related_files('lib/router/index.js', repo => 'express')"),
        ("requests", "select * from find_symbol('Session.send')"),
        ("requests", "select pack_context_text('where are redirects followed?')"),
    ]
    for tenant, query in lookups:
        with as_tenant(dsn, single[tenant]) as one:
            want = one.execute(query).fetchall()
        with as_tenant(citus_cluster.dsn, citus_indexed[tenant]) as sharded:
            got = sharded.execute(query).fetchall()
        assert want and _same(got, want), (query, got, want)


@contextmanager
def logging_remote_commands(dsn: str, tenant_id: int, servers: list[str]):
    """A tenant's session whose every command Citus sends on is logged: the worker ports go
    to `servers`."""
    with as_tenant(dsn, tenant_id) as conn:
        conn.add_notice_handler(
            lambda d: servers.extend(re.findall(r"@127\.0\.0\.1:(\d+)", d.message_detail or ""))
        )
        conn.execute("set local citus.log_remote_commands = on")
        yield conn


def test_a_tenants_query_touches_only_its_worker(citus_cluster, citus_indexed):
    """Citus's own log of the commands it sends: every one goes to the tenant's worker."""
    for tenant, tenant_id in citus_indexed.items():
        port = citus_cluster.worker_of(tenant_id)
        servers: list[str] = []
        with logging_remote_commands(citus_cluster.dsn, tenant_id, servers) as conn:
            repo = TENANTS[tenant][0]
            rows = conn.execute(QUERIES["pack_context"], (QUESTIONS[tenant][0], repo)).fetchall()
        assert rows
        assert servers, "no remote command was logged"
        assert set(servers) == {str(port)}, (tenant, port, sorted(set(servers)))


def test_rls_holds_on_the_workers(citus_cluster, citus_indexed):
    """On each worker, straight on the shard that holds one tenant's rows: only that tenant
    sees them, the other tenant and a session with no tenant see nothing."""
    with psycopg.connect(citus_cluster.dsn) as conn:
        shards = {
            t: conn.execute(
                "select shard_name('codesift.blobs',"
                " get_shard_id_for_distribution_column('codesift.blobs', %s))",
                (i,),
            ).fetchone()[0]
            for t, i in citus_indexed.items()
        }
    for tenant, tenant_id in citus_indexed.items():
        other = next(i for t, i in citus_indexed.items() if t != tenant)
        node = "worker" + str(citus_cluster.worker_of(tenant_id) - COORDINATOR_PORT)
        with psycopg.connect(citus_cluster.node_dsn(node), autocommit=True) as worker:
            total = worker.execute(f"select count(*) from {shards[tenant]}").fetchone()[0]
            mine = worker.execute(
                f"select count(*) from {shards[tenant]} where tenant_id = %s", (tenant_id,)
            ).fetchone()[0]
            assert mine > 0
            worker.execute("set role codesift_app")
            seen = {}
            for who, value in (("own", tenant_id), ("other", other), ("none", "")):
                worker.execute(
                    "select set_config('app.current_tenant_id', %s, false)", (str(value),)
                )
                seen[who] = worker.execute(f"select count(*) from {shards[tenant]}").fetchone()[0]
            assert seen == {"own": mine, "other": total - mine, "none": 0}
            # and the other tenant's rows are never among those it sees
            worker.execute("select set_config('app.current_tenant_id', %s, false)", (str(other),))
            assert (
                worker.execute(
                    f"select count(*) from {shards[tenant]} where tenant_id = %s", (tenant_id,)
                ).fetchone()[0]
                == 0
            )


def test_a_tenant_sees_only_itself_through_the_coordinator(citus_cluster, citus_indexed):
    for tenant, tenant_id in citus_indexed.items():
        with as_tenant(citus_cluster.dsn, tenant_id) as conn:
            names = [r[0] for r in conn.execute("select name from codesift.repositories")]
            tenants = {r[0] for r in conn.execute("select distinct tenant_id from codesift.blobs")}
        assert names == [TENANTS[tenant][0]] and tenants == {tenant_id}
        with pytest.raises(psycopg.errors.UndefinedObject):
            with as_tenant(citus_cluster.dsn, tenant_id) as conn:
                other = next(r for t, r in TENANTS.items() if t != tenant)[0]
                conn.execute(QUERIES["pack_context"], ("anything", other)).fetchall()


def test_the_vector_probe_reads_only_the_tenants_worker(citus_cluster, citus_indexed):
    """pipeline/degraded.py asks whether a tenant holds any vector of the model (a tenant
    with a backlog too large to count): answered on the tenant's worker alone, from its own
    rows (the other tenant's vectors are of the same model)."""
    probe = pipeline_statement("tenant_vectors")
    (mine, theirs) = sorted(citus_indexed.values())
    for tenant_id, other_id in ((mine, theirs), (theirs, mine)):
        with as_tenant(citus_cluster.dsn, tenant_id) as conn:
            model = conn.execute(
                "select value from settings where key = 'embedding_model'"
            ).fetchone()[0]
            # the other tenant's rows are not this session's to see
            assert conn.execute(probe, {"p1": other_id, "p2": model}).fetchone()[0] is False
        servers: list[str] = []
        with logging_remote_commands(citus_cluster.dsn, tenant_id, servers) as conn:
            found = conn.execute(probe, {"p1": tenant_id, "p2": model}).fetchone()[0]
            unknown = {"p1": tenant_id, "p2": "no-such-model"}
            assert conn.execute(probe, unknown).fetchone()[0] is False
        assert found is True
        assert servers and set(servers) == {str(citus_cluster.worker_of(tenant_id))}


VECTORS_INLINE = ROOT / "sql" / "incremental" / "032-vectors-inline.sql"
VECTOR_TABLES = ("codesift.code_symbols", "codesift.blobs")


def _vector_storage(conn: psycopg.Connection) -> dict[str, set[str]]:
    """table -> the storage of its embedding column on the coordinator and on every shard."""
    found: dict[str, set[str]] = {}
    for table in VECTOR_TABLES:
        query = (
            "select attstorage::text from pg_attribute"
            " where attrelid = '%s'::regclass and attname = 'embedding'"
        )
        own = conn.execute(query.replace("%s", table)).fetchone()[0]
        shards = conn.execute(
            "select success, result from run_command_on_shards(%s, %s)", (table, query)
        ).fetchall()
        assert shards and all(ok for ok, _ in shards), shards
        found[table] = {own} | {result for _, result in shards}
    return found


def test_vectors_stay_in_their_rows_on_every_shard(citus_cluster):
    """Distributed after the migrations, each shard took the coordinator's storage (main)."""
    with psycopg.connect(citus_cluster.dsn) as conn:
        assert _vector_storage(conn) == {t: {"m"} for t in VECTOR_TABLES}


def test_the_vector_storage_migration_runs_on_a_distributed_cluster(citus_cluster):
    """An installation distributed before migration 032 (its shards and the coordinator's
    tables at pgvector's `external`) is migrated: Citus refuses SET STORAGE on a distributed
    table, so the migration alters each shard and the coordinator's table itself."""
    with psycopg.connect(citus_cluster.dsn, autocommit=True) as conn:
        for table in VECTOR_TABLES:
            conn.execute(
                "select run_command_on_shards(%s, %s)",
                (table, "alter table %s alter column embedding set storage external"),
            )
            with conn.transaction():
                conn.execute("set local citus.enable_ddl_propagation = off")
                conn.execute(f"alter table {table} alter column embedding set storage external")
        assert _vector_storage(conn) == {t: {"e"} for t in VECTOR_TABLES}
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("alter table codesift.blobs alter column embedding set storage main")
        with conn.transaction():
            conn.execute(VECTORS_INLINE.read_text(encoding="utf-8"))
            # DDL reaches the workers again after it
            assert conn.execute("show citus.enable_ddl_propagation").fetchone()[0] == "on"
        assert _vector_storage(conn) == {t: {"m"} for t in VECTOR_TABLES}
