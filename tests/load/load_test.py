#!/usr/bin/env python3
"""The load driver: one rgpud on the CPU device on loopback, R rounds of N
load clients at once, every client's results checked, and the server's
resident memory and thread count watched across rounds.

Round 0 is the warm-up: its after-state (once the server is idle again) is
the baseline. A round passes when its clients report 0 wrong results and 0
errors and all exit 0 in time, the server is still running and goes idle
again in time, and (for rounds after the warm-up) the server's VmRSS is at
most max(baseline * (1 + rss_tolerance), baseline + rss_slack_kib) and its
thread count is back to the baseline's. The server's thread count is also
sampled while the clients run; with --thread-bound PER,EXTRA a round after
the warm-up fails when its peak goes past baseline + PER * clients + EXTRA
(the bound of docs/performance.md, "Server threads": one executor per
session, the idle server's threads, and at most two reapers of ended
sessions). --warmup-clients makes the warm-up round smaller. The slack covers the allocator's own
warm-up, which goes on for a few rounds on a server whose baseline is small
(about 15 MiB on the CPU device: +1.3 MiB over five rounds, then flat). Prints a table, writes a JSON summary (--json), and ends with the
line "P passed, F failed" (rounds). Exit status 0 only when none failed.

Standard library only; Linux only (reads /proc).
"""
import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time


def read_status(pid):
    """VmRSS in KiB and the thread count of a process, from /proc."""
    rss = threads = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def busy_sockets(pid):
    """The process's TCP sockets that are not listening: one or more per
    connected client (UCX's connection manager keeps its socket for the
    endpoint's lifetime, whatever transport carries the data)."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    busy = 0
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[9] in inodes and cols[3] != "0A":  # 0A: LISTEN
                        busy += 1
        except FileNotFoundError:
            pass
    return busy


def wait_idle(pid, limit_s, want_threads=None):
    """Waits until the server has no client sockets and its thread count has
    held still for a second (and, when given, is at most want_threads).
    Returns (idle, rss_kib, threads)."""
    deadline = time.monotonic() + limit_s
    last, steady = None, 0
    rss, threads = read_status(pid)
    while time.monotonic() < deadline:
        rss, threads = read_status(pid)
        quiet = busy_sockets(pid) == 0
        steady = steady + 1 if quiet and threads == last else 0
        last = threads
        if steady >= 5 and (want_threads is None or threads <= want_threads):
            return True, rss, threads
        time.sleep(0.2)
    return False, rss, threads


class Server:
    """rgpud on 127.0.0.1, a free port, the CPU device. Its stderr goes to a log file."""

    def __init__(self, bin_dir, log_path, device_memory, extra_args=()):
        env = dict(os.environ, RGPU_CPU_DEVICE_MEMORY=device_memory)
        env.pop("LD_PRELOAD", None)
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu"] + list(extra_args),
            stdout=subprocess.PIPE, stderr=self.log, env=env, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout], daemon=True).start()
        self.address = None
        deadline = time.monotonic() + 30
        while self.address is None and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if "listening on " in line:
                self.address = line.split("listening on ", 1)[1].split()[0]
        if self.address is None:
            self.stop()
            raise RuntimeError(f"rgpud did not start; see {log_path}")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_client(argv, timeout_s, log_path, results, index):
    """Runs one client in its own process group; kills the group past the
    timeout. Stores (exit status or None, its JSON line or None)."""
    with open(log_path, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout_s)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            status = None
    report = None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                report = json.loads(line)
            except ValueError:
                pass
            break
    results[index] = (status, report)


class ThreadWatch:
    """Samples a process's thread count every `period` seconds until stopped;
    keeps the peak."""

    def __init__(self, pid, period=0.02):
        self.pid, self.period, self.peak = pid, period, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, len(os.listdir(f"/proc/{self.pid}/task")))
            except OSError:
                return  # the process is gone
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak


def run_round(args, server, number, log_dir, clients):
    argv_of = lambda i: [os.path.join(args.bin_dir, "rgpu"), "run", "--server", server.address, "--",
                         args.client, "--seconds", str(args.seconds), "--seed", str(number * 1000 + i),
                         "--threads", str(args.threads)] + args.client_arg
    timeout_s = args.seconds + args.grace
    results = [None] * clients
    watch = ThreadWatch(server.proc.pid)
    threads = []
    for i in range(clients):
        log = os.path.join(log_dir, f"round{number}-client{i}.log")
        t = threading.Thread(target=run_client, args=(argv_of(i), timeout_s, log, results, i))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    row = {"round": number, "clients": clients, "calls": 0, "wrong": 0, "errors": 0,
           "contexts": 0, "verified_bytes": 0, "problems": [], "peak_threads": watch.stop()}
    for i, (status, report) in enumerate(results):
        if report is not None:
            for key in ("calls", "wrong", "errors", "contexts", "verified_bytes"):
                row[key] += int(report.get(key, 0))
            if report.get("first_problem"):
                row["problems"].append(f"client {i}: {report['first_problem']}")
        if status is None:
            row["errors"] += 1
            row["problems"].append(f"client {i}: killed after {timeout_s:g} s")
        elif report is None:
            row["errors"] += 1
            row["problems"].append(f"client {i}: exit {status} without a report")
        elif status != 0 and report.get("wrong", 0) == 0 and report.get("errors", 0) == 0:
            row["errors"] += 1
            row["problems"].append(f"client {i}: exit {status} with a clean report")
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", required=True, help="folder holding rgpud and rgpu")
    p.add_argument("--client", required=True, help="the load_client program")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--seconds", type=float, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=3, help="threads per client")
    p.add_argument("--rss-tolerance", type=float, default=0.05)
    p.add_argument("--rss-slack-kib", type=int, default=2048)
    p.add_argument("--grace", type=float, default=90, help="seconds a client may run past --seconds")
    p.add_argument("--idle-timeout", type=float, default=60)
    p.add_argument("--device-memory", default="16G", help="RGPU_CPU_DEVICE_MEMORY for rgpud")
    p.add_argument("--client-arg", action="append", default=[], help="one more argument for every client")
    p.add_argument("--warmup-clients", type=int, help="clients of the warm-up round (default --clients)")
    p.add_argument("--thread-bound", help="PER,EXTRA: fail a round after the warm-up whose peak of server "
                   "threads passes the idle baseline + PER * clients + EXTRA")
    p.add_argument("--server-arg", action="append", default=[], help="one more argument for rgpud")
    p.add_argument("--json", help="write the summary here")
    p.add_argument("--log-dir", help="client and server logs (default: a new temporary folder)")
    args = p.parse_args()
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="rgpu-load-")
    os.makedirs(log_dir, exist_ok=True)

    server = Server(args.bin_dir, os.path.join(log_dir, "rgpud.log"), args.device_memory, args.server_arg)
    pid = server.proc.pid
    print(f"rgpud pid={pid} address={server.address} logs={log_dir}", flush=True)
    fmt = "{:>5} {:>7} {:>10} {:>6} {:>6} {:>9} {:>7} {:>11} {:>9}  {}"
    print(fmt.format("round", "clients", "calls", "wrong", "errors", "rss_kib", "threads", "peak_thread",
                     "contexts", "result"))
    rows, baseline = [], None
    try:
        for number in range(args.rounds):
            clients = args.warmup_clients if number == 0 and args.warmup_clients else args.clients
            row = run_round(args, server, number, log_dir, clients)
            failures = []
            if row["wrong"]:
                failures.append(f"wrong={row['wrong']}")
            if row["errors"]:
                failures.append(f"errors={row['errors']}")
            if args.thread_bound and baseline is not None:
                per, extra = (int(x) for x in args.thread_bound.split(","))
                bound = baseline["threads"] + per * clients + extra
                row["thread_bound"] = bound
                if row["peak_threads"] > bound:
                    failures.append(f"peak threads {row['peak_threads']} > {bound}")
            if not server.alive():
                failures.append("rgpud exited")
                row.update(rss_kib=None, threads=None)
            else:
                want = baseline["threads"] if baseline else None
                idle, rss, threads = wait_idle(pid, args.idle_timeout, want)
                row.update(rss_kib=rss, threads=threads)
                if not idle:
                    failures.append(f"not idle within {args.idle_timeout:g} s")
                if baseline is None:
                    baseline = {"rss_kib": rss, "threads": threads}
                else:
                    limit = max(baseline["rss_kib"] * (1 + args.rss_tolerance),
                                baseline["rss_kib"] + args.rss_slack_kib)
                    if rss > limit:
                        failures.append(f"rss {rss} KiB > {limit:.0f} KiB")
                    if threads != baseline["threads"]:
                        failures.append(f"threads {threads} != {baseline['threads']}")
            row["failures"] = failures
            rows.append(row)
            label = f"{number}{'w' if number == 0 else ''}"
            print(fmt.format(label, row["clients"], row["calls"], row["wrong"], row["errors"],
                             row["rss_kib"] if row["rss_kib"] is not None else "-",
                             row["threads"] if row["threads"] is not None else "-", row["peak_threads"],
                             row["contexts"],
                             "ok" if not failures else "FAIL " + "; ".join(failures)), flush=True)
            for problem in row["problems"][:5]:
                print(f"      {problem}")
            if not server.alive():
                break
    finally:
        server.stop()
    failed = sum(1 for r in rows if r["failures"]) + (args.rounds - len(rows))
    passed = len(rows) - sum(1 for r in rows if r["failures"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"clients": args.clients, "seconds": args.seconds, "rounds": args.rounds,
                       "threads": args.threads, "rss_tolerance": args.rss_tolerance,
                       "rss_slack_kib": args.rss_slack_kib,
                       "baseline": baseline, "rows": rows, "passed": passed, "failed": failed,
                       "logs": log_dir}, f, indent=1)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
