#!/usr/bin/env python3
"""A peer on the path rewrites the bytes of an established session
(docs/security.md, "Integrity after the handshake"). rewriter.so, preloaded
into the client, changes a marker in everything the client sends over its
sockets (UCX over tcp), after rgpu has sealed it. tamper_client copies 1 MiB
of markers to the device and back. Against rgpud on loopback, with keys:

- --integrity off: the copy comes back changed and nothing notices: the
  attack works on an unsealed session (and the rewriter is shown to work);
- --integrity on: the copy fails, rgpud logs the failed check and ends that
  session, the rewriter did change bytes, and rgpud then serves a clean
  client whose copy comes back the same;
- a clean client against --integrity on gets its bytes back the same;
- rgpud stops cleanly on SIGTERM each time."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from script_checks import check, failures, stop, wait_for


def run_client(args, server, env, rewrite):
    client_env = dict(env, LD_PRELOAD=(args.rewriter + ":" if rewrite else "") + args.library,
                      RGPU_SERVER=server, RGPU_CONNECT_TIMEOUT_MS="8000")
    return subprocess.run([args.client], env=client_env, capture_output=True, text=True, timeout=120)


def with_rgpud(args, work, integrity, body):
    log_path = os.path.join(work, f"rgpud-{integrity}.log")
    env = dict(os.environ, UCX_TLS="tcp", RGPU_CPU_DEVICE_MEMORY="256M", RGPU_AUTH_TOKEN="tamper-test-key")
    for k in ("RGPU_AUTH_TOKEN_FILE", "RGPU_ERRORS", "RGPU_INTEGRITY", "LD_PRELOAD"):
        env.pop(k, None)
    with open(log_path, "w") as log:
        rgpud = subprocess.Popen([os.path.join(args.bin, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu",
                                  "--integrity", integrity],
                                 stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        m = wait_for(log_path, r"^rgpud listening on (\S+)", 30)
        if not m:
            sys.exit("rgpud did not start:\n" + open(log_path).read())
        body(m.group(1), env, log_path)
    finally:
        status = stop(rgpud)
    check(status == 0, f"rgpud --integrity {integrity} stops cleanly on SIGTERM (status {status})",
          open(log_path).read()[-3000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--rewriter", required=True)
    ap.add_argument("--client", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rgpu-tamper-")

    def unsealed(server, env, log_path):
        r = run_client(args, server, env, rewrite=True)
        check(r.returncode == 3 and "changed" in r.stdout,
              "unsealed (--integrity off), the rewritten bytes reach the device unnoticed", r.stdout + r.stderr)
        check("rewriter: changed 0 markers" not in r.stderr, "the rewriter changed markers on the wire", r.stderr)

    def sealed(server, env, log_path):
        r = run_client(args, server, env, rewrite=False)
        check(r.returncode == 0 and "same" in r.stdout, "a clean sealed session copies its bytes back the same",
              r.stdout + r.stderr)
        r = run_client(args, server, env, rewrite=True)
        check(r.returncode == 4 and "error=" in r.stdout,
              "sealed (--integrity on), the rewritten copy fails instead of landing", r.stdout + r.stderr)
        check("rewriter: changed 0 markers" not in r.stderr and "rewriter: changed" in r.stderr,
              "the rewriter changed markers on the wire", r.stderr)
        m = wait_for(log_path, r"integrity check failed: the payload of message \d+ was changed on the way", 10)
        check(m is not None, "rgpud logs the failed check and ends the session", open(log_path).read()[-3000:])
        r = run_client(args, server, env, rewrite=False)
        check(r.returncode == 0 and "same" in r.stdout, "rgpud goes on serving a clean client afterwards",
              r.stdout + r.stderr)

    try:
        with_rgpud(args, work, "off", unsealed)
        with_rgpud(args, work, "on", sealed)
    finally:
        if not failures:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
