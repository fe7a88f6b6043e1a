#!/usr/bin/env bash
# A hot-standby streaming replica of the embedded cluster (scripts/db.sh), on this
# machine: a base backup taken over the primary's unix socket, then streaming
# replication from it. The query functions run on it (they write nothing); indexing
# goes to the primary.
#
#   scripts/replica.sh start       create (first time: pg_basebackup) and start the standby;
#                                  prints export CODESIFT_READ_DSN=... last
#   scripts/replica.sh stop        stop it
#   scripts/replica.sh remove      stop it and delete its data folder
#   scripts/replica.sh dsn [ROLE]  its DSN (default role: postgres)
#
# Like the primary it listens only on a unix socket in a 0700 folder, owned by the
# primary's owner (postgres when run as root), with the same peer and scram-sha-256
# rules (its pg_hba.conf and pg_ident.conf are the primary's, copied by the backup).
# It streams as postgres over the primary's socket (pg_hba: local replication, peer).
#
# Environment: CODESIFT_DB_DIR / CODESIFT_DB_PORT (the primary, as scripts/db.sh),
# CODESIFT_REPLICA_DIR (default: .pgreplica in the project), CODESIFT_REPLICA_PORT
# (default 54330).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
primary_base=$(realpath -m "${CODESIFT_DB_DIR:-$root/.pgdata}")
primary_port=${CODESIFT_DB_PORT:-54329}
base=$(realpath -m "${CODESIFT_REPLICA_DIR:-$root/.pgreplica}")
data=$base/data
run=$base/run
port=${CODESIFT_REPLICA_PORT:-54330}
dbname=codesift

say() { printf '[replica] %s\n' "$*" >&2; }
die() { printf 'codesift replica: %s\n' "$*" >&2; exit 1; }
. "$root/scripts/cluster.sh"

case "$port" in '' | *[!0-9]*) die "CODESIFT_REPLICA_PORT must be a port number (got '$port')" ;; esac
[ "$base" != "$primary_base" ] || die "CODESIFT_REPLICA_DIR must differ from the primary's folder"

[ -d "$primary_base/data" ] || die "no embedded cluster in $primary_base: start it first (make db)"
owner=$(stat -c %U "$primary_base/data")

owned_what="the primary"

dsn_for() { echo "postgresql://$1@/$dbname?host=$run&port=$port"; }
is_running() { running_in "$data"; }

start() {
  "$pg_bin/pg_isready" -q -h "$primary_base/run" -p "$primary_port" ||
    die "the primary ($primary_base, port $primary_port) is not running: start it first (make db)"
  mkdir -p "$base"
  if is_root && [ "$owner" != root ]; then
    chown "$owner": "$base"
    local dir=$(dirname "$base")
    while [ "$dir" != / ]; do
      runuser -u "$owner" -- test -x "$dir" || setfacl -m "u:$owner:x" "$dir"
      dir=$(dirname "$dir")
    done
  fi
  as_owner chmod 0700 "$base"
  as_owner mkdir -p "$run"
  as_owner chmod 0700 "$run"
  if [ ! -f "$data/PG_VERSION" ]; then
    say "base backup of the primary into $data"
    as_owner "$pg_bin/pg_basebackup" -D "$data" -R -X stream -c fast \
      -d "host=$primary_base/run port=$primary_port user=postgres" ||
      die "pg_basebackup failed (was the primary started by this codesift's scripts/db.sh, which allows local replication for postgres?)"
  fi
  # The backup copied the primary's codesift.conf: this node's socket and port instead.
  printf '%s\n' "# Written by codesift's scripts/replica.sh on every start (included by postgresql.conf).
# A hot standby of $primary_base: a unix socket only, reachable by its owner only.
listen_addresses = ''
unix_socket_directories = '$run'
unix_socket_permissions = 0700
port = $port
hot_standby = on
# the primary keeps the rows the standby's queries read (no cancelled queries)
hot_standby_feedback = on
shared_buffers = 256MB" | as_owner sh -c 'umask 077; cat >"$1"' sh "$data/codesift.conf"
  if ! is_running; then
    say "starting the standby (log: $base/server.log)"
    as_owner "$pg_bin/pg_ctl" -D "$data" -l "$base/server.log" -w -t 120 start >/dev/null ||
      die "the standby did not start; see $base/server.log"
  fi
  [ "$("$pg_bin/psql" "$(dsn_for postgres)" -XAtqc 'select pg_is_in_recovery()')" = t ] ||
    die "$data is running but is not a standby"
  echo "# hot standby (read-only; the query functions run here): $(dsn_for codesift_app)"
  echo "export CODESIFT_READ_DSN='$(dsn_for postgres)'"
}

stop() { stop_in "$data"; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  remove) stop; rm -rf "$base"; say "removed $base" ;;
  dsn) dsn_for "${2:-postgres}" ;;
  -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
  *) die "usage: scripts/replica.sh start|stop|remove|dsn [ROLE] (--help)" ;;
esac
