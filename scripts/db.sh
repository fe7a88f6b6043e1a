#!/usr/bin/env bash
# The embedded database: a project-local PostgreSQL cluster in .pgdata/,
# listening only on a unix socket in .pgdata/run, started as the postgres OS
# user when run as root (PostgreSQL refuses to run as root), else as you.
#
#   scripts/db.sh start        create (first time), start, migrate; prints the DSNs of
#                              codesift's roles as comments, then export CODESIFT_DSN=... last
#   scripts/db.sh stop         stop it
#   scripts/db.sh dsn [ROLE]   print the DSN of the embedded cluster (default role: postgres)
#
# Who can connect: nobody but the cluster's owner and root can reach the socket
# (its folder is 0700, the socket 0700, no TCP listener). Over it, peer
# authentication maps those OS users (pg_ident.conf, map "codesift") to the
# roles codesift uses: postgres (superuser, migrate), codesift_app (the
# application role) and codesift_loader; every other role (e.g. a tenant's
# login role) must give its password (scram-sha-256). pg_hba.conf, pg_ident.conf
# and codesift.conf (included by postgresql.conf) are rewritten on every start,
# which also upgrades a cluster made by an older version of this script
# (trust authentication) in place.
#
# As root, the postgres user gets traverse rights on the folders above the
# cluster and the project, and read rights on plpython/ and .server-python/,
# through ACL entries for that user alone (setfacl; the acl package) where it
# lacks them; no folder's mode is changed.
#
# Environment: CODESIFT_DB_DIR (default: .pgdata in the project) and
# CODESIFT_DB_PORT (default: 54329) run another cluster, e.g. for a test.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
base=$(realpath -m "${CODESIFT_DB_DIR:-$root/.pgdata}")
data=$base/data
run=$base/run
log=$base/server.log
port=${CODESIFT_DB_PORT:-54329}
dbname=codesift
# The roles codesift connects as with peer authentication.
peer_roles="postgres codesift_app codesift_loader"
# PostgreSQL 16+: connections kept for codesift_app and codesift_loader (SERVICE_RESERVE
# in loader/codesift/tenants.py)
reserved_connections=10

say() { printf '[db] %s\n' "$*" >&2; }
die() { printf 'codesift db: %s\n' "$*" >&2; exit 1; }
. "$root/scripts/cluster.sh"

case "$port" in '' | *[!0-9]*) die "CODESIFT_DB_PORT must be a port number (got '$port')" ;; esac
dsn_for() { echo "postgresql://$1@/$dbname?host=$run&port=$port"; }
dsn=$(dsn_for postgres)

# The cluster's OS owner: whoever owns an existing data folder, else postgres
# when run as root, else the user running this.
if [ -d "$data" ]; then
  owner=$(stat -c %U "$data")
elif is_root; then
  owner=postgres
else
  owner=$me
fi

owned_what="the cluster in $data"

# As root, the owner (postgres) must reach the cluster's folder and read the
# project's PL/Python folders: grant exactly that to that user alone with ACL
# entries, only where it is missing. Never o+x.
grant_owner_access() {
  is_root && [ "$owner" != root ] || return 0
  local dir dirs=() seen=" "
  for dir in "$(dirname "$base")" "$root"; do
    while :; do
      case "$seen" in *" $dir "*) ;; *)
        seen="$seen$dir "
        dirs+=("$dir")
        ;;
      esac
      [ "$dir" = / ] && break
      dir=$(dirname "$dir")
    done
  done
  for dir in "${dirs[@]}"; do
    if ! runuser -u "$owner" -- test -x "$dir"; then
      need_setfacl
      setfacl -m "u:$owner:x" "$dir" ||
        die "could not give $owner traverse rights on $dir with an ACL (does this filesystem support ACLs?); move the project, or set CODESIFT_DB_DIR, where $owner can reach it"
      say "gave the OS user $owner traverse rights on $dir (ACL entry u:$owner:x; the folder's mode is unchanged)"
    fi
  done
  local folders=()
  for dir in "$root/plpython" "$root/.server-python"; do [ -d "$dir" ] && folders+=("$dir"); done
  [ ${#folders[@]} -gt 0 ] || return 0
  if [ -n "$(runuser -u "$owner" -- find "${folders[@]}" \( \( -type d \( ! -readable -o ! -executable \) \) \
    -o \( ! -type d ! -readable \) \) -print -quit 2>/dev/null)" ]; then
    need_setfacl
    setfacl -R -m "u:$owner:rX" "${folders[@]}"
    # and to what is added later (default ACL entries on the folders)
    find "${folders[@]}" -type d -exec setfacl -m "d:u:$owner:rX" {} +
    say "gave the OS user $owner read rights on ${folders[*]} (ACL entries u:$owner:rX)"
  fi
}

need_setfacl() {
  command -v setfacl >/dev/null ||
    die "setfacl is missing: install the acl package (apt-get install acl, or run scripts/install.sh)"
}

# Write file $1 with content $2 as the owner, mode 0600, when its content
# differs; sets config_changed=1 when it writes.
config_changed=0
write_owned() {
  local file=$1 new=$2
  if [ -f "$file" ] && [ "$(cat "$file")" = "$new" ]; then return 0; fi
  printf '%s\n' "$new" | as_owner sh -c 'umask 077; cat >"$1.codesift-new" && mv "$1.codesift-new" "$1"' sh "$file"
  config_changed=1
}

# pg_hba.conf, pg_ident.conf and codesift.conf (sets config_changed=1 when any changes).
configure() {
  local users=(root) u r ident
  [ "$owner" = root ] || users+=("$owner")
  if grep -Eq '^[[:space:]]*[^#[:space:]].*[[:space:]]trust([[:space:]]|$)' "$data/pg_hba.conf"; then
    say "upgrading this cluster's authentication in place: trust -> peer (map codesift) and scram-sha-256"
    warn_old_grants
  fi
  write_owned "$data/pg_hba.conf" "# Written by codesift's scripts/db.sh on every start: edits here are overwritten.
# Unix socket only (listen_addresses = ''), in a 0700 folder. The OS users of
# pg_ident.conf's map \"codesift\" connect as codesift's roles without a password;
# every other role must give its password.
# TYPE  DATABASE  USER  METHOD
local   all       ${peer_roles// /,}  peer map=codesift
# streaming to a hot standby on this machine (scripts/replica.sh), as postgres only
local   replication  postgres  peer map=codesift
local   all       all   scram-sha-256"
  ident="# Written by codesift's scripts/db.sh on every start: edits here are overwritten.
# MAPNAME  SYSTEM-USERNAME  PG-USERNAME"
  for u in "${users[@]}"; do
    for r in $peer_roles; do ident="$ident
codesift  $u  $r"; done
  done
  write_owned "$data/pg_ident.conf" "$ident"
  # PostgreSQL 16+: connections that only superusers, codesift_app and codesift_loader
  # (pg_use_reserved_connections, granted by the migration) may take, so that per-tenant
  # login roles never lock the services out; before 16 their limits leave that reserve
  local reserve=""
  [ "$pg" -lt 16 ] || reserve="
reserved_connections = $reserved_connections"
  write_owned "$data/codesift.conf" "# Written by codesift's scripts/db.sh on every start (included by postgresql.conf).
# The embedded cluster: a unix socket only, reachable by its owner only.
listen_addresses = ''
unix_socket_directories = '$run'
unix_socket_permissions = 0700
port = $port
password_encryption = 'scram-sha-256'
shared_buffers = 512MB
maintenance_work_mem = 512MB$reserve"
  if ! grep -qx "include_if_exists = 'codesift.conf'" "$data/postgresql.conf"; then
    printf '%s\n' "include_if_exists = 'codesift.conf'" | as_owner sh -c 'cat >>"$1"' sh "$data/postgresql.conf"
    config_changed=1
  fi
}

# Earlier versions of this script ran `chmod o+x` on the folders above the
# project that the postgres user could not traverse. Those folders now get an
# ACL entry for that user instead; say which ones look like such a grant
# (traversable but not readable by others) so their owner can take it back.
warn_old_grants() {
  is_root || return 0
  local dir=$root
  while [ "$dir" != / ]; do
    if [ "$(( 0$(stat -c %a "$dir") & 7 ))" -eq 1 ]; then
      need_setfacl
      setfacl -m "u:$owner:x" "$dir"
      say "note: $dir is traversable by every user (o+x), as an earlier version of this script may have made it; $owner now has its own ACL entry, so 'chmod o-x $dir' takes that grant back if it was not your choice"
    fi
    dir=$(dirname "$dir")
  done
}

# The socket folder and the cluster's folder: the owner's alone.
fix_permissions() {
  mkdir -p "$base"
  if is_root && [ "$owner" != root ]; then chown "$owner": "$base"; fi
  grant_owner_access
  as_owner chmod 0700 "$base"
  as_owner mkdir -p "$run"
  as_owner chmod 0700 "$run"
}

is_running() { running_in "$data"; }

psql_super() { "$pg_bin/psql" "$(dsn_for postgres | sed "s|/$dbname?|/${2:-postgres}?|")" -XAtqc "$1"; }

# The DSNs of the roles a user needs, as comments, then the export line.
print_dsns() {
  echo "# superuser (migrate; every codesift command works with it): $dsn"
  echo "# application role (row-level security: set app.current_tenant_id): $(dsn_for codesift_app)"
  if [ "$(psql_super "select 1 from pg_roles where rolname = 'codesift_loader'")" = 1 ]; then
    echo "# loader role: $(dsn_for codesift_loader)"
  fi
  echo "# (peer authentication: only $([ "$owner" = root ] || echo "$owner and ")root can connect as these roles; other roles need a password)"
  echo "export CODESIFT_DSN='$dsn'"
}

start() {
  [ -x "$pg_bin/pg_ctl" ] || die "PostgreSQL $pg is not installed: run 'make install' (scripts/install.sh)"
  fix_permissions
  if [ ! -f "$data/PG_VERSION" ]; then
    say "creating the cluster in $data"
    as_owner "$pg_bin/initdb" -D "$data" -U postgres --auth=reject -E UTF8 --no-locale >/dev/null
  fi
  configure
  if is_running; then
    if [ "$config_changed" = 1 ]; then
      as_owner "$pg_bin/pg_ctl" -D "$data" reload >/dev/null
      say "already running ($data): reloaded the new authentication settings"
      if [ "$(psql_super 'show unix_socket_permissions')" != 0700 ] ||
        { [ "$pg" -ge 16 ] && [ "$(psql_super 'show reserved_connections')" != "$reserved_connections" ]; } ||
        [ "$(psql_super 'show port')" != "$port" ]; then
        say "restart it to apply the socket and connection settings (scripts/db.sh stop; scripts/db.sh start); its socket folder is 0700 meanwhile"
      fi
    else
      say "already running ($data)"
    fi
    print_dsns
    return
  fi
  say "starting PostgreSQL $pg (log: $log)"
  as_owner "$pg_bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null ||
    die "the server did not start; see $log"
  if [ "$(psql_super "select 1 from pg_database where datname = '$dbname'")" != 1 ]; then
    psql_super "create database $dbname" >/dev/null
  fi
  CODESIFT_DSN=$dsn "$root/.venv/bin/codesift" migrate >&2
  print_dsns
}

stop() { stop_in "$data"; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  dsn) dsn_for "${2:-postgres}" ;;
  *) die "usage: scripts/db.sh start|stop|dsn [ROLE]" ;;
esac
