"""What the paired benchmark scripts (ab_latency.sh, integrity_cost.sh)
share: reading their JSON lines and printing figures of two sides measured
in turns, with the ratio B/A taken round by round."""
import json
import statistics


def rows(path):
    """The JSON objects of a file of JSON lines."""
    return [json.loads(line) for line in open(path) if line.strip()]


def print_ratios(a, b, title):
    """`a` and `b`: one dict per round, figure name to value. Prints each
    figure's median on either side and the median, least and most of the
    rounds' ratios B/A: the spread is the run's own noise, and a difference
    inside it is no difference."""
    width = max([len(title)] + [len(k) for k in a[0]])
    print(f"{title:<{width}} {'A (median)':>12} {'B (median)':>12} {'B/A median':>11} {'B/A min..max':>14}")
    for key in a[0]:
        ra = [r[key] for r in a]
        rb = [r[key] for r in b]
        ratios = [y / x for x, y in zip(ra, rb)]
        print(f"{key:<{width}} {statistics.median(ra):>12.2f} {statistics.median(rb):>12.2f} "
              f"{statistics.median(ratios):>11.3f} {min(ratios):>6.3f}..{max(ratios):<6.3f}")
