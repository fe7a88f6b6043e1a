#!/usr/bin/env bash
# A local Citus cluster for codesift: a coordinator and workers on 127.0.0.1,
# each a PostgreSQL with Citus, pgvector, plpython3u and the server-side Python
# (PYTHONPATH as scripts/db.sh sets it), run by the postgres OS user when root.
#
#   scripts/citus.sh build        find Citus for the installed PostgreSQL, or build it
#                                 from CITUS_SOURCE (a source tarball; CITUS_PATCH, or a
#                                 *.patch beside it matching the PostgreSQL version, applied)
#   scripts/citus.sh start        build-or-find, create (first time) and start a coordinator
#                                 and CODESIFT_CITUS_WORKERS workers (default 2), register
#                                 them, `codesift migrate --citus`; prints export CODESIFT_DSN=...
#   scripts/citus.sh add-worker   start one more worker and register it (empty: no shards move)
#   scripts/citus.sh stop         stop every node
#   scripts/citus.sh dsn [ROLE] [NODE]   the DSN of a node (default: postgres on the coordinator)
#
# Authentication as in scripts/db.sh, never trust: over each node's unix socket
# (a 0700 folder) peer authentication maps root and the owner to codesift's
# roles; over TCP on 127.0.0.1 (how the nodes reach each other) every role must
# give its password (scram-sha-256). The nodes' own password for postgres,
# codesift_app and codesift_loader is generated at creation and kept in a
# 0600 passfile owned by the cluster's owner, which the servers read (PGPASSFILE).
#
# Environment: CODESIFT_CITUS_DIR (default: .citus in the project),
# CODESIFT_CITUS_PORT (default 55440: coordinator; workers 55441, 55442, ...).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/cluster.sh"
pg_config=$pg_bin/pg_config
[ -x "$pg_config" ] || pg_config=$(command -v pg_config || echo /usr/bin/pg_config)
base=$(realpath -m "${CODESIFT_CITUS_DIR:-$root/.citus}")
run=$base/run
passfile=$base/pgpass
port0=${CODESIFT_CITUS_PORT:-55440}
workers=${CODESIFT_CITUS_WORKERS:-2}
dbname=codesift
peer_roles="postgres codesift_app codesift_loader"

say() { printf '[citus] %s\n' "$*" >&2; }
die() { printf 'codesift citus: %s\n' "$*" >&2; exit 1; }

case "$port0" in '' | *[!0-9]*) die "CODESIFT_CITUS_PORT must be a port number (got '$port0')" ;; esac
case "$workers" in [1-9]) ;; *) die "CODESIFT_CITUS_WORKERS must be 1 to 9 (got '$workers')" ;; esac

if [ -d "$base/coordinator" ]; then owner=$(stat -c %U "$base/coordinator"); elif is_root; then owner=postgres; else owner=$me; fi

owner_env=(PGPASSFILE="$passfile")
owned_what="the cluster in $base"

# ---------------------------------------------------------------- build or find
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
marker=$sharedir/extension/citus.codesift-build

citus_installed() { [ -f "$pkglibdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ]; }

# The patch for this source: CITUS_PATCH, else a *-pg<major>*.patch beside the tarball.
citus_patch() {
  if [ -n "${CITUS_PATCH:-}" ]; then echo "$CITUS_PATCH"; return; fi
  local p
  for p in "$(dirname "$CITUS_SOURCE")"/*-pg"$pg".*.patch; do [ -f "$p" ] && echo "$p" && return; done
  return 0
}

# What a build from the given source would be: the checksums of tarball and patch.
build_id() {
  local patch
  patch=$(citus_patch)
  { sha256sum <"$CITUS_SOURCE"; [ -z "$patch" ] || sha256sum <"$patch"; } | awk '{print $1}' | paste -sd-
}

build() {
  if [ -z "${CITUS_SOURCE:-}" ]; then
    citus_installed && { say "using the installed Citus ($pkglibdir/citus.so)"; return 0; }
    die "Citus is not installed for PostgreSQL $pg and CITUS_SOURCE is not set.
  Install Citus from packages, or set CITUS_SOURCE=/path/to/citus-X.Y.Z.tar.gz (and CITUS_PATCH)."
  fi
  [ -f "$CITUS_SOURCE" ] || die "CITUS_SOURCE=$CITUS_SOURCE is not a file"
  # one build at a time (parallel test workers each start a cluster); the lock goes with
  # the descriptor
  local lock
  exec {lock}<"$sharedir/extension"
  flock "$lock"
  build_from_source
  exec {lock}<&-
}

build_from_source() {
  local want
  want=$(build_id)
  if citus_installed && { [ ! -f "$marker" ] || [ "$(cat "$marker")" = "$want" ]; }; then
    say "Citus already installed for PostgreSQL $pg$([ -f "$marker" ] && echo ' (built from this source)')"
    return 0
  fi
  is_root || die "building Citus installs it into $pkglibdir: run as root"
  local deps=(liblz4-dev libzstd-dev libssl-dev libkrb5-dev "postgresql-server-dev-$pg" build-essential) missing=() d
  for d in "${deps[@]}"; do dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed" || missing+=("$d"); done
  if [ ${#missing[@]} -gt 0 ]; then
    say "apt-get install ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  local work patch src
  work=$(mktemp -d)
  # a RETURN trap stays set after the function returns: it clears itself (set -u)
  trap 'rm -rf "$work"; trap - RETURN' RETURN
  tar xzf "$CITUS_SOURCE" -C "$work"
  src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)
  patch=$(citus_patch)
  if [ -n "$patch" ]; then say "applying $(basename "$patch")"; patch -s -d "$src" -p1 <"$patch"; fi
  say "building Citus from $(basename "$CITUS_SOURCE") for PostgreSQL $pg (a few minutes; log: $base/build.log)"
  mkdir -p "$base"
  (cd "$src" && ./configure --without-libcurl PG_CONFIG="$pg_config" && make -j"$(nproc)" && make install) \
    >"$base/build.log" 2>&1 || die "the Citus build failed; see $base/build.log"
  echo "$want" >"$marker"
  say "installed Citus into $pkglibdir"
}

# ---------------------------------------------------------------- nodes
node_names() { echo coordinator; local i; for i in $(seq 1 "$1"); do echo "worker$i"; done; }
node_port() { case "$1" in coordinator) echo "$port0" ;; worker*) echo $((port0 + ${1#worker})) ;; esac; }
dsn_for() { echo "postgresql://$1@/$dbname?host=$run&port=$(node_port "$2")"; }
psql_node() { "$pg_bin/psql" "$(dsn_for postgres "$1" | sed "s|/$dbname?|/${3:-$dbname}?|")" -XAtq -v ON_ERROR_STOP=1 -c "$2"; }
is_running() { running_in "$base/$1"; }

prepare_base() {
  mkdir -p "$base"
  if is_root && [ "$owner" != root ]; then
    chown "$owner": "$base"
    # the owner reaches the cluster and reads the project's PL/Python folders through
    # ACL entries for itself alone, as scripts/db.sh arranges it (never o+x)
    local dir start
    for start in "$(dirname "$base")" "$root"; do
      dir=$start
      while [ "$dir" != / ]; do
        runuser -u "$owner" -- test -x "$dir" || setfacl -m "u:$owner:x" "$dir"
        dir=$(dirname "$dir")
      done
    done
    for dir in "$root/plpython" "$root/.server-python"; do
      [ -d "$dir" ] && setfacl -R -m "u:$owner:rX" "$dir" && find "$dir" -type d -exec setfacl -m "d:u:$owner:rX" {} +
    done
  fi
  as_owner chmod 0700 "$base"
  as_owner mkdir -p "$run"
  as_owner chmod 0700 "$run"
  if [ ! -s "$passfile" ]; then
    local pw
    pw=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
    local r lines=""
    for r in $peer_roles; do lines="${lines}127.0.0.1:*:*:$r:$pw
"; done
    printf '%s' "$lines" | as_owner sh -c 'umask 077; cat >"$1"' sh "$passfile"
  fi
}

node_password() { as_owner sed -n 's/^127\.0\.0\.1:\*:\*:postgres:\(.*\)$/\1/p' "$passfile" | head -n1; }

configure_node() {
  local name=$1 data=$base/$1 users=(root) u r ident
  [ "$owner" = root ] || users+=("$owner")
  printf '%s\n' "# Written by codesift's scripts/citus.sh on every start.
# TYPE  DATABASE  USER  ADDRESS  METHOD
local   all       ${peer_roles// /,}  peer map=codesift
local   all       all   scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256" | as_owner sh -c 'umask 077; cat >"$1"' sh "$data/pg_hba.conf"
  ident="# MAPNAME  SYSTEM-USERNAME  PG-USERNAME"
  for u in "${users[@]}"; do for r in $peer_roles; do ident="$ident
codesift  $u  $r"; done; done
  printf '%s\n' "$ident" | as_owner sh -c 'umask 077; cat >"$1"' sh "$data/pg_ident.conf"
  printf '%s\n' "# Written by codesift's scripts/citus.sh on every start (included by postgresql.conf).
listen_addresses = '127.0.0.1'
unix_socket_directories = '$run'
unix_socket_permissions = 0700
port = $(node_port "$name")
password_encryption = 'scram-sha-256'
shared_preload_libraries = 'citus'
max_prepared_transactions = 100
wal_level = logical
shared_buffers = 128MB
maintenance_work_mem = 256MB
# Citus's connections to its own node (moves, reference table copies) use this address
citus.local_hostname = '127.0.0.1'
# codesift's trigger on blobs runs on the shards (extraction on the workers)
citus.enable_unsafe_triggers = on
# the tenant set with SET LOCAL reaches the workers (codesift sets it that way under Citus)
citus.propagate_set_commands = 'local'" | as_owner sh -c 'umask 077; cat >"$1"' sh "$data/codesift.conf"
  grep -qx "include_if_exists = 'codesift.conf'" "$data/postgresql.conf" ||
    printf '%s\n' "include_if_exists = 'codesift.conf'" | as_owner sh -c 'cat >>"$1"' sh "$data/postgresql.conf"
}

start_node() {
  local name=$1 data=$base/$1
  if [ ! -f "$data/PG_VERSION" ]; then
    say "creating $name in $data"
    as_owner "$pg_bin/initdb" -D "$data" -U postgres --auth=reject -E UTF8 --no-locale >/dev/null
  fi
  configure_node "$name"
  if ! is_running "$name"; then
    as_owner "$pg_bin/pg_ctl" -D "$data" -l "$base/$name.log" -w -t 60 start >/dev/null ||
      die "$name did not start; see $base/$name.log"
  fi
  if [ "$(psql_node "$name" "select 1 from pg_database where datname = '$dbname'" postgres)" != 1 ]; then
    psql_node "$name" "create database $dbname" postgres >/dev/null
  fi
  psql_node "$name" "alter role postgres password '$(node_password)'" >/dev/null
  # a new node gets its extensions before it joins (afterwards Citus owns their DDL)
  if [ "$(psql_node "$name" "select count(*) from pg_extension where extname = 'citus'")" = 0 ]; then
    psql_node "$name" "create extension citus; create extension if not exists vector;
      create extension if not exists plpython3u" >/dev/null
  fi
}

register_worker() {
  local port
  port=$(node_port "$1")
  if [ "$(psql_node coordinator "select count(*) from pg_dist_node where nodeport = $port")" = 0 ]; then
    psql_node coordinator "select citus_add_node('127.0.0.1', $port)" >/dev/null
    say "registered $1 (127.0.0.1:$port)"
  fi
}

# codesift_app and codesift_loader (made by the migrations) get the nodes' password on every node.
set_role_passwords() {
  local name pw r
  pw=$(node_password)
  for name in $(node_names "$(count_workers)"); do
    for r in codesift_app codesift_loader; do
      psql_node "$name" "set citus.enable_alter_role_propagation = off;
        do \$\$ begin if exists (select from pg_roles where rolname = '$r') then
          alter role $r password '$pw'; end if; end \$\$" >/dev/null
    done
  done
}

count_workers() {
  local n=0
  while [ -f "$base/worker$((n + 1))/PG_VERSION" ]; do n=$((n + 1)); done
  [ "$n" -ge "$workers" ] || n=$workers
  echo "$n"
}

start() {
  build
  [ -x "$pg_bin/pg_ctl" ] || die "PostgreSQL $pg is not installed: run 'make install'"
  prepare_base
  local n name
  n=$(count_workers)
  for name in $(node_names "$n"); do start_node "$name"; done
  psql_node coordinator "select citus_set_coordinator_host('127.0.0.1', $port0)" >/dev/null
  for name in $(node_names "$n"); do [ "$name" = coordinator ] || register_worker "$name"; done
  CODESIFT_DSN=$(dsn_for postgres coordinator) "$root/.venv/bin/codesift" migrate --citus >&2
  set_role_passwords
  echo "# Citus coordinator (superuser): $(dsn_for postgres coordinator)"
  echo "# application role: $(dsn_for codesift_app coordinator)"
  echo "export CODESIFT_DSN='$(dsn_for postgres coordinator)'"
}

add_worker() {
  is_running coordinator || die "the coordinator is not running: scripts/citus.sh start first"
  prepare_base
  local n=$(($(count_workers) + 1))
  start_node "worker$n"
  register_worker "worker$n"
  # the reference tables (codesift's tenants, settings, ...) get a copy there now, so that
  # shards can be moved to it at once
  psql_node coordinator "select replicate_reference_tables('block_writes')" >/dev/null
  set_role_passwords
  echo "worker$n 127.0.0.1:$(node_port "worker$n")"
}

stop() {
  local name
  for name in $(node_names "$(count_workers)"); do
    if [ -d "$base/$name" ] && is_running "$name"; then
      as_owner "$pg_bin/pg_ctl" -D "$base/$name" -m fast -w stop >/dev/null
      say "stopped $name"
    fi
  done
}

case "${1:-}" in
  build) build ;;
  start) start ;;
  add-worker) add_worker ;;
  stop) stop ;;
  dsn) dsn_for "${2:-postgres}" "${3:-coordinator}" ;;
  -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
  *) die "usage: scripts/citus.sh build|start|add-worker|stop|dsn [ROLE] [NODE] (--help)" ;;
esac
