#!/usr/bin/env python3
"""The layering of docs/architecture.md, checked on the sources: a component
never includes a file of a component above it (by a relative path or a path
naming the folder). The generated pack headers live in protocol/generated/
so that the server never includes the client library's files.

Usage: layering_test.py <repository root>. Exits 1 listing each violation.
"""
import os
import re
import sys

# Lowest first, as in docs/architecture.md ("Layering"). cpu-libs sits
# beside server: it may use cpu-device, the server loads it by name only.
ORDER = ["common", "protocol", "transport", "fatbin", "cpu-device", "cpu-libs", "server", "client-shim", "tools"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Allowed upward edges, documented in docs/architecture.md.
ALLOWED = {("server", "cpu-device/include/rgpu/cpudev/extensions.h")}


def component_of(path):
    top = path.split(os.sep, 1)[0]
    return top if top in ORDER else None


def main():
    root = os.path.abspath(sys.argv[1])
    bad = []
    checked = 0
    for comp in ORDER:
        for dirpath, _, files in os.walk(os.path.join(root, comp)):
            for name in files:
                if not name.endswith((".h", ".hpp", ".cpp", ".c", ".inc")):
                    continue
                src = os.path.join(dirpath, name)
                rel_src = os.path.relpath(src, root)
                with open(src, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                checked += 1
                for inc in INCLUDE.findall(text):
                    target = None
                    if inc.startswith("."):
                        target = os.path.relpath(os.path.normpath(os.path.join(dirpath, inc)), root)
                    else:
                        for other in ORDER:
                            if inc.startswith(other + "/"):
                                target = inc
                    if target is None:
                        continue
                    other = component_of(target)
                    if other is None or other == comp:
                        continue
                    if ORDER.index(other) > ORDER.index(comp) and (comp, target) not in ALLOWED:
                        bad.append(f"{rel_src}: includes {inc} ({other} is above {comp})")
    if checked < 100:
        print(f"only {checked} source files found under {root}: wrong root?")
        return 1
    for b in bad:
        print(b)
    print(f"{checked} files checked, {len(bad)} upward includes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
