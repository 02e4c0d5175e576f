#!/usr/bin/env python3
"""Peers that try to hold rgpud's /metrics endpoint (docs/metrics.md,
"Limits"; docs/security.md): rgpud on loopback with --metrics, and

- 300 connections from six addresses (127.0.0.2-7) and 20 from the
  scraper's own (127.0.0.1), each sending part of a request and then one
  byte a second, the slow-headers attack;

while a scraper on 127.0.0.1 asks for /metrics 20 times. rgpud must

- answer every scrape with the registry's text (each within the scraper's
  own 5 s limit, the time figures printed);
- hold at most its connection limits at once: the connections past them
  are closed as newer ones arrive;
- cut every trickling connection once its request's deadline (5 s) has
  passed, although it kept sending;
- stop cleanly on SIGTERM afterwards (exit status 0).

Every wait is bounded."""

import argparse
import os
import select
import socket
import subprocess
import sys
import tempfile
import time

from script_checks import check, failures, stop, wait_for
import urllib.request


ADDRESSES = ["127.0.0.%d" % i for i in range(2, 8)]
PER_ADDRESS = 50
SAME_ADDRESS = 20
LIMIT_PER_ADDRESS = 16  # HttpOptions' defaults (common/include/rgpu/common/metrics_http.h)
LIMIT_ALL = 64
REQUEST_DEADLINE_S = 5


def open_slow(host, port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect((host, port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    s.setblocking(False)
    return s


def closed_by_server(s):
    """Whether the server has closed `s` (EOF or reset), without waiting."""
    try:
        r, _, _ = select.select([s], [], [], 0)
        if not r:
            return False
        return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError, OSError):
        return True


def trickle(sockets):
    """One byte more of a header line into every connection still open."""
    for s in sockets:
        if s.fileno() < 0:
            continue
        try:
            s.send(b"X")
        except (BlockingIOError, ConnectionResetError, BrokenPipeError, OSError):
            pass


def scrape(url):
    t = time.monotonic()
    with urllib.request.urlopen(url, timeout=5) as r:
        body = r.read().decode()
        return r.status, body, time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rgpu-metrics-hold-")
    log_path = os.path.join(work, "rgpud.log")
    env = dict(os.environ, UCX_TLS="tcp", RGPU_CPU_DEVICE_MEMORY="256M")
    with open(log_path, "w") as log:
        rgpud = subprocess.Popen([os.path.join(args.bin, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu",
                                  "--metrics", "127.0.0.1:0"],
                                 stdout=log, stderr=subprocess.STDOUT, env=env)
    slow = []
    try:
        m = wait_for(log_path, r"^rgpud metrics on (\S+):(\d+)", 30)
        if not m or not wait_for(log_path, r"^rgpud listening on ", 30):
            sys.exit("rgpud did not start:\n" + open(log_path).read())
        host, port = m.group(1), int(m.group(2))
        url = "http://%s:%d/metrics" % (host, port)
        status, body, _ = scrape(url)
        check(status == 200 and "rgpu_" in body, "a scrape before the attack is answered", body[:400])

        start = time.monotonic()
        for source in ADDRESSES:
            for _ in range(PER_ADDRESS):
                slow.append(open_slow(host, port, source))
        for _ in range(SAME_ADDRESS):
            slow.append(open_slow(host, port, "127.0.0.1"))
        print("opened %d slow connections in %.2f s" % (len(slow), time.monotonic() - start))

        # The scrapes, with every slow connection trickling between them.
        times = []
        errors = []
        for _ in range(20):
            trickle(slow)
            try:
                status, body, took = scrape(url)
                if status != 200 or "rgpu_" not in body:
                    errors.append("status %d" % status)
                times.append(took)
            except Exception as e:  # noqa: BLE001 (any failure to scrape is the finding)
                errors.append(repr(e))
            time.sleep(0.1)
        times.sort()
        if times:
            print("scrapes during the attack: %d answered, p50 %.1f ms, max %.1f ms" %
                  (len(times), 1000 * times[len(times) // 2], 1000 * times[-1]))
        check(not errors, "every scrape during the attack is answered", "; ".join(errors))

        open_now = [s for s in slow if not closed_by_server(s)]
        check(len(open_now) <= LIMIT_ALL,
              "at most %d connections are held (%d of %d still open)" % (LIMIT_ALL, len(open_now), len(slow)))
        by_source = {}
        for s in open_now:
            src = s.getsockname()[0]
            by_source[src] = by_source.get(src, 0) + 1
        check(all(n <= LIMIT_PER_ADDRESS for n in by_source.values()),
              "at most %d connections are held per address" % LIMIT_PER_ADDRESS, repr(by_source))

        # The ones still open keep trickling; each is cut once its request's
        # deadline has passed.
        deadline = time.monotonic() + REQUEST_DEADLINE_S + 5
        while time.monotonic() < deadline and any(not closed_by_server(s) for s in open_now):
            trickle(open_now)
            time.sleep(0.5)
        still = sum(1 for s in open_now if not closed_by_server(s))
        elapsed = time.monotonic() - start
        check(still == 0, "every trickling connection is cut after its deadline (%d open after %.1f s)" %
              (still, elapsed))

        status, body, _ = scrape(url)
        check(status == 200 and "rgpu_" in body, "a scrape after the attack is answered")
        check(rgpud.poll() is None, "rgpud is still running", open(log_path).read()[-2000:])
    finally:
        for s in slow:
            s.close()
        code = stop(rgpud)
    check(code == 0, "rgpud stops cleanly on SIGTERM (exit status %s)" % code, open(log_path).read()[-2000:])
    if failures:
        print("rgpud's log, last part:\n" + open(log_path).read()[-3000:])
        print("FAILED: " + ", ".join(failures))
        return 1
    print("PASS metrics_hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
