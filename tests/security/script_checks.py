"""What the security scripts (flood_test.py, metrics_hold_test.py) share:
checks that are counted rather than fatal, and a bounded wait for a line in
a daemon's log."""
import re
import subprocess
import time

failures = []


def check(ok, what, detail=""):
    """Prints one check's outcome; a failed one is remembered in failures."""
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else "\n" + detail))
    if not ok:
        failures.append(what)


def wait_for(path, pattern, seconds):
    """The first match of `pattern` (multi-line) in the file at `path`,
    waiting up to `seconds` for it to appear; None past that."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        with open(path) as f:
            m = re.search(pattern, f.read(), re.M)
        if m:
            return m
        time.sleep(0.05)
    return None


def stop(proc, seconds=30):
    """Sends SIGTERM to a daemon still running and waits for it: its exit
    status, or "hung" when it had to be killed after `seconds`."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "hung"
