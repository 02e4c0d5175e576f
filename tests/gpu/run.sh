#!/usr/bin/env bash
# rgpu on a real GPU, in one bounded run (docs/testing.md, "On a GPU machine").
#
#   tests/gpu/run.sh --prepare [--build DIR]
#       here, after a build: collects what the GPU machine needs into
#       DIR/gpu-carry (rgpud, rgpu, librgpu.so, the test programs, and the
#       UCX and Cap'n Proto libraries they load), for the run tool's carry.
#   tests/gpu/run.sh [--device cuda|cpu] [--out DIR] [--carry DIR] [--build DIR]
#       the five steps, each with its own time limit: (1) rgpud on loopback,
#       (2) driver, runtime, library and sample programs, remote and local,
#       (3) PyTorch: a probe and the tests/pytorch suite, remote and local,
#       (4) the CNN training, remote and local, (5) rgpu-bench remote and local.
#       Writes OUT/summary.md, OUT/summary.json and OUT/logs.tar.gz; exits 0
#       only when every check passed (a check skipped on request, with
#       RGPU_GPU_TEST_TORCH=skip, does not fail the run), 1 otherwise.
#
# Results are compared, not only reported: each program's own checks; the
# PyTorch probe against PyTorch's CPU and, on a GPU, the remote run's results
# against the local run's; the CNN's losses remote against local (on the CPU
# device: against PyTorch's CPU), each within the tolerance stated below.
# TF32 is off everywhere (NVIDIA_TF32_OVERRIDE=0 for rgpud and every program,
# and PyTorch's allow_tf32 switches in the Python scripts).
#
# --device cpu (or RGPU_GPU_TEST_DEVICE=cpu) runs the same steps against
# rgpud --device cpu on a machine without a GPU, to check the script itself:
# comparisons with NVIDIA's driver are skipped, and PyTorch runs in the trixie
# root of scripts/torch-env.sh (root needed; RGPU_GPU_TEST_TORCH=skip skips it).
# OUT defaults to $OUT (the device machine's result folder), else
# BUILD/gpu-out. RGPU_GPU_TEST_UCX_TLS picks the transport (default
# posix,cma,tcp; tcp is used if a first client fails over it).
set -uo pipefail

# No TF32 anywhere: cuBLAS and cuDNN (rgpud's and the local programs') then
# compute float32 products in float32, and remote can be compared with local
# within float32's rounding.
export NVIDIA_TF32_OVERRIDE=0
# The tolerances the run judges by (|a - b| <= ATOL + RTOL * |b|):
# - the probe's results remote against local, on the same GPU with the same
#   libraries: the same computation, so only a different algorithm choice
#   may move the last bits;
probe_rtol=1e-5 probe_atol=1e-5
# - the CNN's per-step losses, remote against local (on the CPU device:
#   against PyTorch's CPU): float32 rounding in another order, grown over the
#   steps (measured: 1.3e-5 after 8 steps on the CPU device). TF32 alone would
#   move them by about 1e-3.
cnn_rtol="${RGPU_GPU_TEST_CNN_RTOL:-1e-4}"

self="$(readlink -f "${BASH_SOURCE[0]}")"
here="$(dirname "$self")"
repo="$(cd "$here/../.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
device="${RGPU_GPU_TEST_DEVICE:-cuda}"
out="${OUT:-}"
carry=""
prepare=0
while (($#)); do
  case "$1" in
    --prepare) prepare=1 ;;
    --device) device="${2:?--device wants cuda or cpu}"; shift ;;
    --out) out="${2:?--out wants a folder}"; shift ;;
    --build) build="${2:?--build wants a folder}"; shift ;;
    --carry) carry="${2:?--carry wants a folder}"; shift ;;
    -h | --help) sed -n '2,33p' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
carry="${carry:-$build/gpu-carry}"

# The programs step 2 runs; each prints "PASS <name>" (samples and libraries).
samples=(device_query vector_add matmul_tiled reduction scan histogram transpose streams_events
         pinned_async constant_memory templates dynamic_shared device_printf error_handling
         host_callbacks multithread_streams memcpy2d_pitch memset unified_addressing kernel_attributes)
libraries=(cublas_sgemm cublaslt_matmul)

if ((prepare)); then exec "$here/prepare.sh" "$build" "$carry"; fi

case "$device" in cuda | cpu) ;; *) echo "run.sh: --device must be cuda or cpu" >&2; exit 2 ;; esac
out="${out:-$build/gpu-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
logs="$out/logs"
rm -rf "$logs" "$out/summary.md" "$out/summary.json" "$out/logs.tar.gz"
mkdir -p "$logs"
results="$logs/results.jsonl"
# The CNN (step 4): 30 steps of batch 64 on a GPU; on the CPU device (the PTX
# interpreter runs PyTorch's convolution kernels) fewer and smaller ones. A
# second, shorter remote run gives the client's counters per step.
if [ "$device" = cuda ]; then cnn_steps=30 cnn_short=10 cnn_batch=64 cnn_limit=120
else cnn_steps=8 cnn_short=3 cnn_batch=16 cnn_limit=300
fi
cnn_steps="${RGPU_GPU_TEST_CNN_STEPS:-$cnn_steps}"
: >"$results"
started=$(date +%s)
# The whole run's budget (8 minutes on a GPU; the CPU device on a shared
# machine is slower); a step gets at most what is left minus the reserve kept
# for the summary.
budget="${RGPU_GPU_TEST_BUDGET:-$([ "$device" = cuda ] && echo 470 || echo 1800)}"
reserve=15

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
say() { echo "gpu-test: $*" | tee -a "$logs/run.log" >&2; }
elapsed() { echo $(($(date +%s) - started)); }
left() { echo $((budget - reserve - $(elapsed))); }

# record STEP NAME WHERE STATUS SECONDS [DETAIL]: one line of results.jsonl.
record() {
  python3 - "$@" >>"$results" <<'EOF'
import json, sys
a = sys.argv[1:] + [""] * 6
print(json.dumps({"step": a[0], "name": a[1], "where": a[2], "status": a[3],
                  "seconds": float(a[4] or 0), "detail": a[5][:400]}))
EOF
}

# bounded LIMIT LOG CMD...: CMD with its output in LOG, killed after LIMIT
# seconds (or when the run's budget is spent); returns its status (124: timed out).
bounded() {
  local limit="$1" log="$2"
  shift 2
  local rest
  rest=$(left)
  ((rest < limit)) && limit=$rest
  if ((limit < 5)); then
    echo "not run: the run's time budget is spent" >"$log"
    return 125
  fi
  # remote and local_run (below) are functions, which timeout cannot run.
  case "$1" in
    remote) shift; set -- "$carry/bin/rgpu" run --server "$server" -- "$@" ;;
    local_run) shift; set -- env -u LD_PRELOAD "LD_LIBRARY_PATH=$(local_libs)" "$@" ;;
  esac
  timeout -k 5 "$limit" "$@" >"$log" 2>&1
}

# status_of RC LOG NAME: pass when RC is 0, LOG has "PASS NAME" and no
# "FAIL NAME" line; prints pass, fail, timeout or not-run.
status_of() {
  local rc="$1" log="$2" name="$3"
  if ((rc == 124 || rc == 137)); then echo timeout
  elif ((rc == 125)); then echo not-run
  elif ((rc == 0)) && grep -q "PASS $name" "$log" && ! grep -q "FAIL $name" "$log"; then echo pass
  else echo fail
  fi
}

first_error() {  # the first line of LOG that says what went wrong, for the summary
  grep -m1 -iE "FAIL|error|not found|cannot|refused|Traceback|assert" "$1" 2>/dev/null | cut -c1-300
}

# --- the machine and the carried build ------------------------------------

rgpud_pid=""
server=""
cleanup() {
  if [ -n "$rgpud_pid" ]; then
    kill -TERM "$rgpud_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$rgpud_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$rgpud_pid" 2>/dev/null
    wait "$rgpud_pid" 2>/dev/null
    rgpud_pid=""
  fi
}

# NVIDIA's libraries on the GPU machine: the pip wheels' folders (those the
# local PyTorch uses), then the toolkit's. rgpud loads cuBLAS and the other
# remoted libraries from them; local runs find libcudart.so.13 there.
nvidia_lib_dirs() {
  local sp d dirs=()
  sp=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  for d in "$sp"/nvidia/cu13/lib "$sp"/nvidia/*/lib /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && compgen -G "$d/*.so*" >/dev/null && dirs+=("$d")
  done
  local IFS=:
  echo "${dirs[*]}"
}

preflight() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "device mode: $device"
    echo "host: $(uname -srm), $(nproc) cpus"
    grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null
    echo "carry: $carry"
    [ -f "$carry/MANIFEST.txt" ] && sed -n '1,5p' "$carry/MANIFEST.txt"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    command -v nvcc >/dev/null && nvcc --version | tail -1
    echo "python3: $(command -v python3) $(python3 --version 2>&1)"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    if [ "$device" = cuda ]; then
      # How pip's PyTorch finds NVIDIA's libraries (see soname_preload).
      local torch_lib
      torch_lib=$(python3 -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("torch").origin))' 2>/dev/null)/lib/libtorch_cuda.so
      echo "$torch_lib:"
      readelf -d "$torch_lib" 2>&1 | grep -E "RPATH|RUNPATH|NEEDED" | sed 's/^ *0x[0-9a-f]* *//'
    fi
  } >"$logs/machine.txt" 2>&1
  local t0=$(now) missing="" f
  for f in "$carry/bin/rgpud" "$carry/bin/rgpu" "$carry/lib/librgpu.so"; do
    if [ ! -e "$f" ]; then missing+="$f absent; "; continue; fi
    ldd "$f" >>"$logs/ldd.txt" 2>&1
    missing+=$(ldd "$f" 2>&1 | grep -E "not found" | sed "s|^|$(basename "$f"): |" | tr '\n' ';')
  done
  if [ -n "$missing" ]; then
    record 0 carried-libraries - fail $(since $t0) "$missing"
    return 1
  fi
  record 0 carried-libraries - pass $(since $t0) "every library of rgpud, rgpu and librgpu.so found"
}

# --- step 1: rgpud ----------------------------------------------------------

# start_server TLS: rgpud on a free loopback port; sets server and
# server_log (rgpud.log, then rgpud-2.log, ... for each restart).
server_starts=0
server_log=""
start_server() {
  local tls="$1" env=()
  cleanup
  server_starts=$((server_starts + 1))
  server_log="$logs/rgpud.log"
  ((server_starts > 1)) && server_log="$logs/rgpud-$server_starts.log"
  local log="$server_log"
  : >"$log"
  if [ "$device" = cuda ]; then
    env+=("LD_LIBRARY_PATH=$gpu_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  else
    env+=("RGPU_CPU_DEVICE_MEMORY=${RGPU_CPU_DEVICE_MEMORY:-4G}")
  fi
  env "${env[@]}" UCX_TLS="$tls" "$carry/bin/rgpud" --listen 127.0.0.1:0 --device "$device" \
    --log-level info >>"$log" 2>&1 &
  rgpud_pid=$!
  server=""
  for _ in $(seq 300); do
    server="$(sed -n 's/^rgpud listening on \([^ ]*\).*/\1/p' "$log")"
    [ -n "$server" ] && return 0
    kill -0 "$rgpud_pid" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

# Runners for bounded: "remote CMD..." is CMD under rgpu run against the
# server (rgpu's libraries first); "local_run CMD..." is CMD on NVIDIA's
# driver and libraries, without rgpu.
local_libs() { echo "$gpu_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }

step1() {
  local t0=$(now) tls="${RGPU_GPU_TEST_UCX_TLS:-posix,cma,tcp}" rc
  RGPU_AUTH_TOKEN="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
  export RGPU_AUTH_TOKEN
  unset RGPU_AUTH_TOKEN_FILE RGPU_TENANT RGPU_SERVER
  if ! start_server "$tls"; then
    record 1 rgpud - fail $(since $t0) "rgpud --device $device did not start: $(first_error "$server_log")"
    return 1
  fi
  # A first client decides the transport: shared memory may be refused in a VM.
  export UCX_TLS="$tls"
  bounded 60 "$logs/step1-first-client.log" remote "$carry/tests/samples/device_query"
  rc=$?
  if [ "$(status_of $rc "$logs/step1-first-client.log" device_query)" != pass ] && [ "$tls" != tcp ]; then
    say "a first client failed over UCX_TLS=$tls; trying tcp"
    tls=tcp
    export UCX_TLS=tcp
    start_server tcp || { record 1 rgpud - fail $(since $t0) "rgpud did not start over tcp"; return 1; }
    bounded 60 "$logs/step1-first-client.log" remote "$carry/tests/samples/device_query"
    rc=$?
  fi
  local st
  st=$(status_of $rc "$logs/step1-first-client.log" device_query)
  local dev
  dev=$(grep -m1 -iE "device 0|name" "$logs/step1-first-client.log" | cut -c1-120)
  record 1 rgpud - "$st" $(since $t0) "listening on $server, device $device, UCX_TLS=$UCX_TLS; first client: $dev"
  [ "$st" = pass ]
}

# --- step 2: driver, runtime, libraries, samples ----------------------------

# program NAME PASSNAME PATH [ARGS...]: remote, then local (cuda mode only).
program() {
  local name="$1" pass="$2" path="$3" t0 rc
  shift 3
  local limit=60
  [ "$device" = cpu ] && limit=120
  if [ ! -x "$path" ]; then
    record 2 "$name" remote fail 0 "not in the carried build ($path): prepare it again (run.sh --prepare)"
    return
  fi
  ensure_server 2
  t0=$(now)
  bounded $limit "$logs/step2-$name-remote.log" remote "$path" "$@"
  rc=$?
  record 2 "$name" remote "$(status_of $rc "$logs/step2-$name-remote.log" "$pass")" $(since $t0) \
    "$( ((rc == 0)) || first_error "$logs/step2-$name-remote.log")"
  if [ "$device" = cuda ]; then
    t0=$(now)
    bounded $limit "$logs/step2-$name-local.log" local_run "$path" "$@"
    rc=$?
    record 2 "$name" local "$(status_of $rc "$logs/step2-$name-local.log" "$pass")" $(since $t0) \
      "$( ((rc == 0)) || first_error "$logs/step2-$name-local.log")"
  fi
}

step2() {
  local t0=$(now) rc name where
  # The driver API tests (GoogleTest): pass when every test passed.
  for where in remote local; do
    [ "$where" = local ] && [ "$device" = cpu ] && continue
    ensure_server 2
    t0=$(now)
    local runner=remote
    [ "$where" = local ] && runner=local_run
    bounded 180 "$logs/step2-driver_e2e-$where.log" $runner "$carry/tests/driver_e2e_tests" \
      --gtest_output="json:$logs/step2-driver_e2e-$where.json"
    rc=$?
    local st=fail
    ((rc == 0)) && st=pass
    ((rc == 124 || rc == 137)) && st=timeout
    ((rc == 125)) && st=not-run
    record 2 driver_e2e "$where" $st $(since $t0) \
      "$(grep -E '^\[  (PASSED|FAILED)  \]' "$logs/step2-driver_e2e-$where.log" | tr '\n' ' ' | cut -c1-300)"
  done
  program nvrtc_jit nvrtc_jit "$carry/tests/rgpu_nvrtc_jit"
  for name in "${libraries[@]}"; do program "$name" "$name" "$carry/tests/$name"; done
  for name in "${samples[@]}"; do program "$name" "$name" "$carry/tests/samples/$name"; done
}

# --- steps 3 and 4: PyTorch -------------------------------------------------

# torch_remote LIMIT LOG CMD...: CMD (a python3 command line) with PyTorch
# under rgpu: the machine's python3 (cuda), or the trixie root (cpu).
torch_remote() {
  local limit="$1" log="$2"
  shift 2
  if [ "$device" = cuda ]; then
    bounded "$limit" "$log" env LD_PRELOAD="$(soname_preload)" "$carry/bin/rgpu" run --server "$server" -- "$@"
  else
    bounded "$limit" "$log" "$repo/scripts/torch-env.sh" run --server "$server" --build-dir "$build" -- "$@"
  fi
}

# pip's PyTorch finds NVIDIA's libraries in its wheels through the RPATH of
# libtorch_cuda.so, which the loader searches before LD_LIBRARY_PATH (where
# rgpu run puts lib/rgpu); only libcuda.so.1 would then be rgpu's. Preloading
# rgpu's sonames by bare name (found through LD_LIBRARY_PATH, so the loader
# records each name for librgpu.so) makes every name rgpu provides rgpu's.
# RGPU_GPU_TEST_PRELOAD_SONAMES=0 turns this off, to see what shadows what.
soname_preload() {
  [ "${RGPU_GPU_TEST_PRELOAD_SONAMES:-1}" = 0 ] && return
  local f names=()
  for f in "$carry"/lib/rgpu/*; do [ -L "$f" ] && names+=("$(basename "$f")"); done
  local IFS=:
  echo "${names[*]}"
}

# torch_missing: the status of a PyTorch step that cannot run: skip when
# RGPU_GPU_TEST_TORCH=skip asked for it, fail otherwise.
torch_missing() { [ "${RGPU_GPU_TEST_TORCH:-}" = skip ] && echo skip || echo fail; }

torch_ok=""  # asked once: importing torch takes seconds
torch_available() {
  if [ -z "$torch_ok" ]; then
    torch_ok=no
    if [ "${RGPU_GPU_TEST_TORCH:-}" = skip ]; then
      :
    elif [ "$device" = cpu ]; then
      [ "$(id -u)" -eq 0 ] && [ -x "$build/bin/rgpu" ] && torch_ok=yes
    else
      python3 -c 'import torch' 2>/dev/null && torch_ok=yes
    fi
  fi
  [ "$torch_ok" = yes ]
}

clamp() {  # clamp N LO HI
  local n="$1"
  ((n < $2)) && n=$2
  ((n > $3)) && n=$3
  echo "$n"
}

junit_counts() {  # junit_counts XML: "tests=N failures=N errors=N skipped=N"
  python3 - "$1" <<'EOF' 2>/dev/null || echo "no report"
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
print(" ".join("%s=%s" % (k, s.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")))
EOF
}

step3() {
  local t0 rc st
  if ! torch_available; then
    local why="python3 cannot import torch"
    [ "$device" = cpu ] && why="not root, or no build for scripts/torch-env.sh"
    [ "${RGPU_GPU_TEST_TORCH:-}" = skip ] && why="RGPU_GPU_TEST_TORCH=skip"
    record 3 pytorch - "$(torch_missing)" 0 "$why"
    return
  fi
  t0=$(now)
  # The probe judges its results against PyTorch's CPU itself (exit 1 when
  # one is outside its tolerance); on a GPU the remote results are then
  # judged against the local ones.
  torch_remote 120 "$logs/step3-probe-remote.log" python3 "$here/torch_probe.py" \
    --json "$logs/step3-probe-remote.json" --dump "$logs/step3-probe-remote"
  rc=$?
  st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
  record 3 probe remote $st $(since $t0) "$(probe_detail "$logs/step3-probe-remote.json" "$logs/step3-probe-remote.log")"
  if [ "$device" = cuda ]; then
    t0=$(now)
    bounded 60 "$logs/step3-probe-local.log" local_run python3 "$here/torch_probe.py" \
      --json "$logs/step3-probe-local.json" --dump "$logs/step3-probe-local"
    rc=$?
    st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
    record 3 probe local $st $(since $t0) "$(probe_detail "$logs/step3-probe-local.json" "$logs/step3-probe-local.log")"
    judge 3 probe-remote-vs-local arrays "$logs/step3-probe-remote" "$logs/step3-probe-local" \
      --rtol "$probe_rtol" --atol "$probe_atol"
  fi
  local pytest=(python3 -m pytest -p no:cacheprovider -q -rs -o faulthandler_timeout=60)
  # The suite runs take at most 200 s (remote) and 120 s (local), and leave
  # steps 4 and 5 two and a half minutes, then two.
  local limit
  limit=$(clamp $(($(left) - 150)) 30 200)
  t0=$(now)
  if [ "$device" = cuda ]; then
    (cd "$repo" && torch_remote $limit "$logs/step3-suite-remote.log" "${pytest[@]}" \
      --junitxml="$logs/step3-suite-remote.xml" tests/pytorch)
  else
    (cd "$repo" && bounded 300 "$logs/step3-suite-remote.log" "$repo/scripts/torch-env.sh" test \
      --server "$server" --build-dir "$build" && cp "$build/torch-env/pytorch-tests.xml" "$logs/step3-suite-remote.xml")
  fi
  rc=$?
  st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
  record 3 suite remote $st $(since $t0) "$(junit_counts "$logs/step3-suite-remote.xml")"
  if [ "$device" = cuda ]; then
    t0=$(now)
    limit=$(clamp $(($(left) - 120)) 30 120)
    (cd "$repo" && bounded $limit "$logs/step3-suite-local.log" local_run "${pytest[@]}" \
      --junitxml="$logs/step3-suite-local.xml" tests/pytorch)
    rc=$?
    st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
    record 3 suite local $st $(since $t0) "$(junit_counts "$logs/step3-suite-local.xml")"
  fi
}

# probe_detail JSON LOG: the probe's comparisons with the CPU, for the summary.
probe_detail() {
  python3 - "$1" <<'EOF' 2>/dev/null || tail -c 300 "$2" | tr '\n' ' '
import json, sys
p = json.load(open(sys.argv[1]))
parts = []
for c in ("matmul", "conv2d"):
    r = p.get(c) or {}
    if "error" in r:
        parts.append("%s: %s" % (c, r["error"]))
    elif r:
        parts.append("%s vs cpu: max abs diff %.3g (max |ref| %.3g, tolerance %g + %g*|ref|) %s" % (
            c, r["max_abs_diff"], r["max_ref"], r["atol"], r["rtol"], "ok" if r["ok"] else "OUTSIDE"))
print("; ".join(parts) or "cuda unavailable")
EOF
}

# judge STEP NAME compare.py-ARGS...: one check from tests/gpu/compare.py's
# verdict (pass when within tolerance), its line as the detail.
judge() {
  local step="$1" name="$2" t0 line rc
  shift 2
  t0=$(now)
  line=$(python3 "$here/compare.py" "$@" 2>&1)
  rc=$?
  record "$step" "$name" - "$( ((rc == 0)) && echo pass || echo fail)" $(since $t0) "$(echo "$line" | tail -n 3 | tr '\n' ' ')"
}

json_field() {  # json_field FILE KEY: a top-level field of a one-object JSON file
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null
}

step4() {
  local t0 rc st steps="$cnn_steps"
  if ! torch_available; then
    record 4 cnn - "$(torch_missing)" 0 "PyTorch not available (see step 3)"
    return
  fi
  local cnn="$here/cnn_train.py"
  # Remote: the full run, and a shorter one; the difference of their client
  # counters (RGPU_STATS) is what the extra steps cost in round trips and bytes.
  local n
  for n in "$steps" "$cnn_short"; do
    t0=$(now)
    rm -f "$logs/step4-stats-$n.jsonl"
    RGPU_STATS="$logs/step4-stats-$n.jsonl" torch_remote $cnn_limit "$logs/step4-cnn-remote-$n.log" \
      python3 "$cnn" --device cuda --steps "$n" --batch $cnn_batch --json "$logs/step4-cnn-remote-$n.json"
    rc=$?
    st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
    record 4 "cnn-$n-steps" remote $st $(since $t0) \
      "median step $(json_field "$logs/step4-cnn-remote-$n.json" step_ms_median) ms; cudnn $(json_field "$logs/step4-cnn-remote-$n.json" cudnn)"
    [ $st = pass ] || break
  done
  # Local: the same cuDNN setting as the remote run, for a like-for-like time.
  local mode=auto
  case "$(json_field "$logs/step4-cnn-remote-$steps.json" cudnn_enabled)" in
    True) mode=on ;;
    False) mode=off ;;
  esac
  t0=$(now)
  if [ "$device" = cuda ]; then
    bounded $cnn_limit "$logs/step4-cnn-local.log" local_run python3 "$cnn" --device cuda --steps "$steps" \
      --batch $cnn_batch --cudnn "$mode" --json "$logs/step4-cnn-local.json"
  else
    # No GPU here: PyTorch's CPU device is the reference for the losses.
    torch_remote $cnn_limit "$logs/step4-cnn-local.log" python3 "$cnn" --device cpu --steps "$steps" \
      --batch $cnn_batch --json "$logs/step4-cnn-local.json"
  fi
  rc=$?
  st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
  record 4 "cnn-$steps-steps" "$([ "$device" = cuda ] && echo local || echo cpu-reference)" $st $(since $t0) \
    "median step $(json_field "$logs/step4-cnn-local.json" step_ms_median) ms; cudnn $mode"
  # The losses, step by step, remote against the reference.
  judge 4 cnn-losses losses "$logs/step4-cnn-remote-$steps.json" "$logs/step4-cnn-local.json" --rtol "$cnn_rtol"
}

# --- step 5: rgpu-bench -----------------------------------------------------

step5() {
  local t0 rc st mode driver smoke=()
  if [ "$device" = cuda ]; then
    driver=libcuda.so.1
  else
    driver="$carry/lib/librgpu-cpudev.so"
    smoke=(--smoke)  # the PTX interpreter on a shared machine: sizes for seconds
  fi
  [ -n "${RGPU_GPU_TEST_BENCH_SMOKE:-}" ] && smoke=(--smoke)
  for mode in latency launch app bandwidth; do
    t0=$(now)
    bounded 90 "$logs/step5-$mode-remote.log" remote "$carry/bin/rgpu-bench" "$mode" "${smoke[@]}" \
      --json "$logs/step5-remote.jsonl"
    rc=$?
    st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
    record 5 "bench-$mode" remote $st $(since $t0) "$( ((rc == 0)) || first_error "$logs/step5-$mode-remote.log")"
    t0=$(now)
    bounded 90 "$logs/step5-$mode-local.log" local_run "$carry/bin/rgpu-bench" "$mode" "${smoke[@]}" \
      --driver "$driver" --json "$logs/step5-local.jsonl"
    rc=$?
    st=fail; ((rc == 0)) && st=pass; ((rc == 124)) && st=timeout
    record 5 "bench-$mode" local $st $(since $t0) "$( ((rc == 0)) || first_error "$logs/step5-$mode-local.log")"
  done
}

# --- the run ----------------------------------------------------------------

# The run's exit status: summary.py's, which is 0 only when every check of
# results.jsonl passed or was skipped on request (and there was at least one);
# a summary.py that fails for any other reason fails the run too.
run_status=1
interrupted=0
finish() {
  cleanup
  ((interrupted)) && record run interrupted - fail "$(elapsed)" "the run was stopped by a signal"
  python3 "$here/summary.py" --logs "$logs" --out "$out" --device "$device" \
    --seconds "$(elapsed)" --cnn-steps "$cnn_steps" --cnn-short "$cnn_short" >>"$logs/run.log" 2>&1
  run_status=$?
  case $run_status in
    0) say "every check passed" ;;
    1) say "FAILED: $(sed -n 's/^FAILED: //p' "$out/summary.md" 2>/dev/null | head -1)" ;;
    *) say "summary.py failed (status $run_status; see logs/run.log)"; run_status=1 ;;
  esac
  say "summary: $out/summary.md ($(elapsed) s)"
  tar -C "$out" -czf "$out/logs.tar.gz" logs 2>/dev/null
  # On the device machine only a few files come back: the logs travel in the tarball.
  [ -n "${OUT:-}" ] && [ "$out" = "$(cd "$OUT" 2>/dev/null && pwd)" ] && rm -rf "$logs"
}
trap 'finish; exit $run_status' EXIT
trap 'interrupted=1; exit 1' INT TERM

gpu_libs=""
[ "$device" = cuda ] && gpu_libs="$(nvidia_lib_dirs)"
echo "nvidia library folders: ${gpu_libs:-none}" >>"$logs/run.log"
# A program that crashed rgpud must not take the next ones with it (checked
# before each step and each program of step 2).
ensure_server() {
  kill -0 "$rgpud_pid" 2>/dev/null && return
  local t0
  t0=$(now)
  say "rgpud has exited (see $(basename "$server_log")); starting it again for step $1"
  if start_server "$UCX_TLS"; then
    record "$1" rgpud-restarted - fail $(since $t0) "rgpud had exited during the previous step ($(basename "$server_log") is the new log)"
  else
    record "$1" rgpud-restarted - fail $(since $t0) "rgpud had exited and did not start again"
  fi
}

if preflight && step1; then
  for s in 2 3 4 5; do
    say "step $s ($(elapsed) s so far)"
    ensure_server "$s"
    "step$s"
  done
else
  say "rgpud is not serving: steps 2 to 5 not run"
  for s in 2 3 4 5; do record "$s" all - not-run 0 "rgpud did not serve (step 1)"; done
fi
