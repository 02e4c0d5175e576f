#!/bin/bash
# `rgpu pool hold` and `rgpu pool slurm-licenses` without Slurm (the Slurm
# plugin's own test is tests/slurm): an rgpu-pool and a CPU-device rgpud
# with two 1 GiB slices on loopback.
#
#   tests/pool/pool_hold_test.sh BUILD_DIR
#
# hold: two leases for 512 MiB each; the protocol's lines (escaped values,
# multi-line tokens read back whole); both leases held until stdin closes,
# then released; bad input answered with an `error` line or usage and exit 2.
# slurm-licenses: the file written once and scontrol run once per change
# (a recording stand-in for scontrol), a failed reconfigure retried, bad
# options refused.
set -euo pipefail
build="$(readlink -f "$1")"
rgpu="$build/bin/rgpu"
work="$(mktemp -d /tmp/rgpu-pool-hold.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
. "$(dirname "$0")/pool_fixture.sh"
start_pool
start_cpu_server hold-cpu 2G

# --- hold ---
mkfifo "$work/in"
"$rgpu" pool hold --pool "$pool" --kind cpu --leases 2 --gpus 1 --mem 512M --program "hold test" <"$work/in" \
  >"$work/hold.out" 2>"$work/hold.err" &
holder=$!
exec 3>"$work/in"  # the holder's stdin, open until closed below
for _ in $(seq 300); do grep -qx ready "$work/hold.out" && break; sleep 0.1; done
grep -qx ready "$work/hold.out" || fail "no ready line: $(cat "$work/hold.out" "$work/hold.err")"
grep -q '^prepend LD_PRELOAD=.*librgpu\.so' "$work/hold.out" || fail "no preload line: $(cat "$work/hold.out")"
grep -q '^prepend LD_LIBRARY_PATH=.*/lib/rgpu$' "$work/hold.out" || fail "no library path line"
grep -qx "set RGPU_POOL=$pool" "$work/hold.out" || fail "RGPU_POOL is not passed on"
grep -qx "set RGPU_POOL_KIND=cpu" "$work/hold.out" || fail "RGPU_POOL_KIND is not passed on"
grep -qx "set RGPU_REQUEST=devices=1,mem=512M" "$work/hold.out" || fail "RGPU_REQUEST is not passed on"
for t in 0 1; do
  grep -q "^task $t RGPU_SERVER=127\.0\.0\.1:[0-9]*$" "$work/hold.out" || fail "task $t has no server"
  token="$(sed -n "s/^task $t RGPU_LEASE=//p" "$work/hold.out")"
  # One line on the wire, several once \n is read back, as the plugin does.
  [ "$(printf '%s' "$token" | grep -c .)" = 1 ] || fail "task $t's token spans lines on the wire"
  [ "$(printf '%b' "$token" | grep -c '^mac=')" = 1 ] || fail "task $t's token does not read back: $token"
done
[ "$(grep -c '^task [01] RGPU_LEASE=' "$work/hold.out")" = 2 ] || fail "not two leases"
[ "$(pool_leases)" = 2 ] || fail "the pool does not hold two leases: $(pool_leases)"
sleep 1.2  # a poll of the leases' state passes while they are held
[ "$(pool_leases)" = 2 ] || fail "the leases went before stdin closed"
exec 3>&-
for _ in $(seq 100); do kill -0 "$holder" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$holder" 2>/dev/null; then fail "the holder did not end when its stdin closed"; fi
wait "$holder" || fail "the holder exited with $?"
for _ in $(seq 100); do [ "$(pool_leases)" = 0 ] && break; sleep 0.1; done
[ "$(pool_leases)" = 0 ] || fail "the leases outlived the holder"
echo "ok: two leases held until stdin closed, then released"

# A lease the pool can never give: an error line naming why, exit 2.
set +e
out="$("$rgpu" pool hold --pool "$pool" --kind nvidia </dev/null)"
rc=$?
set -e
[ "$rc" = 2 ] || fail "an impossible request exited $rc"
echo "$out" | grep -q '^error .*no registered server could ever give' || fail "no reason: $out"
# Bad input.
for args in "--leases 0" "--leases 2000" "--leases x" "--mem lots" "--share 2" "--bogus 1" "--kind gpu"; do
  set +e
  # shellcheck disable=SC2086
  out="$("$rgpu" pool hold --pool "$pool" $args </dev/null 2>&1)"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "rgpu pool hold $args exited $rc: $out"
done
set +e
out="$(env -u RGPU_POOL "$rgpu" pool hold </dev/null)"
rc=$?
set -e
[ "$rc" = 2 ] && echo "$out" | grep -q '^error no pool' || fail "hold without a pool: $rc $out"
echo "ok: refusals and bad input"

# --- slurm-licenses ---
cat >"$work/scontrol" <<EOF
#!/bin/sh
echo "\$*" >>"$work/scontrol.calls"
[ ! -f "$work/scontrol.fail" ]
EOF
chmod +x "$work/scontrol"
lic() { "$rgpu" pool slurm-licenses --pool "$pool" --file "$work/lic.conf" --kind cpu --scontrol "$work/scontrol" "$@"; }
lic >/dev/null || fail "slurm-licenses failed"
[ "$(cat "$work/lic.conf")" = "Licenses=rgpu:1" ] || fail "the file says $(cat "$work/lic.conf")"
[ "$(cat "$work/scontrol.calls")" = "reconfigure" ] || fail "scontrol was not asked to reconfigure once"
lic >/dev/null || fail "slurm-licenses failed the second time"
[ "$(wc -l <"$work/scontrol.calls")" = 1 ] || fail "an unchanged count reconfigured Slurm again"
"$rgpu" pool slurm-licenses --pool "$pool" --file "$work/lic.conf" --kind nvidia --license gpus_r --scontrol "$work/scontrol" >/dev/null
[ "$(cat "$work/lic.conf")" = "Licenses=gpus_r:0" ] || fail "kind nvidia: the file says $(cat "$work/lic.conf")"
[ "$(wc -l <"$work/scontrol.calls")" = 2 ] || fail "a changed count did not reconfigure Slurm"
# A reconfigure that fails is an error, and is tried again on the next
# round although the file no longer changes.
touch "$work/scontrol.fail"
lic --every 1 >"$work/every.out" 2>"$work/every.err" &
every=$!
for _ in $(seq 50); do [ "$(wc -l <"$work/scontrol.calls")" -ge 4 ] && break; sleep 0.1; done
kill "$every"
wait "$every" || true
[ "$(wc -l <"$work/scontrol.calls")" -ge 4 ] || fail "a failed reconfigure was not retried: $(cat "$work/every.err")"
grep -q "reconfigure failed" "$work/every.err" || fail "a failed reconfigure was not reported"
rm "$work/scontrol.fail"
for args in "--license bad!name" "--every 0" "--kind gpu" "--file"; do
  set +e
  # shellcheck disable=SC2086
  out="$("$rgpu" pool slurm-licenses --pool "$pool" --file "$work/lic2.conf" $args 2>&1)"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "slurm-licenses $args exited $rc: $out"
done
[ ! -e "$work/lic2.conf" ] || fail "a refused run wrote its file"
echo "ok: slurm-licenses writes on change, reconfigures once per change, retries a failed reconfigure"
