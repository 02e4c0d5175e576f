"""`rgpu doctor` against what it diagnoses: the embedded rgpud (nothing
wrong), an address where nobody listens, a server whose key the client lacks,
and a pool of CPU-device servers asked for NVIDIA devices (each problem
named with its fix, exit status 1), then the same pool asked for its kind.

Usage: doctor_test.py BIN_DIR (rgpu, rgpud, rgpu-pool, rgpu-doctor-probe)."""
import os
import re
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from script_checks import check, failures, wait_for  # noqa: E402

BIN = sys.argv[1]
ENV = dict(os.environ, UCX_TLS="tcp")
for k in ("RGPU_SERVER", "RGPU_POOL", "RGPU_AUTH_TOKEN", "RGPU_AUTH_TOKEN_FILE", "RGPU_TENANT", "RGPU_POOL_KIND"):
    ENV.pop(k, None)


def doctor(*args, env=None):
    r = subprocess.run([os.path.join(BIN, "rgpu"), "doctor", *args], env=env or ENV, capture_output=True,
                       text=True, timeout=150)
    return r.returncode, r.stdout + r.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv, log, env=None):
    return subprocess.Popen(argv, env=env or ENV, stdout=log, stderr=subprocess.STDOUT)


with tempfile.TemporaryDirectory() as tmp:
    procs = []
    try:
        # 1. Nothing wrong: rgpu run's embedded rgpud on the CPU device.
        rc, out = doctor("--device", "cpu")
        check(rc == 0, "embedded: exit 0", out)
        check("no problems found" in out, "embedded: no problems", out)
        check(re.search(r"libraries\s+\d+ of \d+ names resolve to rgpu's", out) is not None,
              "embedded: the libraries a program loads are named", out)
        check(re.search(r"libcuda\.so\.1 -> ", out) is None, "embedded: libcuda.so.1 is rgpu's", out)
        check(re.search(r"authenticated\s+as tenant default", out) is not None, "embedded: authenticated", out)
        check(re.search(r"protocol\s+\d+ \(the server speaks \d+-\d+\)", out) is not None,
              "embedded: protocol and the server's range", out)
        check(re.search(r"devices\s+1\n\s+0: rgpu CPU device 0, [\d.]+ GiB, compute capability \d\.\d", out)
              is not None, "embedded: the session's device", out)
        check(re.search(r"round trip\s+p50 [\d.]+ us, p99 [\d.]+ us over 200 4-byte", out) is not None,
              "embedded: round trip measured", out)
        check(re.search(r"transports\s+.*tcp \(", out) is not None, "UCX's transports listed", out)
        check(re.search(r"RDMA\s+", out) is not None, "RDMA said", out)

        # 2. Nobody listens there.
        rc, out = doctor("--server", "127.0.0.1:%d" % free_port())
        check(rc == 1, "no server: exit 1", out)
        check("a program's cuInit would fail" in out and "fix: " in out, "no server: problem and fix", out)

        # 3. A server with keys, and a client without its key.
        keys = os.path.join(tmp, "rgpud.keys")
        with open(keys, "w") as f:
            f.write("team-a 0123456789abcdef0123456789abcdef\n")
        os.chmod(keys, 0o600)
        log = open(os.path.join(tmp, "rgpud.log"), "w")
        procs.append(start([os.path.join(BIN, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu",
                            "--auth-file", keys], log))
        m = wait_for(log.name, r"rgpud listening on (\S+)", 30)
        check(m is not None, "keyed rgpud started")
        if m:
            rc, out = doctor("--server", m.group(1))
            check(rc == 1, "without the key: exit 1", out)
            check("RGPU_AUTH_TOKEN_FILE" in out, "without the key: the fix names the key file", out)
            token = os.path.join(tmp, "team-a.key")
            with open(token, "w") as f:
                f.write("0123456789abcdef0123456789abcdef\n")
            os.chmod(token, 0o600)
            rc, out = doctor("--server", m.group(1),
                             env=dict(ENV, RGPU_TENANT="team-a", RGPU_AUTH_TOKEN_FILE=token))
            check(rc == 0 and re.search(r"authenticated\s+as tenant team-a", out) is not None,
                  "with the key: authenticated as its tenant", out)

        # 4. A pool of CPU-device servers, asked for the default kind.
        pool_key = os.path.join(tmp, "pool.key")
        with open(pool_key, "w") as f:
            f.write("pool-secret-0123456789\n")
        os.chmod(pool_key, 0o600)
        plog = open(os.path.join(tmp, "pool.log"), "w")
        port = free_port()
        procs.append(start([os.path.join(BIN, "rgpu-pool"), "--listen", "127.0.0.1:%d" % port,
                            "--key-file", pool_key], plog))
        check(wait_for(plog.name, r"listening", 30) is not None, "rgpu-pool started", open(plog.name).read())
        slog = open(os.path.join(tmp, "pooled.log"), "w")
        procs.append(start([os.path.join(BIN, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu",
                            "--pool", "127.0.0.1:%d" % port, "--pool-key-file", pool_key, "--pool-id", "cpu-a"],
                           slog, env=dict(ENV, RGPU_LOG_LEVEL="info")))
        check(wait_for(slog.name, r"registered with pool", 30) is not None, "rgpud registered",
              open(slog.name).read())
        rc, out = doctor("--pool", "127.0.0.1:%d" % port)
        check(rc == 1, "pool, default kind: exit 1", out)
        check("0 devices of kind nvidia" in out and "RGPU_POOL_KIND=cpu" in out,
              "pool, default kind: the problem and the fix", out)
        rc, out = doctor("--pool", "127.0.0.1:%d" % port, env=dict(ENV, RGPU_POOL_KIND="cpu"))
        check(rc == 0, "pool, kind cpu: exit 0", out)
        check(re.search(r"answers\s+yes: 1 servers, 1 devices \(1 cpu\)", out) is not None,
              "pool, kind cpu: the pool's servers and devices", out)
        check(re.search(r"devices\s+1\n", out) is not None, "pool, kind cpu: a session through a lease", out)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
