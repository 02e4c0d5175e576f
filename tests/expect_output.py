#!/usr/bin/env python3
"""Runs a test's program and judges it by its exit status and its output.

  expect_output.py [--status N] --pattern REGEX [--pattern REGEX ...] -- CMD ARGS...

ctest ignores a program's exit status once a test has a
PASS_REGULAR_EXPRESSION, so a program that prints its PASS line and then
crashes (in its teardown, at exit) would pass. A test registered through this
wrapper instead passes only when CMD exits with status N (default 0) and
every REGEX (Python syntax, re.MULTILINE) is found in its output, stdout and
stderr together, as ctest sees them. The output is passed through, followed
by one line saying what was missing.
"""

import argparse
import re
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        print("expect_output: usage: expect_output.py [--status N] --pattern REGEX... -- CMD ARGS...", file=sys.stderr)
        return 2
    cut = argv.index("--")
    ap = argparse.ArgumentParser(prog="expect_output.py")
    ap.add_argument("--status", type=int, default=0)
    ap.add_argument("--pattern", action="append", required=True)
    args = ap.parse_args(argv[:cut])
    cmd = argv[cut + 1:]
    if not cmd:
        print("expect_output: no command", file=sys.stderr)
        return 2
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.decode("utf-8", "replace")
    sys.stdout.write(out)
    problems = []
    if proc.returncode != args.status:
        how = "was killed by signal %d" % -proc.returncode if proc.returncode < 0 else "exited with status %d" % proc.returncode
        problems.append("%s %s, want %d" % (cmd[0], how, args.status))
    for p in args.pattern:
        if not re.search(p, out, re.MULTILINE):
            problems.append("no output matches %r" % p)
    if problems:
        print("expect_output: FAILED: " + "; ".join(problems))
        return 1
    print("expect_output: passed (exit status %d, %d pattern(s) found)" % (proc.returncode, len(args.pattern)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
