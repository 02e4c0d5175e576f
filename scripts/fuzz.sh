#!/usr/bin/env bash
# Runs every fuzz target (the ctest entries of label "fuzz") for a given time
# or number of executions, each with a corpus kept between runs, and reports
# executions, new inputs and failures per target. See docs/testing.md,
# "Fuzz targets".
#
#   scripts/fuzz.sh [--seconds S | --runs N] [--corpus DIR] [--seed N] [-R REGEX]
#
#   --seconds S   time per target (default 60)
#   --runs N      executions per target instead of a time
#   --corpus DIR  where the corpora are kept, DIR/<target>/ each
#                 (default BUILD_DIR/fuzz-corpus)
#   --seed N      libFuzzer's seed (default: fixed per commit, as in ctest)
#   -R REGEX      only the ctest entries whose name matches
#
# It builds nothing: build first (scripts/build.sh). Each target runs its
# suite's run_fuzz.cmake, exactly as ctest runs it, with RGPU_FUZZ_SECONDS or
# RGPU_FUZZ_RUNS and RGPU_FUZZ_CORPUS set (cmake/FuzzRun.cmake). An input
# that fails is kept in BUILD_DIR/fuzz-artifacts/<target>/ and its path
# printed; each run's output is in BUILD_DIR/fuzz-logs/<entry>.log. Exit
# status 1 when any target failed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
seconds=60 runs="" corpus="" seed="" regex=""
while (($#)); do
  case "$1" in
    --seconds) seconds="${2:?--seconds wants a number}"; runs=""; shift ;;
    --runs) runs="${2:?--runs wants a number}"; shift ;;
    --corpus) corpus="${2:?--corpus wants a folder}"; shift ;;
    --seed) seed="${2:?--seed wants a number}"; shift ;;
    -R) regex="${2:?-R wants a regular expression}"; shift ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds wants a whole number" >&2; exit 2; }
[[ -z "$runs" || "$runs" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --runs wants a whole number" >&2; exit 2; }
[[ -z "$seed" || "$seed" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seed wants a whole number" >&2; exit 2; }
[ -f "$build/CTestTestfile.cmake" ] || { echo "fuzz.sh: no build in $build (scripts/build.sh first)" >&2; exit 2; }
corpus="${corpus:-$build/fuzz-corpus}"
mkdir -p "$corpus" "$build/fuzz-logs"
corpus="$(cd "$corpus" && pwd)"

export RGPU_FUZZ_CORPUS="$corpus"
if [ -n "$runs" ]; then
  export RGPU_FUZZ_RUNS="$runs"
  unset RGPU_FUZZ_SECONDS
else
  export RGPU_FUZZ_SECONDS="$seconds"
  unset RGPU_FUZZ_RUNS
fi
if [ -n "$seed" ]; then export RGPU_FUZZ_SEED="$seed"; else unset RGPU_FUZZ_SEED; fi

tests_json="$(cd "$build" && ctest --show-only=json-v1 -L fuzz ${regex:+-R "$regex"})"
exec python3 - "$build" "$corpus" <<'EOF' 3<<<"$tests_json"
import json, os, re, subprocess, sys, time

build, corpus = sys.argv[1:3]
tests = json.load(os.fdopen(3)).get("tests", [])
if not tests:
    print("fuzz.sh: no ctest entry of label fuzz matched (is clang++ with libFuzzer installed?)")
    sys.exit(1)

def prop(t, name, default=None):
    for p in t.get("properties", []):
        if p.get("name") == name:
            return p.get("value")
    return default

rows, failed = [], 0
for t in tests:
    name, cmd = t["name"], t["command"]
    env = dict(os.environ)
    for kv in prop(t, "ENVIRONMENT", []) or []:
        k, _, v = kv.partition("=")
        env[k] = v
    cwd = prop(t, "WORKING_DIRECTORY", build)
    log = os.path.join(build, "fuzz-logs", name + ".log")
    print("fuzz.sh: %s ..." % name, flush=True)
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    secs = time.time() - t0
    text = open(log, errors="replace").read()
    stat = lambda k: (re.findall(r"stat::%s:\s*(\d+)" % k, text) or ["-"])[-1]
    target = (re.findall(r"fuzz (\S+): seed", text) or ["?"])[-1]
    seed = (re.findall(r"seed (\d+) \(", text) or ["?"])[-1]
    kept = len(os.listdir(os.path.join(corpus, target))) if os.path.isdir(os.path.join(corpus, target)) else 0
    result = "ok" if rc == 0 else "FAILED"
    failed += rc != 0
    rows.append((name, target, seed, "%.0f" % secs, stat("number_of_executed_units"),
                 stat("average_exec_per_sec"), stat("new_units_added"), str(kept), result))
    if rc != 0:
        for line in text.splitlines():
            if "input:" in line or "reproduce:" in line or "FAILED" in line:
                print("  " + line.strip())
        print("  log: " + log)

head = ("entry", "target", "seed", "s", "executions", "exec/s", "new inputs", "corpus", "result")
widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
print("fuzz.sh: %d targets, %d failed; corpora in %s" % (len(rows), failed, corpus))
sys.exit(1 if failed else 0)
EOF
