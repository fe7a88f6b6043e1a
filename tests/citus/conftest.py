"""A real Citus cluster for the tests: a coordinator and two workers on 127.0.0.1 started by
scripts/citus.sh (which builds Citus first when CITUS_SOURCE names a source tarball), and
the express-like and requests-like repositories indexed into two tenants."""

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from codesift.indexer import index_repository
from psycopg import sql

from tests.db.test_retrieval import FILES as REQUESTS_FILES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "citus.sh"
# workers on the next ports (55451, 55452, and 55453 once added); each pytest-xdist worker
# (scripts/test.sh runs the files in parallel) has a cluster of its own ten ports further on
COORDINATOR_PORT = 55450 + 10 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)

EXPRESS_FILES = {
    "lib/express.js": (
        "var Router = require('./router');\nvar application = require('./application');\n\n"
        "function createApplication() {\n  var app = Object.create(application);\n"
        "  app.router = new Router();\n  return app;\n}\n\n"
        "module.exports = createApplication;\n"
    ),
    "lib/application.js": (
        "var Router = require('./router');\n\nvar app = exports = module.exports = {};\n\n"
        "/**\n * Dispatch a request into the router.\n */\n"
        "app.handle = function handle(req, res, callback) {\n"
        "  var router = this.router;\n  router.handle(req, res, callback);\n};\n\n"
        "app.listen = function listen(port) {\n  return require('http').createServer(this)"
        ".listen(port);\n};\n"
    ),
    "lib/router/index.js": (
        "var Route = require('./route');\n\nfunction Router() {\n  this.stack = [];\n}\n\n"
        "/**\n * Match the request path against each route's path and call the matching "
        "handlers in order.\n */\n"
        "Router.prototype.handle = function handle(req, res, done) {\n"
        "  var idx = 0;\n  var stack = this.stack;\n  function next() {\n"
        "    var layer = stack[idx++];\n    if (!layer) return done();\n"
        "    if (layer.match(req.url)) layer.route.dispatch(req, res, next);\n"
        "    else next();\n  }\n  next();\n};\n\n"
        "Router.prototype.route = function route(path) {\n  var r = new Route(path);\n"
        "  this.stack.push({ match: function (p) { return p === path; }, route: r });\n"
        "  return r;\n};\n\nmodule.exports = Router;\n"
    ),
    "lib/router/route.js": (
        "function Route(path) {\n  this.path = path;\n  this.methods = {};\n}\n\n"
        "Route.prototype.dispatch = function dispatch(req, res, done) {\n"
        "  var handler = this.methods[req.method.toLowerCase()];\n"
        "  if (!handler) return done();\n  handler(req, res, done);\n};\n\n"
        "module.exports = Route;\n"
    ),
    "lib/response.js": (
        "var res = module.exports = {};\n\n/**\n * Redirect to the given url with a 302 status.\n"
        " */\nres.redirect = function redirect(url) {\n  this.statusCode = 302;\n"
        "  this.setHeader('Location', url);\n  this.end();\n};\n\n"
        "res.json = function json(obj) {\n  this.setHeader('Content-Type', 'application/json');\n"
        "  this.end(JSON.stringify(obj));\n};\n"
    ),
    "test/router.js": (
        "var Router = require('../lib/router');\n\n"
        "describe('Router', function () {\n  it('dispatches to a route', function () {\n"
        "    var router = new Router();\n    router.route('/').methods.get = function () {};\n"
        "  });\n});\n"
    ),
}
TENANTS = {"express": ("express", EXPRESS_FILES), "requests": ("requestsish", REQUESTS_FILES)}
QUESTIONS = {
    "express": ["how does the router dispatch a request to a route?", "redirect response"],
    "requests": ["where are redirects followed?", "merge cookies into the jar"],
}


def citus_available() -> str | None:
    """Why the Citus tests cannot run here, or None when they can."""
    if os.environ.get("CITUS_SOURCE"):
        return None
    pg_config = shutil.which("pg_config")
    libdirs = [Path("/usr/lib/postgresql") / v / "lib" for v in os.listdir("/usr/lib/postgresql")]
    if any((d / "citus.so").exists() for d in libdirs) or (
        pg_config
        and (
            Path(subprocess.check_output([pg_config, "--pkglibdir"], text=True).strip())
            / "citus.so"
        ).exists()
    ):
        return None
    return (
        "Citus is not installed and CITUS_SOURCE is not set: set CITUS_SOURCE=/path/to/"
        "citus-13.2.2.tar.gz (CI does) or install Citus to run the Citus tests"
    )


def make_git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    }
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, env=env)
    return root


def index_tenants(dsn: str, repos: Path) -> dict[str, int]:
    """Both fixtures indexed (embeddings included), each into its own tenant; tenant ids."""
    ids = {}
    for tenant, (name, _) in TENANTS.items():
        with psycopg.connect(dsn) as conn:
            index_repository(conn, repos / name, name=name, tenant=tenant, show_progress=False)
            ids[tenant] = conn.execute(
                "select id from codesift.tenants where name = %s", (tenant,)
            ).fetchone()[0]
    return ids


@contextmanager
def as_tenant(dsn: str, tenant_id: int) -> Iterator[psycopg.Connection]:
    """A transaction as codesift_app acting as the tenant, set as a client must under
    Citus: SET LOCAL, which Citus sends to the workers."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_app")
        with conn.transaction():
            conn.execute(
                sql.SQL("set local app.current_tenant_id = {}").format(sql.Literal(str(tenant_id)))
            )
            yield conn


def run_script(env: dict, *args: str, timeout: int = 1800) -> str:
    done = subprocess.run(
        [str(SCRIPT), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/citus.sh {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return done.stdout


@dataclass
class Cluster:
    env: dict
    dsn: str  # the coordinator, superuser

    def node_dsn(self, node: str) -> str:
        return run_script(self.env, "dsn", "postgres", node).strip()

    def worker_of(self, tenant_id: int) -> int:
        """The port of the worker holding the tenant's shards."""
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(
                "select n.nodeport from pg_dist_placement as p"
                " inner join pg_dist_node as n on p.groupid = n.groupid"
                " where p.shardid = get_shard_id_for_distribution_column('codesift.blobs', %s)",
                (tenant_id,),
            ).fetchone()[0]

    def move_tenant(self, tenant_id: int, to_port: int) -> None:
        """Move the tenant's shard group (every co-located table's shard) to another worker."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            shard, port = conn.execute(
                "select p.shardid, n.nodeport from pg_dist_placement as p"
                " inner join pg_dist_node as n on p.groupid = n.groupid"
                " where p.shardid = get_shard_id_for_distribution_column('codesift.blobs', %s)",
                (tenant_id,),
            ).fetchone()
            if port != to_port:
                conn.execute(
                    "select citus_move_shard_placement(%s, '127.0.0.1', %s, '127.0.0.1', %s,"
                    " shard_transfer_mode => 'block_writes')",
                    (shard, port, to_port),
                )


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[Cluster]:
    why = citus_available()
    if why:
        pytest.skip(why)
    base = Path(tempfile.mkdtemp(prefix="codesift-citus-"))  # not pytest's: see test_replica
    env = {
        "CODESIFT_CITUS_DIR": str(base / "cluster"),
        "CODESIFT_CITUS_PORT": str(COORDINATOR_PORT),
    }
    try:
        out = run_script(env, "start")
        dsn = re.search(r"^export CODESIFT_DSN='(.*)'$", out, re.M).group(1)
        yield Cluster(env, dsn)
    finally:
        subprocess.run([str(SCRIPT), "stop"], env={**os.environ, **env}, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def citus_repos() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="codesift-citus-repos-"))
    for name, files in TENANTS.values():
        make_git_repo(base / name, files)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def citus_indexed(citus_cluster, citus_repos) -> dict[str, int]:
    """Both tenants indexed into the cluster, each tenant's shards on a different worker."""
    ids = index_tenants(citus_cluster.dsn, citus_repos)
    with psycopg.connect(citus_cluster.dsn, autocommit=True) as conn:
        shard = "select get_shard_id_for_distribution_column('codesift.blobs', %s)"
        if (
            conn.execute(shard, (ids["express"],)).fetchone()
            == conn.execute(shard, (ids["requests"],)).fetchone()
        ):
            conn.execute(
                "select isolate_tenant_to_new_shard('codesift.blobs', %s, 'CASCADE',"
                " shard_transfer_mode => 'block_writes')",
                (ids["requests"],),
            )
    first = citus_cluster.worker_of(ids["express"])
    other = COORDINATOR_PORT + (2 if first == COORDINATOR_PORT + 1 else 1)
    citus_cluster.move_tenant(ids["requests"], other)
    return ids
