"""Instructions per operation from benchmarks/instructions.sh's callgrind
outputs: OUT/OP-N/{client,server}.cg-TT (one file per thread) for N and 2N
operations; the difference divided by N.

Usage: instructions_summary.py OUT N OP...
Prints a table and writes OUT/instructions.json."""
import glob
import json
import re
import subprocess
import sys

UCX = re.compile(r"/libuc[pstm][^/]*$|/ucx/libuct_[^/]*$")
LINE = re.compile(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+(\S.*?)(?:\s\[(.*)\])?\s*$")


def split(prefix):
    """(work, UCX's part of it, spinning on locks) of one run. Spinning is
    waiting for a lock another thread holds (UCX's worker lock, which the
    progress thread and a caller take in turn): how much depends on timing,
    so it is kept apart from the work."""
    work = ucx = spin = 0
    for path in sorted(glob.glob(prefix + "-*")):
        text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                              capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            m = LINE.match(line)
            if not m or "PROGRAM TOTALS" in line:
                continue
            ir = int(m.group(1).replace(",", ""))
            if "pthread_spin_lock" in m.group(2):
                spin += ir
                continue
            work += ir
            if m.group(3) and UCX.search(m.group(3)):
                ucx += ir
    return work, ucx, spin


def main():
    out, count, ops = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    rows = []
    for op in ops:
        row = {"op": op, "count": count}
        for side in ("client", "server"):
            a = split(f"{out}/{op}-{count}/{side}.cg")
            b = split(f"{out}/{op}-{2 * count}/{side}.cg")
            work, ucx, spin = ((y - x) / count for x, y in zip(a, b))
            row[side] = {"per_op": round(work), "ucx_per_op": round(ucx), "lock_spin_per_op": round(spin)}
        rows.append(row)
    with open(f"{out}/instructions.json", "w") as f:
        json.dump({"unit": "instructions per operation (callgrind Ir); lock spinning apart", "ops": rows}, f,
                  indent=1)
    print(f"{'operation':10} {'client':>10} {'of it UCX':>10} {'server':>10} {'of it UCX':>10} "
          f"{'rest, both':>11} {'lock spin c/s':>16}")
    for r in rows:
        c, s = r["client"], r["server"]
        rest = c["per_op"] - c["ucx_per_op"] + s["per_op"] - s["ucx_per_op"]
        spin = f"{c['lock_spin_per_op']:,}/{s['lock_spin_per_op']:,}"
        print(f"{r['op']:10} {c['per_op']:10,} {c['ucx_per_op']:10,} {s['per_op']:10,} {s['ucx_per_op']:10,} "
              f"{rest:11,} {spin:>16}")


if __name__ == "__main__":
    main()
