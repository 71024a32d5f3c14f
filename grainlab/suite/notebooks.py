"""`make notebooks`: record what the notebooks read, execute every notebook
into OUT/NAME.ipynb (with its outputs) and OUT/NAME.html, figures and tables
into OUT/figures/NAME/ (docs/notebooks.md). tests/test_notebooks.py runs the
same thing with --quick (fewer programs, smaller inputs).

    python -m grainlab.suite.notebooks -o out/notebooks [--quick] [--reuse]

OUT/data/suite: the example suite at its three sizes (`grainlab suite`);
OUT/data/cutoffs/fib and .../sort: cutoff sweeps (`grainlab sweep`); the
tour reads one trace of the suite.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import _paths
from ..errors import GrainlabError

NOTEBOOKS = ("suite_similarity", "cutoff_tuning", "grain_graph_tour")


@dataclass(frozen=True)
class Profile:
    only: tuple | None           # suite programs (None: all)
    fib: tuple                   # (argv template, cutoffs)
    sort: tuple
    reps: int
    tour: str                    # suite trace the tour reads


FULL = Profile(
    only=None,
    fib=(["fib", "38", "{}"], [2, 4, 6, 8, 10, 12, 14]),
    sort=(["sort", "2097152", "{}", "{}", "20"], [256, 1024, 2048, 4096, 16384, 65536, 262144]),
    reps=3, tour="sort-small")
QUICK = Profile(
    only=("fib", "health", "uts", "sparselu_depend", "loop_static", "nqueens"),
    fib=(["fib", "30", "{}"], [2, 4, 6, 8, 10]),
    sort=(["sort", "262144", "{}", "{}", "20"], [512, 2048, 8192, 32768, 131072]),
    reps=3, tour="fib-medium")


def prepare(out: Path, profile: Profile, reuse: bool = False, say=print) -> dict:
    """Record the inputs (skipped with `reuse` where they exist); returns
    the environment each notebook is executed with."""
    from . import cutoffs, runner
    from .characterization import characterize
    data = out / "data"
    suite = data / "suite"
    if not (reuse and (suite / "characterize.csv").exists()):
        runs = runner.select(runner.read_tables(runner.default_tables()), "all",
                             set(profile.only) if profile.only else None)
        traces = runner.record_all(runs, suite, 2, say)
        characterize(traces).to_csv(suite / "characterize.csv", index=False)
    for name, (template, values) in (("fib", profile.fib), ("sort", profile.sort)):
        folder = data / "cutoffs" / name
        if not (reuse and (folder / cutoffs.SWEEP_CSV).exists()):
            argv = [str(_paths.example(template[0])), *template[1:]]
            say(f"sweeping {' '.join(template)} over {values}, {profile.reps} runs each")
            cutoffs.sweep(argv, values, profile.reps, folder, 2)
    figures = out / "figures"
    return {
        "suite_similarity": {"GRAINLAB_NOTEBOOK_TRACES": str(suite.resolve()),
                             "GRAINLAB_NOTEBOOK_FIGURES": str((figures / "suite_similarity")
                                                              .resolve())},
        "cutoff_tuning": {"GRAINLAB_NOTEBOOK_CUTOFFS": ",".join(
                              f"{n}={(data / 'cutoffs' / n).resolve()}" for n in ("fib", "sort")),
                          "GRAINLAB_NOTEBOOK_FIGURES": str((figures / "cutoff_tuning").resolve())},
        "grain_graph_tour": {"GRAINLAB_NOTEBOOK_TRACE": str((suite / f"{profile.tour}.parquet")
                                                            .resolve()),
                             "GRAINLAB_NOTEBOOK_FIGURES": str((figures / "grain_graph_tour")
                                                              .resolve())},
    }


KERNEL = "grainlab-notebooks"


def kernel_spec(out: Path) -> str:
    """A Jupyter kernel of this very interpreter (so the notebooks import the
    grainlab that runs them), found through JUPYTER_PATH; returns its name."""
    import json
    root = (out / ".jupyter").resolve()
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "grainlab notebooks", "language": "python"}))
    paths = os.environ.get("JUPYTER_PATH", "")
    if str(root) not in paths.split(os.pathsep):
        os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(root), paths) if p)
    return KERNEL


def execute(name: str, env: dict, out: Path, kernel: str = KERNEL, timeout: int = 600):
    """Execute notebooks/NAME.ipynb with `env` set into out/NAME.ipynb, and
    out/NAME.html when nbconvert is installed. Returns the executed notebook."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    nb = nbformat.read(_paths.REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out.mkdir(parents=True, exist_ok=True)
    try:
        NotebookClient(nb, kernel_name=kernel, timeout=timeout,
                       resources={"metadata": {"path": str(out.resolve())}}).execute()
    except CellExecutionError as e:
        nbformat.write(nb, out / f"{name}.ipynb")
        last = [ln for ln in str(e).splitlines() if ln.strip()][-1:] or ["a cell failed"]
        raise GrainlabError(f"{name}: {last[0]} (see {out / name}.ipynb)") from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    nbformat.write(nb, out / f"{name}.ipynb")
    try:
        from nbconvert import HTMLExporter
    except ImportError:
        return nb
    html, _ = HTMLExporter().from_notebook_node(nb)
    (out / f"{name}.html").write_text(html)
    return nb


def publish(nb, name: str):
    """The executed notebook into notebooks/NAME.ipynb, its kernel named
    python3 (any reader's) and the folder paths of this machine left out
    of the metadata."""
    import nbformat
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, _paths.REPO_ROOT / "notebooks" / f"{name}.ipynb")


# each figure (an inline image) with the generated text right after it, as a
# rectangle of the page: [x, y, width, height] in CSS pixels from the page's top
FIGURE_RECTS = """
const rects = [];
for (const img of document.querySelectorAll('.jp-Cell-outputWrapper img')) {
    const own = img.closest('.jp-OutputArea-child');
    const parts = [own];
    const next = own && own.nextElementSibling;
    if (next && next.querySelector('.jp-RenderedMarkdown')) parts.push(next);
    const r = parts.map(e => e.getBoundingClientRect());
    const top = Math.min(...r.map(b => b.top)) + window.scrollY;
    const bottom = Math.max(...r.map(b => b.bottom)) + window.scrollY;
    const left = Math.min(...r.map(b => b.left)), right = Math.max(...r.map(b => b.right));
    rects.push([left, top, right - left, bottom - top]);
}
return rects;
"""


def screenshots(out: Path, dest: Path) -> int:
    """Screenshots of the rendered notebooks (OUT/NAME.html in headless
    chromium, through selenium): each figure with the text generated under
    it (not the tables after), as DEST/NAME_NN.png. Returns how many."""
    import io

    from PIL import Image
    from selenium import webdriver
    dest.mkdir(parents=True, exist_ok=True)
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    service = None
    if Path("/usr/bin/chromedriver").exists():   # Debian's, as the tests drive it
        opts.binary_location = "/usr/bin/chromium"
        service = Service("/usr/bin/chromedriver")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--force-device-scale-factor=1"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=service, options=opts)
    count = 0
    try:
        for name in NOTEBOOKS:
            d.set_window_size(1150, 1600)
            d.get(f"file://{(out / (name + '.html')).resolve()}")
            for n, (x, y, w, h) in enumerate(d.execute_script(FIGURE_RECTS), 1):
                d.set_window_size(1150, int(h) + 200)
                d.execute_script(f"window.scrollTo(0, {y - 8});")
                top = y - d.execute_script("return window.scrollY;")
                shot = Image.open(io.BytesIO(d.get_screenshot_as_png()))
                box = (int(x) - 4, int(top) - 4, int(x + w) + 4, int(top + h) + 4)
                shot.crop(box).save(dest / f"{name}_{n:02d}.png")
                count += 1
    finally:
        d.quit()
    return count


def errors(nb) -> list[str]:
    """The error outputs of an executed notebook (one line each)."""
    return [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m grainlab.suite.notebooks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="out/notebooks", metavar="DIR")
    p.add_argument("--quick", action="store_true", help="fewer programs, smaller inputs")
    p.add_argument("--reuse", action="store_true", help="keep inputs already recorded in DIR")
    p.add_argument("--only", metavar="NAMES", help="comma-separated notebooks to execute")
    p.add_argument("--screenshots", metavar="DIR",
                   help="then screenshot the figures of the HTML exports into DIR "
                        "(docs/img/notebooks)")
    p.add_argument("--publish", action="store_true",
                   help="also write the executed notebooks back into notebooks/ (outputs shown "
                        "on GitHub and nbviewer)")
    args = p.parse_args(argv)
    out = Path(args.output)

    def say(m):
        print(f"notebooks: {m}", file=sys.stderr, flush=True)
    try:
        envs = prepare(out, QUICK if args.quick else FULL, args.reuse, say)
        kernel = kernel_spec(out)
        for name in (args.only.split(",") if args.only else NOTEBOOKS):
            say(f"executing {name}")
            t0 = time.monotonic()
            nb = execute(name, envs[name], out, kernel)
            say(f"{name}: executed in {time.monotonic() - t0:.1f} s")
            bad = errors(nb)
            if bad:
                raise GrainlabError(f"{name}: {bad[0]}")
            if args.publish:
                publish(nb, name)
            say(f"wrote {out / name}.ipynb" + (" and .html" if (out / f"{name}.html").exists()
                                                 else " (no nbconvert: no .html)"))
        if args.screenshots:
            say(f"{screenshots(out, Path(args.screenshots))} screenshots in {args.screenshots}")
    except GrainlabError as e:
        print(f"notebooks: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
