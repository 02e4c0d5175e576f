"""`rgpu session list` and `rgpu session end` against a real rgpud: a
running program's session listed with its tenant, device, memory and age,
under the admin key only; refused without the key, with a wrong one, with a
key file others may read, and by an rgpud started without --admin-key-file;
a second program's session ended by id (its program fails, the first goes
on); the list empties when the program ends.

Usage: session_test.py BIN_DIR METRICS_CLIENT"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from script_checks import check, failures, stop, wait_for  # noqa: E402

BIN, CLIENT = sys.argv[1], sys.argv[2]
ENV = dict(os.environ, UCX_TLS="tcp")
for k in ("RGPU_SERVER", "RGPU_POOL", "RGPU_AUTH_TOKEN", "RGPU_AUTH_TOKEN_FILE", "RGPU_TENANT",
          "RGPU_ADMIN_KEY_FILE"):
    ENV.pop(k, None)


def private_file(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def session(command, server, key_file=None, *extra):
    env = dict(ENV)
    if key_file:
        env["RGPU_ADMIN_KEY_FILE"] = key_file
    r = subprocess.run([os.path.join(BIN, "rgpu"), "session", command, *extra, "--server", server], env=env,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def session_list(server, key_file=None):
    return session("list", server, key_file)


def run_client(server, tenant_key, stop_file):
    return subprocess.Popen([os.path.join(BIN, "rgpu"), "run", "--server", server, "--", CLIENT, "120", stop_file],
                            env=dict(ENV, RGPU_TENANT="team-a", RGPU_AUTH_TOKEN_FILE=tenant_key),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_lines(server, key_file, n):
    """The session lines once there are `n` of them (within 60 s), else the last answer."""
    deadline = time.time() + 60
    while True:
        rc, out, err = session_list(server, key_file)
        lines = [l for l in out.splitlines() if l]
        if (rc == 0 and len(lines) == n) or time.time() > deadline:
            return lines, out + err
        time.sleep(0.2)


def start_rgpud(tmp, name, *args):
    log = open(os.path.join(tmp, name + ".log"), "w")
    proc = subprocess.Popen([os.path.join(BIN, "rgpud"), "--listen", "127.0.0.1:0", "--device", "cpu", *args],
                            env=ENV, stdout=log, stderr=subprocess.STDOUT)
    m = wait_for(log.name, r"rgpud listening on (\S+)", 30)
    check(m is not None, name + " started", open(log.name).read())
    return proc, m.group(1) if m else "127.0.0.1:1"


with tempfile.TemporaryDirectory() as tmp:
    procs = []
    try:
        keys = private_file(os.path.join(tmp, "rgpud.keys"), "team-a team-a-secret-0123456789\n")
        tenant_key = private_file(os.path.join(tmp, "team-a.key"), "team-a-secret-0123456789\n")
        admin_key = private_file(os.path.join(tmp, "admin.key"), "admin-secret-9876543210\n")
        rgpud, server = start_rgpud(tmp, "rgpud", "--auth-file", keys, "--admin-key-file", admin_key)
        procs.append(rgpud)

        rc, out, err = session_list(server, admin_key)
        check(rc == 0 and out == "", "no sessions: nothing listed", out + err)

        stop_file = os.path.join(tmp, "stop")
        program = run_client(server, tenant_key, stop_file)
        procs.append(program)
        line = None
        deadline = time.time() + 60
        while time.time() < deadline and line is None:
            rc, out, err = session_list(server, admin_key)
            # metrics_client holds 8 MiB once it runs.
            m = re.search(r"^(\d+)\s+team-a\s+0\s+8\.0 MiB\s+\d+s\s+(\S+)@\S+:(\d+) calls=(\d+)$", out, re.M)
            if rc == 0 and m:
                line = m
            else:
                time.sleep(0.2)
        check(line is not None, "the running program's session is listed: id, tenant, device, memory, age",
              out + err)
        if line:
            check("metrics_client" in line.group(2), "its program is named", line.group(0))
            check(int(line.group(4)) > 0, "its calls are counted", line.group(0))
            check(len(out.splitlines()) == 1, "one line per session", out)
            rc, out, err = session("list", server, admin_key, "--json")
            try:
                listed = json.loads(out)
            except ValueError:
                listed = None
            check(rc == 0 and isinstance(listed, list) and len(listed) == 1, "--json: an array of one session",
                  out + err)
            if listed:
                s = listed[0]
                check(str(s.get("id")) == line.group(1) and s.get("tenant") == "team-a" and s.get("devices") == [0]
                      and s.get("memory_bytes") == 8 << 20 and "metrics_client" in s.get("program", "")
                      and s.get("pid") == int(line.group(3)) and s.get("lease") == 0 and s.get("age_ms", -1) >= 0,
                      "--json: every field", out)

        rc, out, err = session_list(server)
        check(rc == 1 and "RGPU_ADMIN_KEY_FILE" in err and out == "", "without the key: refused, naming the fix",
              out + err)
        rc, out, err = session_list(server, tenant_key)
        check(rc == 1 and "wrong admin key" in err and out == "", "a tenant's key is not the admin key", out + err)
        readable = private_file(os.path.join(tmp, "readable.key"), "admin-secret-9876543210\n", 0o644)
        rc, out, err = session_list(server, readable)
        check(rc == 1 and "chmod 600" in err and out == "", "a key file others may read is refused", out + err)

        other, other_server = start_rgpud(tmp, "plain")
        procs.append(other)
        rc, out, err = session_list(other_server, admin_key)
        check(rc == 1 and "--admin-key-file" in err, "an rgpud without an admin key refuses operators", out + err)

        # A second program, ended by an operator: it fails, the first goes on.
        second = run_client(server, tenant_key, os.path.join(tmp, "never"))
        procs.append(second)
        lines, detail = wait_lines(server, admin_key, 2)
        check(len(lines) == 2, "two programs, two lines", detail)
        if len(lines) == 2 and line:
            second_id = [l.split()[0] for l in lines if l.split()[0] != line.group(1)][0]
            rc, out, err = session("end", server, admin_key, second_id)
            check(rc == 0 and re.match(r"ended %s\s+team-a\s+0\s" % second_id, out) is not None,
                  "rgpu session end prints the session it ended", out + err)
            try:
                second.wait(timeout=60)
            except subprocess.TimeoutExpired:
                second.kill()
            said = second.stdout.read()
            check(second.returncode not in (0, None), "the ended session's program fails",
                  str(second.returncode) + said)
            check("rgpud ended the session" in said and "ended by an operator" in said,
                  "the program is told why", said)
            lines, detail = wait_lines(server, admin_key, 1)
            check(len(lines) == 1 and lines[0].split()[0] == line.group(1), "the first program's session remains",
                  detail)
            rc, out, err = session("end", server, admin_key, second_id)
            check(rc == 1 and "no session " + second_id in err, "ending it again: no such session", out + err)
        rc, out, err = session("end", server, tenant_key, line.group(1) if line else "1")
        check(rc == 1 and "wrong admin key" in err, "a tenant's key ends nothing", out + err)
        rc, out, err = session("end", server, admin_key, "first")
        check(rc == 2 and "which session" in err, "end without an id: exit 2", out + err)

        open(stop_file, "w").close()
        try:
            program.wait(timeout=60)
        except subprocess.TimeoutExpired:
            program.kill()
        check(program.returncode == 0, "the program ran to its end", program.stdout.read())
        empty = False
        deadline = time.time() + 30
        while time.time() < deadline and not empty:
            rc, out, err = session_list(server, admin_key)
            empty = rc == 0 and out == ""
            if not empty:
                time.sleep(0.2)
        check(empty, "the ended session leaves the list", out + err)

        r = subprocess.run([os.path.join(BIN, "rgpu"), "session"], env=ENV, capture_output=True, text=True,
                           timeout=30)
        check(r.returncode == 2 and "usage: rgpu session list" in r.stderr, "no subcommand: usage, exit 2",
              r.stdout + r.stderr)
    finally:
        for p in procs:
            stop(p)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
