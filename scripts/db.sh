#!/usr/bin/env bash
# The embedded database: a project-local PostgreSQL cluster in .pgdata/,
# listening only on a unix socket in .pgdata/run, started as the postgres OS
# user when run as root (PostgreSQL refuses to run as root).
#
#   scripts/db.sh start   create (first time), start, migrate; prints export CODESIFT_DSN=... last
#   scripts/db.sh stop    stop it
#   scripts/db.sh dsn     print the DSN of the embedded cluster
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/packages.sh"
. /etc/os-release
pg=$(pg_major_for_debian "${VERSION_ID%%.*}") || pg=$(ls /usr/lib/postgresql | sort -n | tail -n1)
pg_bin=/usr/lib/postgresql/$pg/bin
base=$root/.pgdata
data=$base/data
run=$base/run
log=$base/server.log
port=54329
dbname=codesift
dsn="postgresql://postgres@/$dbname?host=$run&port=$port"

say() { printf '[db] %s\n' "$*" >&2; }
die() { printf 'codesift db: %s\n' "$*" >&2; exit 1; }

# Run a server binary as the cluster's owner.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- env PYTHONPATH="$root/plpython:$root/.server-python" HF_HUB_OFFLINE=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$@"
  else
    env PYTHONPATH="$root/plpython:$root/.server-python" HF_HUB_OFFLINE=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$@"
  fi
}

# As root the cluster belongs to the postgres user, which must be able to reach
# the project folder (for .pgdata/ and the PL/Python modules): grant traverse
# (o+x, not read) on any ancestor that lacks it.
grant_traverse() {
  local dir=$root
  while [ "$dir" != / ]; do
    if ! runuser -u postgres -- test -x "$dir"; then
      chmod o+x "$dir"
      say "granted traverse permission (o+x) on $dir so the postgres user can reach the project"
    fi
    dir=$(dirname "$dir")
  done
}

is_running() { [ -f "$data/postmaster.pid" ] && as_owner "$pg_bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

start() {
  [ -x "$pg_bin/pg_ctl" ] || die "PostgreSQL $pg is not installed: run 'make install' (scripts/install.sh)"
  if is_running; then
    say "already running ($data)"
    echo "export CODESIFT_DSN='$dsn'"
    return
  fi
  mkdir -p "$base"
  if [ "$(id -u)" -eq 0 ]; then
    grant_traverse
    chown postgres: "$base"
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    say "creating the cluster in $data"
    as_owner "$pg_bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
    cat >>"$data/postgresql.conf" <<EOF
# codesift embedded cluster: unix socket only
listen_addresses = ''
unix_socket_directories = '$run'
port = $port
shared_buffers = 512MB
maintenance_work_mem = 512MB
EOF
  fi
  as_owner mkdir -p "$run"
  say "starting PostgreSQL $pg (log: $log)"
  as_owner "$pg_bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null ||
    die "the server did not start; see $log"
  if ! "$pg_bin/psql" "postgresql://postgres@/postgres?host=$run&port=$port" -Atqc \
    "select 1 from pg_database where datname = '$dbname'" | grep -q 1; then
    "$pg_bin/createdb" -h "$run" -p "$port" -U postgres "$dbname"
  fi
  CODESIFT_DSN=$dsn "$root/.venv/bin/codesift" migrate >&2
  echo "export CODESIFT_DSN='$dsn'"
}

stop() {
  if is_running; then
    as_owner "$pg_bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    say "stopped"
  else
    say "not running"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  dsn) echo "$dsn" ;;
  *) die "usage: scripts/db.sh start|stop|dsn" ;;
esac
