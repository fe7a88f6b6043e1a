# Sourced by scripts/db.sh, replica.sh and citus.sh once they have set root, say and die:
# the PostgreSQL binaries of this machine's Debian release, running them as a cluster's OS
# owner, and asking whether a cluster runs.
. "$root/scripts/packages.sh"
. /etc/os-release
pg=$(pg_major_for_debian "${VERSION_ID%%.*}") || pg=$(ls /usr/lib/postgresql | sort -n | tail -n1)
pg_bin=/usr/lib/postgresql/$pg/bin
me=$(id -un)
is_root() { [ "$(id -u)" -eq 0 ]; }

# Run a server binary as $owner (the cluster's OS owner), with the PL/Python folders the
# server imports from and the words of the array owner_env (VAR=value) in its environment;
# owned_what says whose cluster it is when neither that user nor root runs this.
owner_env=()
owned_what="the cluster"
as_owner() {
  local env=(env PYTHONPATH="$root/plpython:$root/.server-python" HF_HUB_OFFLINE=1
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 ${owner_env[@]+"${owner_env[@]}"})
  if [ "$me" = "$owner" ]; then
    "${env[@]}" "$@"
  elif is_root; then
    runuser -u "$owner" -- "${env[@]}" "$@"
  else
    die "$owned_what belongs to the OS user $owner: run this as $owner or as root"
  fi
}

# Whether the cluster in data folder $1 runs.
running_in() { [ -f "$1/postmaster.pid" ] && as_owner "$pg_bin/pg_ctl" -D "$1" status >/dev/null 2>&1; }

# Stop the cluster in data folder $1 if it runs, saying so.
stop_in() {
  if running_in "$1"; then
    as_owner "$pg_bin/pg_ctl" -D "$1" -m fast -w stop >/dev/null
    say "stopped"
  else
    say "not running"
  fi
}
