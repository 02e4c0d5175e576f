#!/usr/bin/env python3
"""Checks a full ctest run's log against tests/expected-count.

  check-test-count.py CTEST_LOG EXPECTED_FILE

CTEST_LOG is what ctest wrote with --output-log for the whole suite. From it:
the total ("... tests failed out of N") and the tests that did not run
(listed after "The following tests did not run:", each "(Skipped)" or
"(Disabled)"). Tests run = total - not run.

EXPECTED_FILE holds "min_run N" (a floor: other changes add tests, so more
is fine; fewer means coverage vanished) and "skip NAME" lines for the tests
that skip by design in every run, each with its reason after a "#". It fails
(exit 1) when fewer than N ran, when a test not named there was skipped or
disabled, or when the log has no ctest summary. Standard library only.
"""

import re
import sys


def read_expected(path):
    floor, skips = None, set()
    for raw in open(path):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, value = line.partition(" ")
        value = value.strip()
        if key == "min_run" and value.isdigit():
            floor = int(value)
        elif key == "skip" and value:
            skips.add(value)
        else:
            raise SystemExit("check-test-count: %s: cannot read %r" % (path, raw.rstrip()))
    if floor is None:
        raise SystemExit("check-test-count: %s has no min_run line" % path)
    return floor, skips


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    log_path, expected_path = sys.argv[1:]
    floor, allowed = read_expected(expected_path)
    text = open(log_path, errors="replace").read()
    totals = re.findall(r"tests passed, \d+ tests? failed out of (\d+)", text)
    if not totals:
        print("check-test-count: no ctest summary in %s" % log_path)
        return 1
    total = int(totals[-1])
    not_run = []
    if "The following tests did not run:" in text:
        block = text.rsplit("The following tests did not run:", 1)[1]
        for line in block.splitlines()[1:]:
            m = re.match(r"\s*\d+ - (.*) \((Skipped|Disabled)\)\s*$", line)
            if not m:
                break
            not_run.append((m.group(1), m.group(2)))
    ran = total - len(not_run)
    unexpected = [(n, why) for n, why in not_run if n not in allowed]
    ok = True
    print("check-test-count: %d tests, %d did not run (%d of them expected), %d ran; at least %d expected" % (
        total, len(not_run), len(not_run) - len(unexpected), ran, floor))
    if ran < floor:
        ok = False
        print("check-test-count: FAILED: %d tests ran, fewer than the %d of %s: coverage was lost (a missing tool,"
              " a suite not configured?); if tests were removed on purpose, lower min_run there" % (
                  ran, floor, expected_path))
    for name, why in unexpected:
        ok = False
        print("check-test-count: FAILED: %s did not run (%s); a skip must be fixed or named in %s with its reason" % (
            name, why, expected_path))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
