#!/usr/bin/env python3
"""Web-app scale benchmark: `grainlab serve` on synthetic traces of 10^4, 10^5,
10^6 grains, measured in headless Chromium (Debian's chromium + chromedriver).

Per size, side by side:
  answers s   launch of `grainlab serve` until its URL answers (the loading
              page: the run's facts and the analysis's steps as they start)
  ready s     launch until it prints that it serves the app (load + graph +
              metrics + layout: the analysis, done once)
  first s     page navigation until the grain graph and the problem count show
  threshold s a threshold typed into the page until the new count shows
  click s     a second threshold change (warm: cached layout, new colouring)
  server MiB  the server's peak resident memory (VmHWM) after those steps
  analysis MiB peak memory of the same analysis alone (`grainlab analyze --json`)
Targets (issue 8): first view <= 5 s after the server is ready at 10^6 grains,
a threshold change <= 1 s, server memory <= analysis peak + 1 GiB. Issue 31:
at 10^7 grains (--trace fib33.parquet) a first answer within 10 s.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

PY = sys.executable


def vmhwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def analysis_peak_mib(trace: Path) -> float:
    code = ("import grainlab as gl, resource, sys; gl.analyze(sys.argv[1]).summary; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([PY, "-c", code, str(trace)], capture_output=True, text=True,
                         check=True).stdout
    return int(out.strip().splitlines()[-1]) / 1024


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1500,950"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def wait(fn, timeout=120):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.02)
    raise TimeoutError


def _answers(url) -> bool:
    import urllib.request
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status == 200 and b"analyzing" in r.read()


def count(d) -> str:
    return d.find_element("id", "problem-count").text


def measure(trace: Path, d) -> dict:
    t0 = time.perf_counter()
    p = subprocess.Popen([PY, "-m", "grainlab.cli", "serve", "--port", "0", str(trace)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = None
        for line in p.stdout:
            m = re.search(r"progress at (http://\S+/)", line)
            if m:
                url = m.group(1)
                break
        wait(lambda: _answers(url), timeout=600)
        answers = time.perf_counter() - t0
        for line in p.stdout:
            if re.search(r"serving .* at (http://\S+/)", line):
                break
        ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        d.get(url + "?view=graph")
        wait(lambda: count(d).strip() and d.find_elements("css selector", "#graph-fig .main-svg"))
        wait(lambda: d.find_elements("css selector", "#graph-fig .plot-container"))
        # the page's first state is back when it has filled the threshold box
        # (typed before that, a threshold is overwritten by the URL's default)
        wait(lambda: d.find_element("id", "threshold").get_attribute("value"))
        first = time.perf_counter() - t1
        lat = []
        for th in ("0.5", "2"):
            box = d.find_element("id", "threshold")
            box.clear()
            t2 = time.perf_counter()
            box.send_keys(th + "\n")
            # the count line names the threshold it was computed for
            # ("... with parallel_benefit < 0.5", perhaps followed by
            # " · most grains flagged: ...")
            wait(lambda th=th: re.search(rf"[<>] {re.escape(th)}(\s|$)", count(d)))
            lat.append(time.perf_counter() - t2)
        lod = d.find_element("id", "lod").text.strip(" ·")
        return {"answers": answers, "ready": ready, "first": first, "threshold": lat[0], "again": lat[1],
                "server_mib": vmhwm_mib(p.pid), "lod": lod}
    finally:
        p.terminate()
        p.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--shape", default="fork-join")
    ap.add_argument("--cache-dir", default="/tmp/grainlab-bench")
    ap.add_argument("--trace", action="append", default=[], type=Path,
                    help="also measure this trace (repeatable), e.g. a recorded fib 33 "
                         "(10^7 grains: benchmarks/analyze_scale.py caches one)")
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    print(f"serve_scale: shape={args.shape} sizes={args.sizes} ({os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.1f})")
    rows = []
    traces = []
    for n in sizes:
        trace = cache / f"{args.shape}-{n}.parquet"
        if not trace.exists():
            subprocess.run([PY, "-m", "grainlab.cli", "synth", "--shape", args.shape,
                            "--grains", str(n), "-o", str(trace), "-q"], check=True)
        traces.append((n, trace))
    for trace in args.trace:
        import pyarrow.parquet as pq
        import json
        md = pq.ParquetFile(trace).metadata
        counts = json.loads(md.metadata[b"grainlab.counts"])
        traces.append((counts["task_creates"] + counts["chunk_events"], trace))
    for n, trace in traces:
        d = browser()                   # a fresh browser per size: no state carried over
        try:
            r = measure(trace, d)
        finally:
            d.quit()
        r["analysis_mib"] = analysis_peak_mib(trace)
        r["n"] = n
        rows.append(r)
        print(f"  {n:>9} grains: answers {r['answers']:.1f} s, ready {r['ready']:.1f} s, first view {r['first']:.2f} s, "
              f"threshold {r['threshold']:.2f} s / {r['again']:.2f} s, server "
              f"{r['server_mib']:.0f} MiB vs analysis {r['analysis_mib']:.0f} MiB "
              f"({r['lod']})", flush=True)
    print(f"{'grains':>9} {'answers s':>9} {'ready s':>8} {'first s':>8} {'thresh s':>9} {'again s':>8} "
          f"{'server MiB':>11} {'analysis MiB':>13} {'extra MiB':>10}  view")
    for r in rows:
        print(f"{r['n']:>9} {r['answers']:>9.1f} {r['ready']:>8.1f} {r['first']:>8.2f} {r['threshold']:>9.2f} "
              f"{r['again']:>8.2f} {r['server_mib']:>11.0f} {r['analysis_mib']:>13.0f} "
              f"{r['server_mib'] - r['analysis_mib']:>10.0f}  {r['lod']}")
    big = max(rows, key=lambda r: r["n"])
    ok = (big["first"] <= 5 and max(r["threshold"] for r in rows) <= 1
          and all(r["server_mib"] - r["analysis_mib"] <= 1024 for r in rows))
    print(f"SUMMARY: {'targets met' if ok else 'targets NOT all met'} at {big['n']} grains: "
          f"first view {big['first']:.2f} s (<= 5), worst threshold change "
          f"{max(r['threshold'] for r in rows):.2f} s (<= 1), worst extra memory "
          f"{max(r['server_mib'] - r['analysis_mib'] for r in rows):.0f} MiB (<= 1024)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
