#!/usr/bin/env python3
"""The usage report as a browser shows it.

Generates a day of pool history (the real scheduler on simulated time), runs
`rgpu pool report --since 24h --json --html`, loads the page in headless
chromium, and checks what chromium parsed (--dump-dom) against the JSON:
the tenant and device tables hold the same numbers, the four SVG plots are
there with one point per bucket and bars labelled with the tenants'
GPU-hours, and nothing outside the page is referenced. A screenshot checks
that the page renders to something other than a blank canvas.

Exit 77 (ctest's skip) when chromium is not installed.
"""
import argparse
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

TIMEOUT_S = 60


class Dom(html.parser.HTMLParser):
    """Just enough of the DOM: elements with their attributes, parent chain
    and text."""

    def __init__(self):
        super().__init__()
        self.nodes = []
        self.stack = []

    def handle_starttag(self, tag, attrs):
        node = {"tag": tag, "attrs": dict(attrs), "text": "", "parents": list(self.stack), "children": []}
        if self.stack:
            self.stack[-1]["children"].append(node)
        self.nodes.append(node)
        if tag not in ("meta", "rect", "line", "polyline", "br", "img", "input", "link"):
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1]["tag"] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        for node in self.stack:
            node["text"] += data

    def find(self, tag=None, **attrs):
        out = []
        for n in self.nodes:
            if tag and n["tag"] != tag:
                continue
            if all(n["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(n)
        return out


def inside(node, tag, **attrs):
    return any(p["tag"] == tag and all(p["attrs"].get(k) == v for k, v in attrs.items()) for p in node["parents"])


def cells(row):
    return {c["attrs"].get("class"): c["text"].strip() for c in row["children"] if c["tag"] == "td"}


def png_pixels_vary(path):
    """Decodes the PNG's image data (no library needed: zlib) and says
    whether it holds more than a handful of distinct byte values."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return False, "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    distinct = len(set(raw[:: max(1, len(raw) // 200000)]))
    return distinct > 16, f"{width}x{height}, {distinct} distinct byte values"


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, timeout=TIMEOUT_S, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--rgpu", required=True)
    ap.add_argument("--chromium", default="")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()

    chromium = a.chromium if a.chromium and os.path.exists(a.chromium) else shutil.which("chromium")
    if not chromium:
        print("SKIP: chromium is not installed (Debian package chromium; scripts/setup.sh lists it)")
        return 77

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    hist = os.path.join(a.work, "history.jsonl")
    out_json = os.path.join(a.work, "report.json")
    out_html = os.path.join(a.work, "report.html")
    run([a.gen, hist, "--hours", "24"])
    run([a.rgpu, "pool", "report", "--history", hist, "--since", "24h", "--json", out_json, "--html", out_html])
    with open(out_json) as f:
        rep = json.load(f)
    with open(out_html) as f:
        page = f.read()

    # Self-contained: no scripts, nothing fetched from elsewhere.
    for bad in ("<script", "src=", "href=", "@import", "url("):
        assert bad not in page, f"page references outside itself: {bad}"

    browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--user-data-dir=" + os.path.join(a.work, "profile")]
    dom_text = run(browser + ["--dump-dom", "file://" + out_html], stdout=subprocess.PIPE,
                   stderr=subprocess.DEVNULL).stdout.decode()
    dom = Dom()
    dom.feed(dom_text)

    # The tenant table: one row per tenant of the JSON, same numbers.
    tenants = {t["tenant"]: t for t in rep["tenants"]}
    assert set(tenants) == {"inference", "training", "research"}, tenants.keys()
    rows = [r for r in dom.find("tr") if inside(r, "table", id="tenants") and "data-tenant" in r["attrs"]]
    shown = {r["attrs"]["data-tenant"]: cells(r) for r in rows}
    assert set(shown) == set(tenants) | {"*"}, shown.keys()
    for name, t in list(tenants.items()) + [("*", rep["total"])]:
        c = shown[name]
        assert c["leases"] == str(t["leases"]), (name, c, t)
        assert c["leased"] == f"{t['gpu_hours_leased']:.2f}", (name, c["leased"], t["gpu_hours_leased"])
        assert c["busy"] == f"{t['gpu_hours_busy']:.2f}", (name, c["busy"], t["gpu_hours_busy"])
        assert c["ratio"] == f"{100 * t['busy_ratio']:.1f}%", (name, c["ratio"], t["busy_ratio"])
        assert c["p95"] == f"{t['queue_wait_s']['p95']:.1f}", (name, c["p95"], t["queue_wait_s"])
        assert c["gave_up"] == str(t["gave_up"]), (name, c, t)
    # The trace's tenants keep 30%, 90% and 60% of what they lease busy.
    for name, want in (("inference", "30.0%"), ("training", "90.0%"), ("research", "60.0%")):
        assert shown[name]["ratio"] == want, (name, shown[name]["ratio"])

    # The device table: every device of the JSON.
    drows = [r for r in dom.find("tr") if inside(r, "table", id="devices") and "data-device" in r["attrs"]]
    assert len(drows) == len(rep["devices"]) == 10, (len(drows), len(rep["devices"]))
    for r, d in zip(drows, rep["devices"]):
        c = cells(r)
        assert (c["server"], c["device"]) == (d["server"], str(d["device"])), (c, d)
        assert c["leased"] == f"{d['gpu_hours_leased']:.2f}" and c["busy"] == f"{d['gpu_hours_busy']:.2f}", (c, d)

    # The plots: four inline SVGs; each line has one point per bucket.
    buckets = len(rep["over_time"])
    assert buckets == 48, buckets
    svgs = {s["attrs"].get("id") for s in dom.find("svg")}
    assert {"plot-roi", "plot-pool", "plot-tenants", "plot-queue"} <= svgs, svgs
    lines = {}
    for pl in dom.find("polyline"):
        plot = next(p["attrs"]["id"] for p in reversed(pl["parents"]) if p["tag"] == "svg")
        lines[(plot, pl["attrs"]["data-series"])] = pl["attrs"]["points"].split()
    for key in [("plot-pool", "reporting"), ("plot-pool", "leased"), ("plot-pool", "busy"),
                ("plot-queue", "queued")] + [("plot-tenants", n) for n in tenants]:
        assert key in lines, (key, lines.keys())
        assert len(lines[key]) == buckets, (key, len(lines[key]))
    # A point's height follows its value: the busiest bucket is drawn highest.
    busy = [b["busy_gpus"] for b in rep["over_time"]]
    ys = [float(p.split(",")[1]) for p in lines[("plot-pool", "busy")]]
    assert ys[busy.index(max(busy))] == min(ys), "the busy line's peak is not where the data's is"
    # The bars carry the tenants' GPU-hours as labels.
    for g in dom.find("g", **{"class": "bars"}):
        name = g["attrs"]["data-tenant"]
        labels = {t["attrs"]["class"]: t["text"] for t in dom.nodes if t["tag"] == "text" and any(p is g for p in t["parents"])
                  and t["attrs"].get("class", "").startswith("value")}
        assert labels["value leased"] == f"{tenants[name]['gpu_hours_leased']:.2f}", (name, labels)
        assert labels["value busy"] == f"{tenants[name]['gpu_hours_busy']:.2f}", (name, labels)

    # It renders: a screenshot that is not a blank page.
    shot = os.path.join(a.work, "report.png")
    run(browser + ["--window-size=1000,2200", "--screenshot=" + shot, "file://" + out_html],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    varied, what = png_pixels_vary(shot)
    assert varied, f"the screenshot looks blank: {what}"
    print(f"ok: {len(rows)} tenant rows, {len(drows)} device rows, {len(lines)} lines of {buckets} points, "
          f"screenshot {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
