#!/bin/bash
# rgpu in a real Slurm (docs/slurm.md): munged, slurmctld and slurmd for one
# node on loopback, with their configuration in a temporary folder, beside
# an rgpu-pool and two CPU-device rgpud registered with it. The plugin
# (rgpu_spank.so) and job_submit.lua are loaded as a site would load them.
#
#   tests/slurm/slurm_test.sh BUILD_DIR
#
# Checks, each bounded:
#   1. `rgpu pool slurm-licenses` sets Slurm's rgpu license to the pool's 2
#      devices (through `scontrol reconfigure`).
#   2. `srun --rgpu=1` runs a driver API program (rgpu-doctor-probe, which
#      opens libcuda.so.1 by name) on a leased device: the task sees
#      RGPU_SERVER, its own RGPU_LEASE and RGPU_LEASE_PID, and the preload.
#   3. Three `--rgpu=1` batch jobs on the two devices: two run, the third
#      waits in Slurm's queue for the license; all three finish and each
#      one's step got a device.
#   4. A running job keeps its license across `scontrol reconfigure` (what
#      the license sync runs); scancel releases its lease within seconds.
#   5. A job asking more devices than the pool has is refused at
#      submission; one the pool can never place (kind nvidia) fails with the
#      pool's reason in its output; a malformed --rgpu is refused by srun.
# Needs root (slurmd) and Debian's slurm-wlm and munge: without them it is
# skipped (77), or fails when RGPU_TEST_STRICT=1 (CI).
set -euo pipefail
build="$(readlink -f "$1")"

skip() {
  echo "skipped: $*" >&2
  if [ "${RGPU_TEST_STRICT:-}" = 1 ]; then exit 1; fi
  exit 77
}
for tool in munged mungekey slurmctld slurmd srun sbatch scontrol squeue scancel; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install slurm-wlm munge)"
done
[ "$(id -u)" = 0 ] || skip "slurmd needs root"
[ -f "$build/lib/rgpu_spank.so" ] || skip "$build/lib/rgpu_spank.so was not built (libslurm-dev)"

work="$(mktemp -d /tmp/rgpu-slurm.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  set +e
  for f in slurmd slurmctld munged; do
    [ -f "$work/$f.pid" ] && kill "$(cat "$work/$f.pid")" 2>/dev/null
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  sleep 0.5
  [ -n "${RGPU_SLURM_TEST_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
# Slurm's daemons detach: should this script be killed (ctest's timeout),
# a watchdog stops them once it is gone.
script=$$
(
  while kill -0 "$script" 2>/dev/null; do sleep 1; done
  for f in "$work"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
) >/dev/null 2>&1 </dev/null &
disown

fail() {
  echo "FAIL: $*" >&2
  for f in slurmctld slurmd rgpud-slurm-a rgpud-slurm-b pool; do
    echo "--- $f.log (tail)" >&2
    tail -n 25 "$work/$f.log" >&2 2>/dev/null || true
  done
  exit 1
}

# Waits up to $1 tenths of a second for the command after it to succeed.
wait_for() {
  local tenths="$1"
  shift
  for _ in $(seq "$tenths"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# --- the pool and two CPU-device servers ---
. "$(dirname "$0")/../pool/pool_fixture.sh"
start_pool
start_cpu_server slurm-a 1G
start_cpu_server slurm-b 1G

# --- Slurm: munge, slurmctld, slurmd, the plugin and job_submit.lua ---
mkdir -p "$work/state" "$work/spool"
mungekey -c -k "$work/munge.key" -b 1024
chmod 600 "$work/munge.key"
munged --key-file="$work/munge.key" --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge.seed" --force
echo "Licenses=rgpu:0" >"$work/rgpu-licenses.conf"
cat >"$work/plugstack.conf" <<EOF
required $build/lib/rgpu_spank.so pool=$pool rgpu=$build/bin/rgpu timeout=60
EOF
cp "$(dirname "$0")/../../slurm/job_submit.lua" "$work/job_submit.lua"
node="rgpunode"
cat >"$work/slurm.conf" <<EOF
ClusterName=rgputest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobSubmitPlugins=lua
PlugStackConfig=$work/plugstack.conf
Include $work/rgpu-licenses.conf
NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=main Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
export SLURM_CONF="$work/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N "$node"
node_idle() { sinfo -h -o %t | grep -q idle; }
wait_for 300 node_idle || fail "the Slurm node did not come up"

# 1. The license follows the pool.
"$build/bin/rgpu" pool slurm-licenses --pool "$pool" --file "$work/rgpu-licenses.conf" --kind cpu ||
  fail "rgpu pool slurm-licenses failed"
grep -qx "Licenses=rgpu:2" "$work/rgpu-licenses.conf" || fail "the license file says $(cat "$work/rgpu-licenses.conf")"
two_licenses() { scontrol show lic rgpu | grep -q "Total=2"; }
wait_for 100 two_licenses || fail "slurmctld did not take the license count: $(scontrol show lic)"
echo "ok 1: Licenses=rgpu:2 from the pool's two CPU devices"

# 2. One step, one leased device, an unmodified driver API program.
out="$(UCX_TLS=tcp timeout 120 srun --rgpu=1,kind=cpu "$build/bin/rgpu-doctor-probe" --device 2>&1)" ||
  fail "srun --rgpu=1 rgpu-doctor-probe failed: $out"
echo "$out" | grep -qx $'init\tok' || fail "the probe did not initialise: $out"
[ "$(echo "$out" | grep -c $'^device\t')" = 1 ] || fail "the probe did not see one device: $out"
env_out="$(timeout 60 srun --rgpu=1,kind=cpu bash -c 'echo "pid=$$ lease_pid=$RGPU_LEASE_PID server=$RGPU_SERVER lease=${RGPU_LEASE:0:8} preload=$LD_PRELOAD"' 2>&1)" ||
  fail "srun --rgpu=1 bash failed: $env_out"
echo "$env_out" | grep -Eq '^pid=([0-9]+) lease_pid=\1 server=127\.0\.0\.1:[0-9]+ lease=.{8} preload=.*librgpu\.so' ||
  fail "the task's environment is not rgpu's: $env_out"
[ "$(pool_leases)" = 0 ] || fail "a lease outlived its step"
echo "ok 2: srun --rgpu=1 ran the probe on a leased device; the step's end released the lease"

# 3. Three jobs, two devices: one waits in Slurm's queue.
hold="$build/bin/pool_client"
jobs=()
for n in 1 2 3; do
  jobs+=("$(UCX_TLS=tcp sbatch --parsable --rgpu=1,kind=cpu -o "$work/job$n.out" \
    --wrap "srun bash -c 'exec $hold < <(sleep 4)'")")
done
license_wait() { squeue -h -j "${jobs[2]}" -o %r | grep -q Licenses ||
  squeue -h -j "${jobs[0]}" -o %r | grep -q Licenses; }
wait_for 100 license_wait || fail "no job waited for the rgpu license: $(squeue)"
running="$(squeue -h -t R -o %i | wc -l)"
[ "$running" -le 2 ] || fail "$running jobs ran at once on two devices"
all_done() { [ -z "$(squeue -h -o %i)" ]; }
wait_for 600 all_done || fail "the three jobs did not finish: $(squeue)"
for n in 1 2 3; do
  grep -q "ready count=1" "$work/job$n.out" && grep -q "^done" "$work/job$n.out" ||
    fail "job $n did not get its device: $(cat "$work/job$n.out")"
done
echo "ok 3: three --rgpu=1 jobs on two devices: one waited for the license (Reason=Licenses), all three ran"

# 4. scancel releases the lease.
job="$(UCX_TLS=tcp sbatch --parsable --rgpu=1,kind=cpu -o "$work/long.out" --wrap "srun bash -c 'exec $hold < <(sleep 300)'")"
one_lease() { [ "$(pool_leases)" = 1 ]; }
wait_for 300 one_lease || fail "the long job did not get its lease: $(cat "$work/long.out")"
# What the license sync does when the count changes: a running job keeps
# its license across it.
scontrol reconfigure
sleep 1
scontrol show lic rgpu | grep -q "Used=1" || fail "a reconfigure lost the running job's license: $(scontrol show lic)"
scancel "$job"
start=$(date +%s%N)
no_lease() { [ "$(pool_leases)" = 0 ]; }
wait_for 100 no_lease || fail "scancel did not release the lease within 10 s"
echo "ok 4: scancel released the lease in $((($(date +%s%N) - start) / 1000000)) ms"

# 5. Refusals.
if out="$(timeout 30 srun --rgpu=3,kind=cpu true 2>&1)"; then fail "--rgpu=3 on a 2-device pool ran: $out"; fi
echo "$out" | grep -qi "license" || fail "--rgpu=3 was refused without naming the license: $out"
if out="$(timeout 60 srun --rgpu=1,kind=nvidia true 2>&1)"; then fail "--rgpu=1,kind=nvidia ran on a CPU pool: $out"; fi
echo "$out" | grep -q "no registered server could ever give this request" ||
  fail "the pool's reason is not in the job's output: $out"
if out="$(timeout 30 srun --rgpu=two true 2>&1)"; then fail "--rgpu=two was accepted: $out"; fi
echo "$out" | grep -q "not a device count" || fail "--rgpu=two was refused without saying why: $out"
if out="$(timeout 30 srun --rgpu=1,mem=lots true 2>&1)"; then fail "--rgpu=1,mem=lots was accepted: $out"; fi
echo "$out" | grep -q "mem=lots" || fail "--rgpu=1,mem=lots was refused without naming it: $out"
echo "ok 5: refused: more devices than the pool has (at submission), a kind it lacks (the pool's reason), a bad option"
