"""`make screenshots`: regenerate docs/img's pictures from the current code,
so the docs cannot go stale.

Records the example traces the docs show (2 threads; sparselu at 1 and 2 for
the Scaling view; a 4-rank mpirun of mpi_stencil for the Ranks view), serves
each with `grainlab serve`, opens every view in headless Chromium (Selenium,
1500x1000, as tests/test_serve.py does) and saves the window, or one figure
of it, as docs/img/NAME.png. A view is saved once its figure is drawn (a hang
detector, not a timer). Also: `grainlab predict`'s figure (docs/predict.md),
and the figures of the committed notebooks (notebooks/*.ipynb, exported to
HTML as they are, not executed again) into docs/img/notebooks/ (`make
notebooks NB_ARGS=--publish` first re-executes them).

    .venv/bin/python benchmarks/screenshots.py [--out docs/img] [--only fib,sort,notebooks]
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

# name: (how to make the trace, [(png, query[, the element saved: a CSS selector])])
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
    "sparselu": ("scaling", [("view-scaling", "?view=scaling"),
                             ("scaling-speedup", "?view=scaling", "#scaling-speedup-fig"),
                             ("scaling-breakdown", "?view=scaling", "#scaling-breakdown-fig")]),
    "ranks": ("mpi", [("view-ranks", "?view=ranks"),
                      ("ranks-timeline", "?view=ranks", "#ranks-fig")]),
}
# not served: predict's figure as a page of its own, the notebooks' figures
OTHERS = ("predict", "notebooks")

# what shows that a view is drawn: a figure with data, or the summary's table
READY = {
    "summary": "return !!document.querySelector('#pane-summary table');",
    "scaling": "const g = document.querySelector('#pane-scaling .js-plotly-plot');"
               "return !!(g && g.data && g.data.length);",
    "ranks": "const g = document.querySelector('#ranks-fig .js-plotly-plot');"
             "return !!(g && g.data && g.data.length && g._fullLayout);",
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
    if how == "mpi":
        return mpi_ranks(tmp)
    if how == "scaling":
        one = record(("sparselu", "single", "20", "64"), tmp / "slu1.parquet", threads=1)
        two = record(("sparselu", "single", "20", "64"), tmp / "slu2.parquet", threads=2)
        return one, ["--runs", two]
    return record(how, tmp / f"{name}.parquet"), []


def mpi_ranks(tmp: Path):
    """A 4-rank mpirun of mpi_stencil (rank 0 with 3x the work, docs/cluster.md),
    oversubscribed on this machine as tests/test_cluster.py runs it: rank 0's
    trace, and the others for --ranks."""
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    env = {**os.environ, "OMP_NUM_THREADS": "2",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
    run(["mpirun", *root, "--oversubscribe", "-np", 4, "-x", "OMP_NUM_THREADS",
         *GRAINLAB, "record", "-q", "-o", tmp / "run.%r.parquet", "--",
         EXAMPLES.relative_to(REPO) / "mpi_stencil", 512, 512, 20, 32, 3], env=env, cwd=REPO)
    traces = [tmp / f"run.{r}.parquet" for r in range(4)]
    return traces[0], ["--ranks", *traces]


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


def shoot(d, url, query, png: Path, element: str | None = None):
    d.get(url + query)
    view = re.search(r"view=(\w+)", query).group(1)
    if view in FIGURE:
        fid = FIGURE[view]
        wait(lambda: d.execute_script(
            f"const g = document.querySelector('#{fid} .js-plotly-plot');"
            "return !!(g && g.data && g.data.length && g._fullLayout);"), f"{png.name}")
    else:
        wait(lambda: d.execute_script(READY[view]), png.name)
    if element:
        wait(lambda: d.execute_script(
            f"const g = document.querySelector('{element} .js-plotly-plot');"
            "return !!(g && g.data && g.data.length && g._fullLayout);"), f"{png.name}")
    save(d, png, element)


def save(d, png: Path, element: str | None = None):
    """The window (or one element of it) once the page settles: two looks
    0.5 s apart see the same picture (the figure's last relayout landed)."""
    def look():
        if element is None:
            return d.get_screenshot_as_png()
        el = d.find_element("css selector", element)
        d.execute_script("arguments[0].scrollIntoView();", el)
        return el.screenshot_as_png
    last = None
    for _ in range(20):
        time.sleep(0.5)
        now = look()
        if now == last:
            break
        last = now
    png.write_bytes(last)
    print(f"{png.relative_to(REPO) if png.is_relative_to(REPO) else png}")


def predict_page(d, out: Path, tmp: Path):
    """docs/predict.md's figure: nqueens 11 3 predicted on 1..32 cores, with
    the what-if of tasks deeper than 2 merged (`grainlab predict`'s figure,
    written as a page of its own and saved from Chromium)."""
    sys.path.insert(0, str(REPO))
    import grainlab as gl
    from grainlab.app.predict_figure import prediction_figure
    trace = record(("nqueens", "11", "3"), tmp / "nqueens.parquet")
    fig = prediction_figure(gl.analyze(trace).predict([1, 2, 4, 8, 16, 32], merge_below=2))
    fig.update_layout(width=1100, height=650)
    page = tmp / "predict.html"
    fig.write_html(page, include_plotlyjs=True, full_html=True)
    d.get(page.as_uri())
    wait(lambda: d.execute_script("const g = document.querySelector('.js-plotly-plot');"
                                  "return !!(g && g._fullLayout);"), "predict_nqueens.png")
    save(d, out / "predict_nqueens.png", ".js-plotly-plot")


def notebook_figures(out: Path, tmp: Path):
    """The committed notebooks' figures (as executed by `make notebooks
    NB_ARGS=--publish`) into OUT/notebooks/NAME_NN.png: each exported to HTML
    as it is, each figure output screenshot with the text generated under it
    (grainlab.suite.notebooks.screenshots). Earlier NAME_NN.png are removed
    first: a figure that is gone leaves no stale picture."""
    import nbformat
    from nbconvert import HTMLExporter
    from grainlab.suite import notebooks as nbs
    dest = out / "notebooks"
    for name in nbs.NOTEBOOKS:
        nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
        html, _ = HTMLExporter().from_notebook_node(nb)
        (tmp / f"{name}.html").write_text(html)
        for old in dest.glob(f"{name}_[0-9][0-9].png"):
            old.unlink()
    n = nbs.screenshots(tmp, dest)
    for png in sorted(dest.glob("*.png")):
        print(png.relative_to(REPO) if png.is_relative_to(REPO) else png)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "img"))
    ap.add_argument("--only", help="comma-separated entries of TRACES and " + ", ".join(OTHERS))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else [*TRACES, *OTHERS]
    unknown = set(names) - set(TRACES) - set(OTHERS)
    if unknown:
        raise SystemExit(f"screenshots: --only {', '.join(sorted(unknown))}: not one of "
                         f"{', '.join([*TRACES, *OTHERS])}")
    d = browser()
    tmp = Path(tempfile.mkdtemp(prefix="grainlab-shots-"))
    try:
        for name in names:
            if name == "predict":
                predict_page(d, out, tmp)
                continue
            if name == "notebooks":
                notebook_figures(out, tmp)
                continue
            how, shots = TRACES[name]
            trace, extra = traces(name, how, tmp)
            s = Server(trace, extra)
            try:
                for png, query, *element in shots:
                    shoot(d, s.url, query, out / f"{png}.png", *element)
            finally:
                s.stop()
    finally:
        d.quit()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
