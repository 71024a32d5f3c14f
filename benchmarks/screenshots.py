"""`make screenshots`: regenerate docs/img's pictures of the web app from the
current code, so the docs cannot go stale.

Records the example traces the docs show (2 threads), serves each with
`grainlab serve`, opens every view in headless Chromium (Selenium, 1500x1000,
as tests/test_serve.py does) and saves the window as docs/img/NAME.png. A
view is saved once its figure is drawn (a hang detector, not a timer).

    .venv/bin/python benchmarks/screenshots.py [--out docs/img] [--only fib,sort]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRAINLAB = [sys.executable, "-m", "grainlab.cli"]
EXAMPLES = REPO / "build" / "examples"

# name: (how to make the trace, [(png, query)], extra serve arguments)
TRACES = {
    "fib": (("fib", "14", "4"), [("fib-summary", "?view=summary"),
                                 ("fib-graph", "?view=graph&problem=parallel_benefit"),
                                 ("fib-threads", "?view=threads&problem=parallel_benefit"),
                                 ("fib-parallelism", "?view=parallelism")]),
    "sort": (("sort", "65536", "1024", "64"), [
        ("sort-summary", "?view=summary"),
        ("sort-graph", "?view=graph&problem=parallel_benefit"),
        ("sort-graph-reduced", "?view=graph&problem=parallel_benefit"
                               "&reduce=fragments,forks"),
        ("sort-threads", "?view=threads&problem=parallel_benefit"),
        ("sort-parallelism", "?view=parallelism")]),
    "loop": (("loops", "dynamic,7", "40"), [("loop-summary", "?view=summary"),
                                            ("loop-graph", "?view=graph"),
                                            ("loop-threads", "?view=threads"),
                                            ("loop-parallelism", "?view=parallelism")]),
    "imbalance": (("imbalance",), [("imbalance-summary", "?view=summary"),
                                   ("imbalance-graph", "?view=graph"),
                                   ("imbalance-threads", "?view=threads"),
                                   ("imbalance-parallelism", "?view=parallelism")]),
    "kdcutoff": (("kdcutoff", "262144", "4"), [("kdcutoff-summary", "?view=summary"),
                                               ("kdcutoff-graph", "?view=graph"),
                                               ("kdcutoff-threads", "?view=threads")]),
    "forkjoin-1e6": ("synth", [("forkjoin-1e6-graph", "?view=graph")]),
    "sparselu": ("scaling", [("view-scaling", "?view=scaling")]),
}

# what shows that a view is drawn: a figure with data, or the summary's table
READY = {
    "summary": "return !!document.querySelector('#pane-summary table');",
    "scaling": "const g = document.querySelector('#pane-scaling .js-plotly-plot');"
               "return !!(g && g.data && g.data.length);",
}
FIGURE = {"graph": "graph-fig", "threads": "threads-fig", "parallelism": "parallelism-fig"}


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"screenshots: {' '.join(map(str, cmd))} failed:\n{r.stderr[-2000:]}")
    return r


def record(args, out: Path, threads=2) -> Path:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    # the program by its path in the repository, as the docs show it
    run([*GRAINLAB, "record", "-q", "-o", out, "--", EXAMPLES.relative_to(REPO) / args[0],
         *args[1:]], env=env, cwd=REPO)
    return out


def traces(name, how, tmp: Path):
    """(trace, extra serve arguments) of one entry."""
    if how == "synth":
        t = tmp / "fj1m.parquet"
        run([*GRAINLAB, "synth", "--shape", "fork-join", "--grains", 1_000_000, "--threads", 4,
             "--jitter", 0.5, "-o", t, "-q"])
        return t, []
    if how == "scaling":
        one = record(("sparselu", "single", "20", "64"), tmp / "slu1.parquet", threads=1)
        two = record(("sparselu", "single", "20", "64"), tmp / "slu2.parquet", threads=2)
        return one, ["--runs", two]
    return record(how, tmp / f"{name}.parquet"), []


class Server:
    def __init__(self, trace, extra):
        self.proc = subprocess.Popen([*GRAINLAB, "serve", "--port", "0", str(trace),
                                      *map(str, extra)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=REPO)
        self.url = None
        while self.url is None:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("screenshots: serve failed: " + self.proc.stderr.read()[-2000:])
            m = re.search(r"serving .* at (http://\S+/)", line)
            self.url = m and m.group(1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(20)


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--hide-scrollbars",
              "--window-size=1500,1000"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def wait(fn, what, timeout=180):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if fn():
                return
        except Exception:   # the page is still rendering
            pass
        time.sleep(0.3)
    raise SystemExit(f"screenshots: timed out waiting for {what}")


def shoot(d, url, query, png: Path):
    d.get(url + query)
    view = re.search(r"view=(\w+)", query).group(1)
    if view in FIGURE:
        fid = FIGURE[view]
        wait(lambda: d.execute_script(
            f"const g = document.querySelector('#{fid} .js-plotly-plot');"
            "return !!(g && g.data && g.data.length && g._fullLayout);"), f"{png.name}")
    else:
        wait(lambda: d.execute_script(READY[view]), png.name)
    # the figure's last relayout (autosize, a zoomed state) lands: the page
    # settles when two looks 0.5 s apart see the same picture
    last = None
    for _ in range(20):
        time.sleep(0.5)
        now = d.get_screenshot_as_png()
        if now == last:
            break
        last = now
    png.write_bytes(last)
    print(f"{png.relative_to(REPO) if png.is_relative_to(REPO) else png}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "img"))
    ap.add_argument("--only", help="comma-separated entries of TRACES")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(TRACES)
    d = browser()
    tmp = Path(tempfile.mkdtemp(prefix="grainlab-shots-"))
    try:
        for name in names:
            how, shots = TRACES[name]
            trace, extra = traces(name, how, tmp)
            s = Server(trace, extra)
            try:
                for png, query in shots:
                    shoot(d, s.url, query, out / f"{png}.png")
            finally:
                s.stop()
    finally:
        d.quit()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
