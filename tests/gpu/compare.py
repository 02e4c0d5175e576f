"""Judges one run's results against another's, for tests/gpu/run.sh.

  compare.py arrays REMOTE_DIR LOCAL_DIR --rtol R --atol A
      every LOCAL_DIR/NAME.f32 (raw float32, written by torch_probe.py
      --dump) against REMOTE_DIR/NAME.f32: the same length, and element by
      element |remote - local| <= A + R * |local|.
  compare.py losses REMOTE.json LOCAL.json --rtol R
      the per-step losses of two cnn_train.py runs: the same number, all
      finite, and |remote - local| <= R * |local| at every step.

Prints one line (what was compared, the largest difference, the tolerance)
and exits 0 when everything is within it, 1 otherwise. Standard library
only.
"""

import argparse
import array
import json
import math
import os
import sys


def read_f32(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def arrays(args):
    names = sorted(n[:-4] for n in os.listdir(args.local) if n.endswith(".f32")) if os.path.isdir(args.local) else []
    if not names:
        return False, "no results in %s" % args.local
    parts, ok = [], True
    for name in names:
        rpath = os.path.join(args.remote, name + ".f32")
        if not os.path.exists(rpath):
            parts.append("%s: no remote result" % name)
            ok = False
            continue
        r, l = read_f32(rpath), read_f32(os.path.join(args.local, name + ".f32"))
        if len(r) != len(l):
            parts.append("%s: %d remote values, %d local" % (name, len(r), len(l)))
            ok = False
            continue
        worst, bad = 0.0, 0
        for a, b in zip(r, l):
            d = abs(a - b)
            if not d <= args.atol + args.rtol * abs(b):  # also catches NaN
                bad += 1
            if d > worst or d != d:
                worst = d
        ok = ok and bad == 0
        parts.append("%s: max |remote-local| %.3g, %d of %d outside" % (name, worst, bad, len(l)))
    return ok, "; ".join(parts) + " (tolerance %g + %g*|local|)" % (args.atol, args.rtol)


def losses(args):
    try:
        r = json.load(open(args.remote))["losses"]
        l = json.load(open(args.local))["losses"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return False, "no losses to compare (%s)" % e
    if not r or len(r) != len(l):
        return False, "%d remote losses, %d local" % (len(r), len(l))
    if not all(math.isfinite(x) for x in r + l):
        return False, "a loss is not finite"
    rel = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(r, l)]
    worst = max(range(len(rel)), key=lambda i: rel[i])
    ok = rel[worst] <= args.rtol
    return ok, "%d steps: max relative loss difference %.3g (step %d), bit-equal %s (tolerance %g)" % (
        len(r), rel[worst], worst, r == l, args.rtol)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["arrays", "losses"])
    ap.add_argument("remote")
    ap.add_argument("local")
    ap.add_argument("--rtol", type=float, required=True)
    ap.add_argument("--atol", type=float, default=0.0)
    args = ap.parse_args()
    ok, line = (arrays if args.what == "arrays" else losses)(args)
    print(("within tolerance: " if ok else "OUTSIDE tolerance: ") + line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
