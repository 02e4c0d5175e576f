#!/usr/bin/env python3
"""Turns the JSON results of benchmarks/run_suite.sh into docs/benchmarks.md
and PNG plots (matplotlib, when installed; the tables are written either way).

Usage: report.py [--results DIR] [--out DOCS_DIR] [--check]
  --results  the folder run_suite.sh wrote (default benchmarks/results)
  --out      where benchmarks.md and img/ go (default docs)
  --check    also verify that every expected result is there and positive
             (used by the smoke test; exits 1 when not)
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRANSPORTS = [("tcp", "tcp", "UCX_TLS=tcp"),
              ("shm", "shared memory", "UCX_TLS=posix,cma,tcp")]
MIB = 1 << 20


def read_lines(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def by_mode(rows, mode):
    for r in rows:
        if r.get("mode") == mode:
            return r
    return None


def fmt(v, digits=1):
    if v is None:
        return "not measured"
    if isinstance(v, float) and v >= 100:
        return "%.0f" % v
    return ("%%.%df" % digits) % v


def size_name(n):
    if n >= MIB:
        return "%d MiB" % (n // MIB)
    return "%d KiB" % (n // 1024)


def mark(ok):
    if ok is None:
        return "not measured"
    return "met" if ok else "**not met**"


class Results:
    def __init__(self, folder):
        self.folder = folder
        self.machine = (read_lines(os.path.join(folder, "machine.json")) or [{}])[0]
        self.local = read_lines(os.path.join(folder, "rgpu-local.jsonl"))
        self.raw = {}
        self.remote = {}
        self.perftest = {}
        for key, _, _ in TRANSPORTS:
            self.raw[key] = read_lines(os.path.join(folder, "ucx-raw-%s.jsonl" % key))
            self.remote[key] = read_lines(os.path.join(folder, "rgpu-remote-%s.jsonl" % key))
            self.perftest[key] = read_lines(os.path.join(folder, "perftest-%s.jsonl" % key))
        self.module_cache = read_lines(os.path.join(folder, "module-cache.jsonl"))
        path = os.path.join(folder, "commands.txt")
        self.commands = open(path).read().splitlines() if os.path.exists(path) else []

    def raw_latency(self, tr):
        r = by_mode(self.raw[tr], "latency")
        return r

    def op(self, rows, name):
        r = by_mode(rows, "latency")
        if not r:
            return None
        for o in r["ops"]:
            if o["op"] == name:
                return o
        return None

    def points(self, rows, mode="bandwidth"):
        r = by_mode(rows, mode)
        return r["points"] if r else []

    def bw(self, points, size, direction, memory=None):
        for p in points:
            if p["size"] == size and p["direction"] == direction and (memory is None or p.get("memory") == memory):
                return p["mb_per_s"]
        return None


def targets(res):
    rows = []
    for tr, name, _ in TRANSPORTS:
        raw = res.raw_latency(tr)
        sync = res.op(res.remote[tr], "ctx_synchronize")
        ratio = sync["p50_us"] / raw["p50_us"] if raw and sync and raw["p50_us"] > 0 else None
        rows.append(("Small sync call p50 ≤ 1.25 × raw UCX round trip (%s)" % name,
                     "%s µs vs %s µs: **%s ×**" % (fmt(sync and sync["p50_us"], 2), fmt(raw and raw["p50_us"], 2),
                                                  fmt(ratio, 2)),
                     mark(None if ratio is None else ratio <= 1.25)))
    for tr, name, _ in TRANSPORTS:
        raw_pts = res.points(res.raw[tr])
        rem_pts = res.points(res.remote[tr])
        for memory, goal in (("pinned", 0.90), ("pageable", 0.75)):
            worst = None
            where = ""
            for p in rem_pts:
                if p.get("memory") != memory or p["size"] < MIB:
                    continue
                raw = res.bw(raw_pts, p["size"], p["direction"])
                if not raw:
                    continue
                ratio = p["mb_per_s"] / raw
                if worst is None or ratio < worst:
                    worst = ratio
                    where = "%s %s" % (size_name(p["size"]), p["direction"])
            rows.append(("Copies ≥ 1 MiB, %s, ≥ %.2f × raw UCX, both directions (%s)" % (memory, goal, name),
                         "lowest **%s ×** (%s)" % (fmt(worst, 2), where) if worst is not None else "not measured",
                         mark(None if worst is None else worst >= goal)))
    local = by_mode(res.local, "launch")
    for tr, name, _ in TRANSPORTS:
        remote = by_mode(res.remote[tr], "launch")
        ratio = remote["total_ms"] / local["total_ms"] if remote and local and local["total_ms"] > 0 else None
        rows.append(("%s empty launches + synchronize ≤ 1.5 × local (%s)" % (
                         remote["launches"] if remote else "10,000", name),
                     "%s ms vs %s ms: **%s ×**" % (fmt(remote and remote["total_ms"]), fmt(local and local["total_ms"]),
                                                  fmt(ratio, 2)),
                     mark(None if ratio is None else ratio <= 1.5)))
        enq = remote["enqueue_p50_us"] if remote else None
        rows.append(("Client enqueues a launch in ≤ 1 µs, median (%s)" % name, "%s µs" % fmt(enq, 2),
                     mark(None if enq is None else enq <= 1.0)))
    mc = res.module_cache
    if len(mc) >= 2:
        first, second = mc[0]["module_bytes_sent"], mc[1]["module_bytes_sent"]
        rows.append(("Second run of a program sends 0 module bytes",
                     "first run %d bytes, second run %d bytes" % (first, second), mark(second == 0 and first > 0)))
    else:
        rows.append(("Second run of a program sends 0 module bytes", "not measured", mark(None)))
    return rows


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def plots(res, img_dir):
    """Writes the PNG plots; returns their names (empty without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    os.makedirs(img_dir, exist_ok=True)
    names = []
    # Latency: p50 and p99 of the small sync call, raw vs rgpu, per transport.
    fig, ax = plt.subplots(figsize=(7, 3.6))
    labels, raw50, rem50, raw99, rem99 = [], [], [], [], []
    for tr, name, _ in TRANSPORTS:
        raw = res.raw_latency(tr)
        sync = res.op(res.remote[tr], "ctx_synchronize")
        if not raw or not sync:
            continue
        labels.append(name)
        raw50.append(raw["p50_us"])
        rem50.append(sync["p50_us"])
        raw99.append(raw["p99_us"])
        rem99.append(sync["p99_us"])
    if labels:
        x = range(len(labels))
        w = 0.2
        ax.bar([i - 1.5 * w for i in x], raw50, w, label="raw UCX p50")
        ax.bar([i - 0.5 * w for i in x], rem50, w, label="rgpu p50")
        ax.bar([i + 0.5 * w for i in x], raw99, w, label="raw UCX p99")
        ax.bar([i + 1.5 * w for i in x], rem99, w, label="rgpu p99")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels)
        ax.set_yscale("log")
        ax.set_ylabel("round trip, µs (log)")
        ax.set_title("Small synchronous call (cuCtxSynchronize) vs raw UCX ping-pong")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(img_dir, "latency.png"), dpi=110)
        names.append("latency.png")
    plt.close(fig)
    # Bandwidth curves.
    local_pts = res.points(res.local)
    for tr, name, _ in TRANSPORTS:
        raw_pts = res.points(res.raw[tr])
        rem_pts = res.points(res.remote[tr])
        if not raw_pts or not rem_pts:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
        for ax, direction in zip(axes, ("htod", "dtoh")):
            def series(points, memory=None):
                pts = sorted((p["size"], p["mb_per_s"]) for p in points
                             if p["direction"] == direction and (memory is None or p.get("memory") == memory))
                return [s for s, _ in pts], [v for _, v in pts]
            for label, (xs, ys), style in (("raw UCX", series(raw_pts), "k-o"),
                                           ("rgpu pinned", series(rem_pts, "pinned"), "b-s"),
                                           ("rgpu pageable", series(rem_pts, "pageable"), "g-^"),
                                           ("local (no rgpu)", series(local_pts, "pageable"), "r:")):
                if xs:
                    ax.plot(xs, ys, style, label=label, markersize=4)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("copy size, bytes")
            ax.set_title("%s, %s" % ("host to device" if direction == "htod" else "device to host", name))
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("MB/s (log)")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fname = "bandwidth-%s.png" % tr
        fig.savefig(os.path.join(img_dir, fname), dpi=110)
        plt.close(fig)
        names.append(fname)
    # Launches and the applications, remote vs local.
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    local_launch = by_mode(res.local, "launch")
    local_app = by_mode(res.local, "app")
    for ax, (key, title) in zip(axes, (("launch", "empty launches + sync, ms"), ("matmul_ms", "tiled matmul, ms"),
                                       ("streams_ms", "streams sample, ms"))):
        labels, values = [], []
        if key == "launch":
            if local_launch:
                labels.append("local")
                values.append(local_launch["total_ms"])
            for tr, name, _ in TRANSPORTS:
                r = by_mode(res.remote[tr], "launch")
                if r:
                    labels.append(name)
                    values.append(r["total_ms"])
        else:
            if local_app:
                labels.append("local")
                values.append(local_app[key])
            for tr, name, _ in TRANSPORTS:
                r = by_mode(res.remote[tr], "app")
                if r:
                    labels.append(name)
                    values.append(r[key])
        ax.bar(labels, values, color=["gray"] + ["tab:blue"] * (len(labels) - 1))
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "launch-app.png"), dpi=110)
    plt.close(fig)
    names.append("launch-app.png")
    return names


def page(res, images):
    m = res.machine
    lines = []
    add = lines.append
    add("# Benchmarks")
    add("")
    add("<!-- Generated by benchmarks/report.py from benchmarks/results/; do not edit by hand. -->")
    add("")
    add("rgpu against the wire's own limit and against the device used directly, measured side by side in one "
        "run of `./scripts/bench.sh` (which builds, runs `benchmarks/run_suite.sh` and then this report). "
        "Figures are ratios from that one run on a shared machine: rerun it to compare on yours. On the "
        "2-CPU development machine the raw figures themselves swing by up to 4× from run to run, and the ratios "
        "with them (docs/performance.md, \"Run-to-run variation\").")
    add("")
    add("- **Machine:** %s CPUs (%s), Linux %s, UCX %s; rgpu commit %s; run %s%s." % (
        m.get("host_cpus", "?"), m.get("cpu", "?"), m.get("kernel", "?"), m.get("ucx", "?"), m.get("commit", "?"),
        m.get("date", "?"), " (smoke run: tiny sizes, not figures)" if m.get("smoke") else ""))
    add("- **Device:** rgpu's CPU device (there is no GPU here): remote runs go through `rgpu run --device cpu`, "
        "local runs load the CPU device's driver library (`librgpu-cpudev.so`) directly into the same program "
        "(`rgpu-bench --driver ...`).")
    add("- **Transports:** " + "; ".join("%s (`%s`)" % (name, env) for _, name, env in TRANSPORTS) +
        ". Client and server run on this one host over loopback; tcp is kept in the shared-memory set for UCX's "
        "connection manager.")
    add("- **Raw UCX:** `rgpu-ucx-bench` (benchmarks/ucx_raw_bench.cpp), the UCX API alone configured like rgpu's "
        "transport (active messages, multi-thread worker, peer error handling, rgpu's UCX defaults), both sides "
        "busy-polling; 128-byte messages for the round trip, rendezvous into registered buffers for bandwidth. "
        "`ucx_perftest` figures are printed beside it (its defaults: no peer error handling).")
    add("- **Statistics:** latency percentiles over 20,000 calls after 2,000 warm-up calls; bandwidth is the "
        "median of 5 copies after one warm-up copy (raw and rgpu alike); launches and applications as stated.")
    add("")
    add("## Targets")
    add("")
    add(table(["target", "measured", ""], targets(res)))
    add("")
    add("## Small synchronous calls")
    add("")
    rows = []
    for tr, name, _ in TRANSPORTS:
        raw = res.raw_latency(tr)
        if raw:
            rows.append((name, "raw UCX AM ping-pong, %d B" % raw["size"], fmt(raw["p50_us"], 2), fmt(raw["p99_us"], 2),
                         fmt(raw["p999_us"], 2), "1.00"))
        for p in res.perftest[tr]:
            if p.get("test") == "ucp_am_lat" and "latency_typical_us" in p:
                rows.append((name, "ucx_perftest ucp_am_lat, %d B (2 × one-way)" % p["size"],
                             fmt(2 * float(p["latency_typical_us"]), 2), "", "", ""))
        for op in ("ctx_synchronize", "mem_get_info", "memcpy_dtoh_4b"):
            o = res.op(res.remote[tr], op)
            if o:
                ratio = o["p50_us"] / raw["p50_us"] if raw else None
                rows.append((name, "rgpu `%s`" % op, fmt(o["p50_us"], 2), fmt(o["p99_us"], 2), fmt(o["p999_us"], 2),
                             fmt(ratio, 2)))
    for op in ("ctx_synchronize", "mem_get_info", "memcpy_dtoh_4b"):
        o = res.op(res.local, op)
        if o:
            rows.append(("local", "CPU device `%s`, no rgpu" % op, fmt(o["p50_us"], 2), fmt(o["p99_us"], 2),
                         fmt(o["p999_us"], 2), ""))
    add(table(["transport", "what", "p50 µs", "p99 µs", "p99.9 µs", "p50 / raw"], rows))
    add("")
    if "latency.png" in images:
        add("![latency](img/latency.png)")
        add("")
    add("## Bandwidth")
    add("")
    local_pts = res.points(res.local)
    for tr, name, _ in TRANSPORTS:
        raw_pts = res.points(res.raw[tr])
        rem_pts = res.points(res.remote[tr])
        if not raw_pts:
            continue
        add("### %s" % name)
        add("")
        rows = []
        for size in sorted({p["size"] for p in raw_pts}):
            for direction in ("htod", "dtoh"):
                raw = res.bw(raw_pts, size, direction)
                pin = res.bw(rem_pts, size, direction, "pinned")
                pag = res.bw(rem_pts, size, direction, "pageable")
                loc = res.bw(local_pts, size, direction, "pageable")
                rows.append((size_name(size), direction, fmt(raw), fmt(pin), fmt(pin / raw if pin and raw else None, 2),
                             fmt(pag), fmt(pag / raw if pag and raw else None, 2), fmt(loc)))
        add(table(["size", "direction", "raw UCX MB/s", "rgpu pinned", "× raw", "rgpu pageable", "× raw",
                   "local MB/s"], rows))
        for p in res.perftest[tr]:
            if p.get("test") == "ucp_am_bw" and "mb_per_s" in p:
                add("")
                add("`ucx_perftest ucp_am_bw` at %s: %s MB/s." % (size_name(p["size"]), fmt(float(p["mb_per_s"]))))
        add("")
        if "bandwidth-%s.png" % tr in images:
            add("![bandwidth %s](img/bandwidth-%s.png)" % (tr, tr))
            add("")
    add("## Kernel launches and applications")
    add("")
    rows = []
    local_launch = by_mode(res.local, "launch")
    local_app = by_mode(res.local, "app")
    if local_launch:
        rows.append(("local", "%d launches + sync" % local_launch["launches"], fmt(local_launch["total_ms"]), "1.00",
                     fmt(local_launch["enqueue_p50_us"], 2), fmt(local_launch["enqueue_p99_us"], 2)))
    for tr, name, _ in TRANSPORTS:
        r = by_mode(res.remote[tr], "launch")
        if r:
            rows.append((name, "%d launches + sync" % r["launches"], fmt(r["total_ms"]),
                         fmt(r["total_ms"] / local_launch["total_ms"] if local_launch else None, 2),
                         fmt(r["enqueue_p50_us"], 2), fmt(r["enqueue_p99_us"], 2)))
    add(table(["where", "what", "total ms", "× local", "enqueue p50 µs", "enqueue p99 µs"], rows))
    add("")
    rows = []
    if local_app:
        rows.append(("local", fmt(local_app["matmul_ms"]), "1.00", fmt(local_app["streams_ms"]), "1.00"))
    for tr, name, _ in TRANSPORTS:
        r = by_mode(res.remote[tr], "app")
        if r:
            rows.append((name, fmt(r["matmul_ms"]), fmt(r["matmul_ms"] / local_app["matmul_ms"] if local_app else None, 2),
                         fmt(r["streams_ms"]), fmt(r["streams_ms"] / local_app["streams_ms"] if local_app else None, 2)))
    if local_app:
        add("Applications (the kernels of `tests/samples/matmul_tiled.cu`, %d × %d, and "
            "`tests/samples/streams_events.cu`, %d floats over 4 streams, driven the same way through the driver API; results checked; median of runs):" % (
                local_app["matmul_size"], local_app["matmul_size"], local_app["streams_elements"]))
        add("")
    add(table(["where", "tiled matmul ms", "× local", "streams ms", "× local"], rows))
    add("")
    if "launch-app.png" in images:
        add("![launches and applications](img/launch-app.png)")
        add("")
    add("## Where the time goes")
    add("")
    for tr, name, _ in TRANSPORTS:
        raw = res.raw_latency(tr)
        sync = res.op(res.remote[tr], "ctx_synchronize")
        if raw and sync:
            add("- **%s:** a small synchronous call costs %s µs more than the raw round trip (%s vs %s µs at p50)." % (
                name, fmt(sync["p50_us"] - raw["p50_us"], 2), fmt(sync["p50_us"], 2), fmt(raw["p50_us"], 2)))
    add("")
    add(WHERE_TIME_GOES)
    add("")
    add("## How to run")
    add("")
    add("```")
    add("./scripts/bench.sh            # set up, build, run everything (about 10 minutes), regenerate this page")
    add("./scripts/bench.sh --smoke    # seconds: checks that the suite works (CI runs this as ctest bench.smoke)")
    add("```")
    add("")
    add("Commands of this run (one per result file line):")
    add("")
    add("```")
    for c in res.commands:
        add(c.replace(ROOT + "/", ""))
    add("```")
    add("")
    return "\n".join(lines)


WHERE_TIME_GOES = """The path of one small synchronous call, as built (docs/performance.md has the design):

1. **Client, calling thread:** the call is added to the open batch (a Cap'n Proto orphan), the batch is encoded
   and posted to UCX from the calling thread; the thread then polls the UCX worker itself (up to
   `RGPU_POLL_US`, 200 µs by default) and the reply's handler runs on that same thread, so no thread hands the
   reply over.
2. **Server:** the transport's thread decodes the batch; a batch of quick calls (queries, allocation,
   synchronizations that are already complete, a lone small copy on an idle context) runs right there, on that
   thread, and the reply is posted from it. Anything else goes to the session's executor thread, which spins
   briefly before sleeping.
3. What remains over the raw round trip is this software path: two Cap'n Proto encodes and decodes (call and
   reply; each decode walks the whole message to bound it), the batch and reply bookkeeping (two map lookups and
   three uncontended locks per side), the executor queue when the call is not run inline, and on tcp the
   socket syscalls, which dominate there. On shared memory the raw round trip is about a microsecond, so this
   fixed cost shows as a larger ratio than on tcp, where it disappears in the wire's own latency.

Bulk copies: the client sends from (or receives into) the program's buffer with UCX rendezvous, using the
registration of page-locked memory made once at `cuMemHostAlloc`; on the server, the bytes go straight into (or
out of) device memory when nothing in flight could touch them — the CPU device's memory is host memory, and on a
GPU this is the GPUDirect path when UCX handles CUDA memory — and otherwise through a pool of registered staging
buffers, with large synchronous copies pipelined in pieces so that the network and the device copy overlap.
Small copies (under 1 MiB) are latency-bound: a copy is a round trip plus its bytes, so their ratio follows the
round-trip ratio above.

On a 2-core host the remote runs also share the cores between more busy threads than the local runs: during
10,000 launches, the program's thread, rgpud's transport thread, its executor and the CPU device's stream worker
(and, before batches were left to UCX to send, a client thread driving each batch's send: about 32, 12, 15, 11 and
15 % of the samples in `perf record`); locally only the program's thread and the stream worker. During large copies, more runnable threads than cores cost whole
scheduler ticks now and then (a 16 MiB copy on shared memory takes 1.3 to 1.4 ms like the raw transfer, with
occasional copies of 4 to 14 ms), which the medians of a few copies catch unevenly from run to run. The
profiles and how to take them are in docs/performance.md, "Profiles"."""


def check(res):
    problems = []
    if not res.local:
        problems.append("no local results")
    for tr, _, _ in TRANSPORTS:
        if not res.raw_latency(tr) or not res.points(res.raw[tr]):
            problems.append("raw UCX results missing for " + tr)
        for mode in ("latency", "bandwidth", "launch", "app"):
            r = by_mode(res.remote[tr], mode)
            if not r:
                problems.append("remote %s missing for %s" % (mode, tr))
                continue
            if mode == "latency" and any(o["p50_us"] <= 0 for o in r["ops"]):
                problems.append("non-positive latency for " + tr)
            if mode == "bandwidth" and (not r["points"] or any(p["mb_per_s"] <= 0 for p in r["points"])):
                problems.append("bad bandwidth points for " + tr)
            if mode == "bandwidth" and not r.get("pinned_available"):
                problems.append("pinned memory unavailable remotely on " + tr)
    for mode in ("latency", "bandwidth", "launch", "app"):
        if not by_mode(res.local, mode):
            problems.append("local %s missing" % mode)
    mc = res.module_cache
    if len(mc) < 2 or mc[0].get("module_bytes_sent", 0) <= 0 or mc[1].get("module_bytes_sent") != 0:
        problems.append("module cache runs wrong: %s" % mc)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    res = Results(args.results)
    images = plots(res, os.path.join(args.out, "img"))
    os.makedirs(args.out, exist_ok=True)
    text = page(res, images)
    # The pool scheduler's simulator writes its own results (rgpu-pool-sim);
    # its section is drawn by benchmarks/pool/pool_report.py.
    pool_json = os.path.join(ROOT, "benchmarks", "pool", "results", "pool-sim.json")
    if os.path.exists(pool_json):
        sys.path.insert(0, os.path.join(ROOT, "benchmarks", "pool"))
        import pool_report
        with open(pool_json) as fh:
            pool = json.load(fh)
        drawn = pool_report.draw(pool, os.path.join(args.out, "img", "pool-sim.png"))
        text = text.rstrip("\n") + "\n\n" + pool_report.section(pool, "img/pool-sim.png" if drawn else None)
    with open(os.path.join(args.out, "benchmarks.md"), "w") as f:
        f.write(text)
    print("report.py: wrote %s%s" % (os.path.join(args.out, "benchmarks.md"),
                                     "" if images else " (no plots: python3-matplotlib is not installed)"))
    if args.check:
        problems = check(res)
        for p in problems:
            print("report.py: check failed: " + p, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
