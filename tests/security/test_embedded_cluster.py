"""The embedded cluster (scripts/db.sh) is private to the OS user that runs it.

Attacks tried here, as another local OS user would: connect to the embedded
cluster's socket as `nobody` (as postgres, codesift_app and codesift_loader),
and connect as a role that has a password without giving it. The cluster's
own settings are read back from the server: no `trust` rule, no TCP listener,
socket folder and socket 0700, peer authentication mapped only to codesift's
roles. A fresh cluster in a 0700/0750 folder tree shows that the postgres user
gets in through ACL entries for itself alone (no folder's mode gains o+x), and
that a cluster with the old `trust` pg_hba.conf is upgraded in place, running
or stopped.
"""

import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from codesift.db import current_dsn
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parents[2]
DB_SH = ROOT / "scripts" / "db.sh"
PEER_ROLES = ("postgres", "codesift_app", "codesift_loader")
SERVER = conninfo_to_dict(current_dsn())
IS_ROOT = os.geteuid() == 0
SBIN_PATH = f"{os.environ.get('PATH', '/usr/bin:/bin')}:/usr/sbin:/sbin"
RUNUSER = shutil.which("runuser", path=SBIN_PATH) or "runuser"
needs_root = pytest.mark.skipif(
    not IS_ROOT,
    reason="runs psql as the OS user nobody and a cluster as the postgres user: needs root "
    "(make test runs as root in CI)",
)

# What pg_hba.conf looked like before: scripts/db.sh ran initdb --auth=trust.
OLD_TRUST_HBA = """\
local   all             all                                     trust
host    all             all             127.0.0.1/32            trust
host    all             all             ::1/128                 trust
local   replication     all                                     trust
"""


def _psql() -> str:
    found = shutil.which("psql")
    if found:
        return found
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/psql"), key=lambda p: int(p.parts[-3])
    )
    if not versions:
        pytest.skip("psql is not installed")
    return str(versions[-1])


def _as_nobody(conninfo: str, *, password: str | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/", "PGCONNECT_TIMEOUT": "5"}
    if password:
        env["PGPASSWORD"] = password
    return subprocess.run(
        [RUNUSER, "-u", "nobody", "--", _psql(), conninfo, "-XAtqc", "select current_user"],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        timeout=30,
    )


def _refused(result: subprocess.CompletedProcess) -> bool:
    err = result.stderr
    return result.returncode != 0 and (
        "Permission denied" in err
        or "authentication failed" in err
        or "no password supplied" in err
        or "No such file or directory" in err
    )


# ---------------------------------------------------------------- the live cluster


@pytest.fixture(scope="module")
def cluster() -> dict:
    """The embedded cluster that CODESIFT_DSN names, with its settings read back."""
    host = SERVER.get("host", "")
    if not host.startswith("/"):
        pytest.skip(
            f"CODESIFT_DSN names a server over TCP ({host or 'localhost'}), "
            "not the embedded cluster"
        )
    with psycopg.connect(current_dsn(), autocommit=True) as conn:
        settings = dict(
            conn.execute(
                "select name, setting from pg_settings where name = any(%s)",
                (
                    [
                        "data_directory",
                        "hba_file",
                        "ident_file",
                        "listen_addresses",
                        "unix_socket_directories",
                        "unix_socket_permissions",
                        "port",
                    ],
                ),
            ).fetchall()
        )
        if Path(settings["data_directory"]) != Path(host).parent / "data":
            pytest.skip(
                f"CODESIFT_DSN names a local server that scripts/db.sh did not make ({host})"
            )
        rules = conn.execute(
            "select line_number, type, database, user_name, address, auth_method, options, error"
            " from pg_hba_file_rules order by line_number"
        ).fetchall()
        idents = conn.execute(
            "select map_name, sys_name, pg_username, error from pg_ident_file_mappings"
        ).fetchall()
        hba_text = conn.execute("select pg_read_file(%s)", (settings["hba_file"],)).fetchone()[0]
    return {
        "host": host,
        "port": SERVER.get("port", "5432"),
        "settings": settings,
        "rules": rules,
        "idents": idents,
        "hba_text": hba_text,
    }


def test_no_trust_rule_and_no_tcp(cluster):
    rules = cluster["rules"]
    assert rules, "pg_hba_file_rules is empty"
    assert [r for r in rules if r[7]] == [], "pg_hba.conf has lines the server cannot parse"
    assert [r for r in rules if r[5] == "trust"] == []
    assert {r[1] for r in rules} == {"local"}, "only unix-socket rules are expected"
    assert cluster["settings"]["listen_addresses"] == ""
    # The peer rule names codesift's roles; every other role authenticates by password.
    peer = [r for r in rules if r[5] == "peer"]
    assert peer and all(r[6] == ["map=codesift"] for r in peer)
    assert all(set(r[3]) <= set(PEER_ROLES) for r in peer)
    assert rules[-1][3] == ["all"] and rules[-1][5] == "scram-sha-256"
    # And the file itself: no trust line anywhere (comments aside).
    lines = [
        ln.split()
        for ln in cluster["hba_text"].splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    assert lines and all("trust" not in ln for ln in lines)


def test_peer_map_names_only_codesifts_roles_and_the_owner(cluster):
    owner = pwd.getpwuid(os.stat(cluster["host"]).st_uid).pw_name
    idents = cluster["idents"]
    assert idents and [i for i in idents if i[3]] == []
    assert {i[0] for i in idents} == {"codesift"}
    assert {i[2] for i in idents} <= set(PEER_ROLES)
    assert {i[1] for i in idents} <= {"root", owner}


def test_socket_folder_and_socket_are_the_owners_alone(cluster):
    settings = cluster["settings"]
    assert settings["unix_socket_permissions"] == "0700"
    assert settings["unix_socket_directories"] == cluster["host"]
    folder = os.stat(cluster["host"])
    assert stat.S_IMODE(folder.st_mode) == 0o700, oct(folder.st_mode)
    sock = os.stat(Path(cluster["host"]) / f".s.PGSQL.{cluster['port']}")
    assert stat.S_ISSOCK(sock.st_mode)
    assert stat.S_IMODE(sock.st_mode) & 0o077 == 0, oct(sock.st_mode)
    assert sock.st_uid == folder.st_uid
    # The cluster's folder (data, log, socket) is private too.
    base = Path(cluster["host"]).parent
    assert stat.S_IMODE(os.stat(base).st_mode) & 0o077 == 0
    assert stat.S_IMODE(os.stat(cluster["settings"]["data_directory"]).st_mode) & 0o077 == 0


@needs_root
@pytest.mark.parametrize("role", PEER_ROLES)
def test_nobody_is_refused(cluster, role):
    for dbname in ("codesift", "postgres"):
        conninfo = make_conninfo(
            host=cluster["host"], port=cluster["port"], user=role, dbname=dbname
        )
        result = _as_nobody(conninfo)
        assert _refused(result), (result.returncode, result.stdout, result.stderr)
        assert result.stdout.strip() == ""


def test_a_role_with_a_password_must_give_it(cluster):
    role = f"cs_sec_{uuid.uuid4().hex[:10]}"
    password = uuid.uuid4().hex
    with psycopg.connect(current_dsn(), autocommit=True) as conn:
        conn.execute(f"create role {role} login password '{password}'")
    try:
        params = {
            "host": cluster["host"],
            "port": cluster["port"],
            "dbname": "postgres",
            "user": role,
        }
        with psycopg.connect(**params, password=password) as conn:
            assert conn.execute("select current_user").fetchone()[0] == role
        with pytest.raises(
            psycopg.OperationalError, match="no password supplied|password authentication failed"
        ):
            psycopg.connect(**params, password="", connect_timeout=5)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(**params, password="wrong", connect_timeout=5)
    finally:
        with psycopg.connect(current_dsn(), autocommit=True) as conn:
            conn.execute(f"drop role if exists {role}")


# ---------------------------------------------------------------- a fresh cluster


def _ancestors(path: Path) -> list[Path]:
    return [path, *path.parents]


def _db_sh(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(DB_SH), *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def _getfacl(path: Path) -> str:
    return subprocess.run(
        ["getfacl", "-cp", str(path)], capture_output=True, text=True, check=True
    ).stdout


@needs_root
@pytest.mark.skipif(
    shutil.which("setfacl") is None, reason="setfacl is missing: make install adds the acl package"
)
def test_fresh_cluster_in_private_folders():
    top = Path(tempfile.mkdtemp(prefix="cs-sec-"))  # 0700, like a home folder
    nested = top / "nested"
    nested.mkdir(mode=0o750)
    os.chmod(nested, 0o750)
    base = nested / "db"
    port = str(55000 + os.getpid() % 4000)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODESIFT_", "PG"))}
    env.update(CODESIFT_DB_DIR=str(base), CODESIFT_DB_PORT=port, PATH=SBIN_PATH)
    watched = sorted(set(_ancestors(nested)) | set(_ancestors(ROOT)))
    other_bits = {p: os.stat(p).st_mode & 0o007 for p in watched}
    try:
        started = _db_sh(env, "start")
        assert started.returncode == 0, started.stderr
        out = started.stdout.strip().splitlines()
        dsn = f"postgresql://postgres@/codesift?host={base / 'run'}&port={port}"
        assert out[-1] == f"export CODESIFT_DSN='{dsn}'"
        comments = "\n".join(out[:-1])
        assert all(line.startswith("#") for line in out[:-1])
        assert f"postgresql://codesift_app@/codesift?host={base / 'run'}&port={port}" in comments

        # No folder's mode changed for others (o+x): postgres has its own ACL entry.
        assert {p: os.stat(p).st_mode & 0o007 for p in watched} == other_bits
        for folder in (top, nested):
            assert "user:postgres:--x" in _getfacl(folder)
            assert os.stat(folder).st_mode & 0o007 == 0
        for folder in (base, base / "run", base / "data"):
            assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder

        # The peer-mapped roles work for root; nobody is refused; PL/Python reads plpython/.
        for role in PEER_ROLES:
            with psycopg.connect(
                host=str(base / "run"), port=port, dbname="codesift", user=role
            ) as conn:
                assert conn.execute("select current_user").fetchone()[0] == role
            result = _as_nobody(
                make_conninfo(host=str(base / "run"), port=port, user=role, dbname="codesift")
            )
            assert _refused(result), result.stderr
        with psycopg.connect(dsn) as conn:
            assert (
                conn.execute(
                    "select array_length(codesift.embed_query('hello')::real[], 1)"
                ).fetchone()[0]
                > 0
            )
            assert "trust" not in {
                r[0] for r in conn.execute("select auth_method from pg_hba_file_rules")
            }

        # Upgrade in place, running: an old trust pg_hba.conf is rewritten and reloaded.
        # A role with a password shows which rules the server has loaded.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("create role cs_sec_probe login password 'secret'")
        probe = {
            "host": str(base / "run"),
            "port": port,
            "dbname": "postgres",
            "user": "cs_sec_probe",
        }
        hba = base / "data" / "pg_hba.conf"
        _write_as_postgres(hba, OLD_TRUST_HBA)
        subprocess.run(
            [RUNUSER, "-u", "postgres", "--", _pg_ctl(base), "-D", str(base / "data"), "reload"],
            check=True,
            capture_output=True,
        )
        assert _connects_without_password(probe, expect=True)
        again = _db_sh(env, "start")
        assert again.returncode == 0, again.stderr
        assert "upgrading this cluster's authentication" in again.stderr
        assert _no_trust_line(hba)
        assert not _connects_without_password(probe, expect=False)

        # Upgrade in place, stopped: the same at the next start.
        assert _db_sh(env, "stop").returncode == 0
        _write_as_postgres(hba, OLD_TRUST_HBA)
        again = _db_sh(env, "start")
        assert again.returncode == 0, again.stderr
        assert "upgrading this cluster's authentication" in again.stderr
        assert _no_trust_line(hba)
        assert not _connects_without_password(probe, expect=False)
    finally:
        _db_sh(env, "stop")
        shutil.rmtree(top, ignore_errors=True)


def _pg_ctl(base: Path) -> str:
    version = (base / "data" / "PG_VERSION").read_text().strip()
    return f"/usr/lib/postgresql/{version}/bin/pg_ctl"


def _write_as_postgres(path: Path, text: str) -> None:
    path.write_text(text)
    pw = pwd.getpwnam("postgres")
    os.chown(path, pw.pw_uid, pw.pw_gid)
    os.chmod(path, 0o600)


def _no_trust_line(hba: Path) -> bool:
    lines = [
        ln for ln in hba.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
    return bool(lines) and all("trust" not in ln.split() for ln in lines)


def _connects_without_password(params: dict, *, expect: bool) -> bool:
    """Whether the role connects without a password, waiting up to 10 s for a
    reload to reach that state (`expect`)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            psycopg.connect(**params, password="", connect_timeout=5).close()
            connected = True
        except psycopg.OperationalError:
            connected = False
        if connected == expect or time.monotonic() > deadline:
            return connected
        time.sleep(0.1)


# ---------------------------------------------------------------- the server's packages

REQUIREMENTS = ROOT / "requirements"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name, version = line.split("==")
            pins[_norm(re.sub(r"\[.*\]", "", name))] = version.strip()
    return pins


def _locked(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) from a pip-compile --generate-hashes file."""
    locked: dict[str, tuple[str, int]] = {}
    name = None
    for line in path.read_text().splitlines():
        pin = re.match(r"^([A-Za-z0-9._-]+)(\[[^\]]*\])?==(\S+)", line)
        if pin:
            name = _norm(pin.group(1))
            locked[name] = (pin.group(3), 0)
        elif name and line.strip().startswith("--hash=sha256:"):
            version, count = locked[name]
            locked[name] = (version, count + 1)
        elif not line.startswith(" "):
            name = None
    return locked


@pytest.mark.parametrize(
    ("lock", "sources"),
    [
        ("server.lock", ("server.txt", "model.txt")),
        ("docker-migrate.lock", ("docker-migrate.txt",)),
        ("installer.lock", ("installer.txt",)),  # uv, which installs the others
    ],
)
def test_server_packages_are_locked_with_hashes(lock, sources):
    locked = _locked(REQUIREMENTS / lock)
    assert locked
    assert {n for n, (_, hashes) in locked.items() if hashes == 0} == set()
    for source in sources:
        for name, version in _pins(REQUIREMENTS / source).items():
            assert locked.get(name, (None,))[0] == version, (
                f"{name}=={version} ({source}) in {lock}"
            )


def test_the_server_python_folder_holds_only_locked_packages():
    folder = ROOT / ".server-python"
    if not folder.is_dir():
        pytest.skip(".server-python/ is not installed (make install)")
    locked = _locked(REQUIREMENTS / "server.lock")
    installed = {}
    for info in folder.glob("*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        installed[_norm(name)] = version
    assert installed
    assert {n: v for n, v in installed.items() if locked.get(n, (None,))[0] != v} == {}
