# A pool on loopback for the shell tests (sourced): rgpu-pool and CPU-device
# rgpud registered with it, each started in the background with its log and
# pid file in $work. The sourcing script sets `build` and `work`, keeps a
# `pids` array (its cleanup kills them), and may define `fail MESSAGE`
# (otherwise a message and exit 1).

fixture_fail() {
  if declare -F fail >/dev/null; then fail "$@"; fi
  echo "FAIL: $*" >&2
  exit 1
}

# The first "PREFIX ADDR" line of a log, waited for (bounded: 30 s).
address_in() {
  local log="$1" prefix="$2" a=""
  for _ in $(seq 300); do
    a="$(sed -n "s/^$prefix \\([^ ]*\\).*/\\1/p" "$log" | head -n 1)"
    [ -n "$a" ] && { echo "$a"; return 0; }
    sleep 0.1
  done
  fixture_fail "no '$prefix' in $log: $(tail -n 20 "$log")"
}

# start_pool: rgpu-pool with a fresh pool key ($work/pool.key); sets `pool`
# to its address.
start_pool() {
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/pool.key"
  chmod 600 "$work/pool.key"
  "$build/bin/rgpu-pool" --listen 127.0.0.1:0 --key-file "$work/pool.key" >"$work/pool.log" 2>&1 &
  pids+=($!)
  echo $! >"$work/pool.pid"
  pool="$(address_in "$work/pool.log" "rgpu-pool listening on")"
}

# start_cpu_server ID MEMORY: an rgpud on the CPU device (one device of
# MEMORY) registered as ID, waited for until the pool lists it.
start_cpu_server() {
  local id="$1" memory="$2"
  UCX_TLS=tcp RGPU_CPU_DEVICE_MEMORY="$memory" RGPU_LOG_LEVEL=info "$build/bin/rgpud" --listen 127.0.0.1:0 \
    --device cpu --pool "$pool" --pool-key-file "$work/pool.key" --pool-id "$id" >"$work/rgpud-$id.log" 2>&1 &
  pids+=($!)
  echo $! >"$work/rgpud-$id.pid"
  address_in "$work/rgpud-$id.log" "rgpud listening on" >/dev/null
  for _ in $(seq 300); do
    "$build/bin/rgpu" pool status --pool "$pool" 2>/dev/null | grep -q "^  $id at " && return 0
    sleep 0.1
  done
  fixture_fail "rgpud $id did not register with the pool"
}

# The pool's count of leases.
pool_leases() { "$build/bin/rgpu" pool status --pool "$pool" | sed -n 's/^leases: //p'; }
