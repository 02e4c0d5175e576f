"""The summary of a tests/gpu/run.sh run: OUT/summary.md and OUT/summary.json.

Reads the run's logs folder: results.jsonl (one line per check, written by
run.sh), machine.txt, the PyTorch probe's JSON, the pytest JUnit reports,
the CNN runs' JSON and client counters (RGPU_STATS), and rgpu-bench's JSON
lines. Standard library only: it runs with whatever python3 the machine has.

Its exit status is the run's verdict (run.sh exits with it): 0 when there was
at least one check and every check passed or was skipped on request, 1 when
any failed, timed out or could not run.
"""

import argparse
import json
import os
import xml.etree.ElementTree as ET

STEPS = {
    "0": "carried build",
    "1": "rgpud",
    "2": "driver, runtime, libraries, samples",
    "3": "PyTorch suite",
    "4": "CNN training",
    "5": "local-versus-remote benchmark",
}


# The statuses of a check that do not fail the run ("skip": asked for, with
# RGPU_GPU_TEST_TORCH=skip).
PASSING = ("pass", "skip")

# Fields of an RGPU_STATS line that are not counters.
NOT_COUNTERS = {"pid", "time", "program"}


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_lines(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return rows


def junit(path):
    """Counts and the failed and skipped cases of a pytest JUnit report."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return None
    counts = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failed, skipped = [], {}
    for case in suite.iter("testcase"):
        name = "%s::%s" % (case.get("classname", ""), case.get("name", ""))
        for kind in ("failure", "error"):
            el = case.find(kind)
            if el is not None:
                failed.append({"test": name, "why": (el.get("message") or "")[:200]})
        el = case.find("skipped")
        if el is not None:
            why = (el.get("message") or "")[:160]
            skipped[why] = skipped.get(why, 0) + 1
    counts["failed_tests"] = failed
    counts["skip_reasons"] = skipped
    return counts


def stats_total(path):
    """The client counters of the last line RGPU_STATS wrote (one process)."""
    rows = load_lines(path)
    return rows[-1] if rows else None


def cnn(logs, steps, short):
    remote = load_json(os.path.join(logs, "step4-cnn-remote-%d.json" % steps))
    short_run = load_json(os.path.join(logs, "step4-cnn-remote-%d.json" % short))
    local = load_json(os.path.join(logs, "step4-cnn-local.json"))
    out = {"remote": remote, "local": local}
    if remote and local and remote.get("losses") and local.get("losses"):
        diffs = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(remote["losses"], local["losses"])]
        out["max_rel_loss_diff"] = max(diffs)
        out["losses_equal"] = remote["losses"] == local["losses"]
        if remote.get("step_ms_median") and local.get("step_ms_median"):
            out["step_time_ratio"] = remote["step_ms_median"] / local["step_ms_median"]
    s_full = stats_total(os.path.join(logs, "step4-stats-%d.jsonl" % steps))
    s_short = stats_total(os.path.join(logs, "step4-stats-%d.jsonl" % short))
    if s_full and s_short and remote and short_run and steps > short:
        n = steps - short
        per = {}
        for k, v in s_full.items():
            if k in NOT_COUNTERS:
                continue
            if isinstance(v, (int, float)) and isinstance(s_short.get(k), (int, float)):
                per[k] = (v - s_short[k]) / n
        out["per_step_client_counters"] = per
        out["client_counters_full_run"] = s_full
    return out


def bench(logs):
    remote = {r.get("mode"): r for r in load_lines(os.path.join(logs, "step5-remote.jsonl"))}
    local = {r.get("mode"): r for r in load_lines(os.path.join(logs, "step5-local.jsonl"))}
    rows = []

    def row(what, unit, r, l, lower_is_better=True):
        ratio = None
        if isinstance(r, (int, float)) and isinstance(l, (int, float)) and l:
            ratio = r / l if lower_is_better else l / r if r else None
        rows.append({"what": what, "unit": unit, "remote": r, "local": l, "remote_over_local": ratio})

    lat_r = {o["op"]: o for o in (remote.get("latency") or {}).get("ops", [])}
    lat_l = {o["op"]: o for o in (local.get("latency") or {}).get("ops", [])}
    for op in sorted(set(lat_r) | set(lat_l)):
        row("latency %s p50" % op, "us", lat_r.get(op, {}).get("p50_us"), lat_l.get(op, {}).get("p50_us"))
    lr, ll = remote.get("launch") or {}, local.get("launch") or {}
    row("launch enqueue p50", "us", lr.get("enqueue_p50_us"), ll.get("enqueue_p50_us"))
    row("launch total (%s launches)" % (lr.get("launches") or ll.get("launches")), "ms",
        lr.get("total_ms"), ll.get("total_ms"))
    ar, al = remote.get("app") or {}, local.get("app") or {}
    row("app matmul %s" % (ar.get("matmul_size") or al.get("matmul_size")), "ms", ar.get("matmul_ms"), al.get("matmul_ms"))
    row("app streams %s elements" % (ar.get("streams_elements") or al.get("streams_elements")), "ms",
        ar.get("streams_ms"), al.get("streams_ms"))

    def biggest(r):
        pts = {}
        for p in (r.get("bandwidth") or {}).get("points", []):
            key = (p.get("direction"), p.get("memory"))
            if key not in pts or p.get("size", 0) > pts[key].get("size", 0):
                pts[key] = p
        return pts

    br, bl = biggest(remote), biggest(local)
    for key in sorted(set(br) | set(bl), key=str):
        size = (br.get(key) or bl.get(key)).get("size")
        row("bandwidth %s %s %d MiB" % (key[0], key[1], (size or 0) >> 20), "MB/s",
            (br.get(key) or {}).get("mb_per_s"), (bl.get(key) or {}).get("mb_per_s"), lower_is_better=False)
    return {"rows": rows, "remote": remote, "local": local}


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return ("%%.%dg" % digits) % v
    return str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--cnn-steps", type=int, default=30)
    ap.add_argument("--cnn-short", type=int, default=10)
    args = ap.parse_args()
    logs = args.logs
    results = load_lines(os.path.join(logs, "results.jsonl"))
    try:
        machine = open(os.path.join(logs, "machine.txt")).read().strip()
    except OSError:
        machine = ""
    steps, short = args.cnn_steps, args.cnn_short

    summary = {
        "device_mode": args.device,
        "seconds": args.seconds,
        "machine": machine.splitlines(),
        "results": results,
        "probe": {"remote": load_json(os.path.join(logs, "step3-probe-remote.json")),
                  "local": load_json(os.path.join(logs, "step3-probe-local.json"))},
        "pytorch_suite": {"remote": junit(os.path.join(logs, "step3-suite-remote.xml")),
                          "local": junit(os.path.join(logs, "step3-suite-local.xml"))},
        "cnn": cnn(logs, steps, short),
        "bench": bench(logs),
    }

    failed = [r for r in results if r.get("status") not in PASSING]
    passed = bool(results) and not failed
    summary["passed"] = passed
    summary["failed_checks"] = ["%s/%s/%s" % (r["step"], r["name"], r["where"]) for r in failed]

    md = ["# rgpu on a GPU machine: tests/gpu/run.sh", ""]
    if passed:
        md.append("PASSED: all %d checks." % len(results))
    elif not results:
        md.append("FAILED: no check ran.")
    else:
        md.append("FAILED: %d of %d checks: %s." % (len(failed), len(results), ", ".join(
            "%s (%s)" % (name, r["status"]) for name, r in zip(summary["failed_checks"], failed))))
    md.append("")
    md.append("Mode: `--device %s`; %d s in all." % (args.device, args.seconds))
    if args.device == "cpu":
        md.append("(CPU mode: rgpud on rgpu's CPU device; comparisons with NVIDIA's driver are skipped.)")
    md += ["", "```", machine, "```", "", "## Steps", "",
           "| step | what | pass | fail | skipped | seconds |", "| --- | --- | --- | --- | --- | --- |"]
    for step, what in STEPS.items():
        rows = [r for r in results if r["step"] == step]
        if not rows:
            continue
        p = sum(r["status"] == "pass" for r in rows)
        f = sum(r["status"] not in PASSING for r in rows)
        o = len(rows) - p - f
        md.append("| %s | %s | %d | %d | %d | %.0f |" % (step, what, p, f, o, sum(r["seconds"] for r in rows)))
    md += ["", "## Every check", "", "| step | check | where | result | s | detail |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        detail = r["detail"].replace("|", "\\|").replace("\n", " ")
        md.append("| %s | %s | %s | %s | %.1f | %s |" % (r["step"], r["name"], r["where"], r["status"],
                                                         r["seconds"], detail))

    md += ["", "## PyTorch (step 3)", ""]
    probe = summary["probe"]["remote"]
    if probe:
        md.append("Remote probe: torch %s (CUDA %s), device %s, cuda available %s; matmul %s; conv2d %s." % (
            probe.get("torch"), probe.get("torch_cuda"), probe.get("device"), probe.get("cuda_available"),
            json.dumps(probe.get("matmul")), json.dumps(probe.get("conv2d"))))
        md += ["", "CUDA libraries the remote PyTorch process mapped (rgpu: remoted; nvidia: NVIDIA's own code"
               " in the client process, running over rgpu's driver API):", ""]
        for lib in probe.get("libraries", []):
            md.append("- %s: `%s`" % (lib["provider"], lib["file"]))
    for where in ("remote", "local"):
        s = summary["pytorch_suite"][where]
        if not s:
            continue
        md.append("")
        md.append("Suite %s: %d passed, %d failed, %d errors, %d skipped." % (
            where, s["passed"], s["failures"], s["errors"], s["skipped"]))
        for f in s["failed_tests"][:40]:
            md.append("- failed: `%s`: %s" % (f["test"], f["why"].replace("\n", " ")))
        for why, n in sorted(s["skip_reasons"].items(), key=lambda kv: -kv[1])[:15]:
            md.append("- skipped x%d: %s" % (n, why.replace("\n", " ")))

    c = summary["cnn"]
    md += ["", "## CNN training (step 4)", ""]
    if c.get("remote") or c.get("local"):
        md += ["| | remote | %s |" % ("local" if args.device == "cuda" else "PyTorch CPU (reference)"),
               "| --- | --- | --- |"]
        for key in ("device", "torch", "cudnn", "steps", "batch", "step_ms_median"):
            md.append("| %s | %s | %s |" % (key, fmt((c.get("remote") or {}).get(key)),
                                             fmt((c.get("local") or {}).get(key))))
        md.append("")
        md.append("Step time remote / local: %s (median of the steps after the warm-up; the target is at most"
                  " 1.10, reported, not judged); max relative loss difference: %s; losses bit-equal: %s"
                  " (judged by the check cnn-losses above)." % (
                      fmt(c.get("step_time_ratio")), fmt(c.get("max_rel_loss_diff")), c.get("losses_equal")))
        per = c.get("per_step_client_counters")
        if per:
            md.append("")
            md.append("Per training step (client counters, %d-step run minus %d-step run): %s." % (
                steps, short, ", ".join("%s %s" % (k, fmt(v, 4)) for k, v in sorted(per.items()))))
    else:
        md.append("No CNN results.")

    md += ["", "## Benchmark (step 5)", "", "| measure | unit | remote | local | remote/local (cost) |",
           "| --- | --- | --- | --- | --- |"]
    for r in summary["bench"]["rows"]:
        if r["remote"] is None and r["local"] is None:
            continue
        md.append("| %s | %s | %s | %s | %s |" % (r["what"], r["unit"], fmt(r["remote"]), fmt(r["local"]),
                                                  fmt(r["remote_over_local"])))
    md.append("")
    md.append("Logs: logs.tar.gz (every program's output, rgpud.log, the JSON and JUnit files).")

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
