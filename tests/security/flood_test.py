#!/usr/bin/env python3
"""A flood of UCX endpoints that never say rgpu's transport hello
(docs/security.md, "Before the hello"): rgpud, on loopback with its log in a
file and low limits for connections before the hello, must

- refuse those past its limits, and say so in its log;
- keep serving a session that was open before the flood, every byte right;
- take a new client again once the flood is gone (within the hello time
  limit);
- stop cleanly on SIGTERM afterwards (exit status 0).

Every wait is bounded; the flood stays at a size UCX 1.13 itself survives
(docs/security.md says where it does not)."""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from script_checks import check, failures, stop, wait_for


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--peer", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rgpu-flood-")
    log_path = os.path.join(work, "rgpud.log")
    env = dict(os.environ, UCX_TLS="tcp", RGPU_CPU_DEVICE_MEMORY="256M")
    for k in ("RGPU_AUTH_TOKEN", "RGPU_AUTH_TOKEN_FILE", "RGPU_ERRORS"):
        env.pop(k, None)
    with open(log_path, "w") as log:
        rgpud = subprocess.Popen([os.path.join(args.bin, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu",
                                  "--limit", "accepting=24", "--limit", "accepting-per-address=16",
                                  "--limit", "hello-timeout-ms=2000"],
                                 stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        m = wait_for(log_path, r"^rgpud listening on (\S+)", 30)
        if not m:
            sys.exit("rgpud did not start:\n" + open(log_path).read())
        server = m.group(1)
        client_env = dict(env, LD_PRELOAD=args.library, RGPU_SERVER=server, RGPU_CONNECT_TIMEOUT_MS="8000")

        steady = subprocess.Popen([args.peer, "steady"], env=client_env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = steady.stdout.readline()
        check(first.strip() == "connected", "a session opens before the flood", first)

        # 150 endpoints from one address, held 4 s, never a hello.
        flood_env = dict(env, UCX_RNDV_SCHEME="get_zcopy")  # as rgpu's transport configures UCX
        flood = subprocess.Popen([args.peer, "flood", server, "150", "4"], env=flood_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        refused = wait_for(log_path, r"event=refuse reason=pre_hello_limit source=127\.0\.0\.1 refused=(\d+)", 20)
        check(refused is not None, "rgpud refuses the endpoints past its limits, and logs it",
              open(log_path).read()[-2000:])

        steady.stdin.write("go\n")
        steady.stdin.flush()
        out, _ = steady.communicate(timeout=60)
        check(steady.returncode == 0 and "PASS steady" in out,
              "the open session is served through the flood, every byte right", out)

        flood_out, _ = flood.communicate(timeout=60)
        check("flood: 150 endpoints" in flood_out, "the flood made its endpoints", flood_out)
        check(rgpud.poll() is None, "rgpud is still running after the flood", open(log_path).read()[-3000:])

        # A new client gets in once the flood's endpoints are gone (they time
        # out 2 s after their request; the client retries for 8 s).
        start = time.time()
        late = subprocess.run([args.peer, "steady"], env=client_env, input="go\n", capture_output=True, text=True,
                              timeout=60)
        check(late.returncode == 0 and "PASS steady" in late.stdout,
              f"a new client is served after the flood (in {time.time() - start:.1f} s)",
              late.stdout + late.stderr)
    finally:
        status = stop(rgpud)
    check(status == 0, f"rgpud stops cleanly on SIGTERM after the flood (status {status})",
          open(log_path).read()[-3000:])
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
