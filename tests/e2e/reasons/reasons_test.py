#!/usr/bin/env python3
"""The server's reasons on the client's terminal (docs/protocol.md, "Reasons").

Starts its own rgpud on the CPU device, on loopback, with its log in a file
(as on a separate GPU host), runs reasons_client against it in each mode and
checks what the client library printed on stderr: the reason the server
knows, once per distinct reason, naming the call, the kernel and the server;
nothing with RGPU_ERRORS=quiet. Then rgpu run: where the server's log is
when the command fails. Every wait is bounded."""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

failures = []


def check(ok, what, detail=""):
    if ok:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}\n{detail}")
        failures.append(what)


def start_rgpud(bin_dir, log_path, extra_args=()):
    log = open(log_path, "w")
    env = dict(os.environ, RGPU_CPU_DEVICE_MEMORY="1G", UCX_TLS="tcp")
    env.pop("RGPU_AUTH_TOKEN", None)
    env.pop("RGPU_AUTH_TOKEN_FILE", None)
    proc = subprocess.Popen([os.path.join(bin_dir, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu",
                             *extra_args], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(log_path) as f:
            m = re.search(r"^rgpud listening on (\S+)", f.read(), re.M)
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    with open(log_path) as f:
        sys.exit("rgpud did not start:\n" + f.read())


def run_client(args, client, library, server, mode, extra_env=None):
    env = dict(os.environ, LD_PRELOAD=library, RGPU_SERVER=server, UCX_TLS="tcp")
    env.pop("RGPU_ERRORS", None)
    env.pop("RGPU_AUTH_TOKEN", None)
    env.pop("RGPU_AUTH_TOKEN_FILE", None)
    env.update(extra_env or {})
    p = subprocess.run([client, mode], env=env, capture_output=True, text=True, timeout=120)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="folder of rgpud and rgpu")
    ap.add_argument("--library", required=True, help="librgpu.so")
    ap.add_argument("--client", required=True, help="reasons_client")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rgpu-reasons-")
    log_path = os.path.join(work, "rgpud.log")
    rgpud, server = start_rgpud(args.bin, log_path)
    prefix = f"rgpu: error from rgpud at {server}: "
    try:
        # A kernel the device refuses, launched twice: one line, naming the
        # call, the kernel, the instruction and the server.
        p = run_client(args, args.client, args.library, server, "refused")
        check(p.returncode == 0 and "PASS refused" in p.stdout, "refused: the client got CUDA_ERROR_NOT_SUPPORTED",
              p.stdout + p.stderr)
        want = (prefix + "CUDA_ERROR_NOT_SUPPORTED: cuLaunchKernel: kernel refused_kernel cannot run on the CPU "
                "device: unsupported instruction 'call.uni' (call to external function rgpu_test_no_such_function)")
        lines = [l for l in p.stderr.splitlines() if l.startswith("rgpu: error from")]
        check(len(lines) == 1 and lines[0].startswith(want), "refused: the reason, once", p.stderr)
        check("runtime module load failed" not in p.stderr, "refused: no misleading module-load line", p.stderr)

        # An illegal address: the kernel, the fault and the address; the
        # sticky error reported again prints nothing new.
        p = run_client(args, args.client, args.library, server, "illegal")
        check(p.returncode == 0 and "PASS illegal" in p.stdout, "illegal: the client got CUDA_ERROR_ILLEGAL_ADDRESS",
              p.stdout + p.stderr)
        lines = [l for l in p.stderr.splitlines() if l.startswith("rgpu: error from")]
        check(len(lines) == 1 and lines[0].startswith(
            prefix + "CUDA_ERROR_ILLEGAL_ADDRESS: kernel store_kernel: illegal address: illegal write of 4 bytes "
            "at 0x10"),
            "illegal: the kernel and the address, once", p.stderr)

        # A quota: the numbers.
        p = run_client(args, args.client, args.library, server, "quota", {"RGPU_REQUEST": "mem=64M"})
        check(p.returncode == 0 and "PASS quota" in p.stdout, "quota: the client got CUDA_ERROR_OUT_OF_MEMORY",
              p.stdout + p.stderr)
        check(prefix + "CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc: 33554432 bytes asked, past the session's memory "
              "quota on device 0: 67108864 bytes, 50331648 held" in p.stderr, "quota: the numbers", p.stderr)

        # A library call rgpu does not implement: its name and the workaround.
        p = run_client(args, args.client, args.library, server, "unimplemented")
        check(p.returncode == 0 and "PASS unimplemented" in p.stdout, "unimplemented: CUDNN_STATUS_NOT_SUPPORTED",
              p.stdout + p.stderr)
        want = ("rgpu: cudnnCTCLoss is not implemented by rgpu yet (CUDNN_STATUS_NOT_SUPPORTED); in PyTorch, "
                "torch.backends.cudnn.enabled = False runs without cuDNN")
        check(p.stderr.count(want) == 1, "unimplemented: the function and the workaround, once", p.stderr)

        # RGPU_ERRORS=quiet: the same failures, nothing printed.
        for mode in ("refused", "illegal", "unimplemented"):
            p = run_client(args, args.client, args.library, server, mode, {"RGPU_ERRORS": "quiet"})
            check(p.returncode == 0 and "rgpu: error from" not in p.stderr and "not implemented" not in p.stderr,
                  f"quiet: {mode} prints no reason", p.stdout + p.stderr)

        # The server logged the same refusals in its own file.
        with open(log_path) as f:
            log = f.read()
        check("refused_kernel" in log and "store_kernel" in log, "the server's log has them too", log[-2000:])

        # rgpu run says where the server's log is when the command fails.
        rgpu = os.path.join(args.bin, "rgpu")
        env = dict(os.environ, UCX_TLS="tcp")
        p = subprocess.run([rgpu, "run", "--server", server, "--", args.client, "exit-failing"], env=env,
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 3 and f"the server's log is on its host ({server})" in p.stderr,
              "rgpu run --server: where the log is", p.stderr)
        p = subprocess.run([rgpu, "run", "--server", server, "--", args.client, "exit-failing"],
                           env=dict(env, RGPU_SERVER_LOG=log_path), capture_output=True, text=True, timeout=120)
        check(p.returncode == 3 and f"rgpud's log is in {log_path}" in p.stderr,
              "rgpu run --server with RGPU_SERVER_LOG: that file", p.stderr)
        embedded_log = os.path.join(work, "embedded.log")
        p = subprocess.run([rgpu, "run", "--device", "cpu", "--server-log", embedded_log, "--", args.client,
                            "refused"], env=env, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and "the embedded rgpud's log" not in p.stderr, "rgpu run: nothing said on success",
              p.stderr)
        with open(embedded_log) as f:
            check("rgpud listening on" not in f.read() and os.path.getsize(embedded_log) > 0,
                  "rgpu run --server-log: the embedded rgpud's log went to the file", "")
        p = subprocess.run([rgpu, "run", "--device", "cpu", "--server-log", embedded_log, "--", args.client,
                            "exit-failing"], env=env, capture_output=True, text=True, timeout=120)
        check(p.returncode == 3 and f"the embedded rgpud's log is in {embedded_log}" in p.stderr,
              "rgpu run --server-log: where the log is", p.stderr)
        # Copies past the server's limit of bytes in flight wait for room
        # (back-pressure); one larger than the limit is refused, naming it.
        small_log = os.path.join(work, "rgpud-small.log")
        small, small_server = start_rgpud(args.bin, small_log, ("--limit", "inflight-bytes=8388608"))
        try:
            p = run_client(args, args.client, args.library, small_server, "backpressure")
            check(p.returncode == 0 and "PASS backpressure" in p.stdout,
                  "backpressure: 64 MiB of async copies through an 8 MiB limit, every byte right",
                  p.stdout + p.stderr)
            check(f"rgpu: error from rgpud at {small_server}: CUDA_ERROR_OUT_OF_MEMORY: cuMemcpyDtoH: a copy of "
                  "16777216 bytes is larger than the session's limit of bytes in flight, 8388608 bytes "
                  "(rgpud --limit inflight-bytes=N)" in p.stderr, "backpressure: the copy past the limit, named",
                  p.stderr)
        finally:
            small.terminate()
            small.wait(timeout=10)
    finally:
        rgpud.terminate()
        try:
            rgpud.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rgpud.kill()
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
