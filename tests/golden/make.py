"""The golden outputs: real traces recorded once, and what `analyze --json`,
`compare --json` and the exports printed for them before the graph builder
was restructured (issue 10). tests/test_golden.py checks every later version
prints the same: exports exactly (by digest), JSON outputs as a subset (every
stored key with its stored value; keys added since pass without a refresh).

    python tests/golden/make.py traces [NAME...]    # record the traces (only to add one)
    python tests/golden/make.py expected [NAME...]  # write expected/ with the current code

Refresh expected/ only for an intended change of a stored value (or to
record added keys), and say why in the commit.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TRACES = HERE / "traces"
EXPECTED = HERE / "expected"

# name: (program, args, threads)
PROGRAMS = {
    "fib_t1": ("fib", (15, 5), 1),
    "fib_t2": ("fib", (15, 5), 2),
    "fib_nocutoff": ("fib", (12,), 2),
    "tree": ("tree", (4, 3), 2),
    "undeferred": ("undeferred", (8,), 2),
    "taskgroup": ("taskgroup", (7,), 2),
    "depend": ("depend", (6,), 2),
    "depend_if0": ("depend_if0", (), 2),
    "taskloop": ("taskloop", (100, 9), 2),
    "loops": ("loops", ("all", 300), 2),
    "regions_master_t1": ("regions", (2, 4, 5, "master"), 1),
    "regions_single": ("regions", (2, 4, 5, "single"), 2),
    "mixed": ("mixed", (), 2),
    "sparselu_for": ("sparselu", ("for", 6, 8), 2),
    "stencil_depend": ("stencil_depend", (4, 8, 4), 2),
    "loop_dynamic": ("loop_dynamic", (300, 97, 50), 2),
    "health": ("health", (2, 6, 3, 4), 2),
    "uts_deep": ("uts", ("deep", 60, 3), 2),
    "imbalance": ("imbalance", (), 4),
    "samename": ("samename", (), 2),
    "exec_chain": ("exec_chain", (50, 2, "execv"), 2),
    "fib_big": ("fib", (19, 12), 2),
    "nqueens": ("nqueens", (8, 2), 2),
    "sort": ("sort", (65536, 2048, 2048, 20), 2),
    "kdcutoff": ("kdcutoff", (16384, 4), 2),
    "sparselu_single": ("sparselu", ("single", 6, 8), 2),
    "strassen": ("strassen", (128, 32), 2),
    "fft": ("fft", (16384, 1024), 2),
    "floorplan": ("floorplan", (7, 4, 3), 2),
    "alignment": ("alignment", (8, 30), 2),
    "sparselu_depend": ("sparselu_depend", (5, 8), 2),
    "loop_static": ("loop_static", (10000, 2), 2),
    "twotasks": ("twotasks", (), 2),
    "twotasks_nolines": ("twotasks_nolines", (), 2),
    "options": ("options", ("-n", 15, "-c", 5), 2),
    "deeptree": ("deeptree", (20, 5), 2),
    "regions_master_t2": ("regions", (2, 4, 5, "master"), 2),
    "setup_kernel": ("setup_kernel", (20, 8, 2, 10), 2),
}
# compare --json pairs: (name, reference)
PAIRS = [("fib_t2", "fib_t1"), ("regions_single", "regions_master_t1")]


def grainlab(*args, **kw):
    exe = Path(sys.executable).parent / "grainlab"
    return subprocess.run([str(exe), *map(str, args)], check=True, cwd=ROOT,
                          capture_output=True, text=True, **kw)


def run(*args) -> str:
    """`grainlab ARGS` in this process (no start-up per command); its stdout."""
    import contextlib
    import io

    from grainlab import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    if code:
        raise RuntimeError(f"grainlab {' '.join(map(str, args))}: exit {code}: {err.getvalue()}")
    return out.getvalue()


def record(*only):
    TRACES.mkdir(exist_ok=True)
    for name, (program, args, threads) in PROGRAMS.items():
        if only and name not in only:
            continue
        out = TRACES / f"{name}.parquet"
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        grainlab("record", "-q", "-o", out, "--", ROOT / "build/examples" / program, *args, env=env)
        print(name, out.stat().st_size)


def outputs(name: str, tmp: Path) -> dict[str, str]:
    """What each command prints / writes for trace `name` (paths made relative).
    Locations are made without reading the example binaries (binary+offset):
    the outputs must not depend on a build, its path, or later edits of an
    example's source."""
    from unittest import mock
    with mock.patch("grainlab.symbolize._load_binary", return_value=None):
        return _outputs(name, tmp)


def _outputs(name: str, tmp: Path) -> dict[str, str]:
    trace = TRACES / f"{name}.parquet"
    out = {"analyze.json": run("analyze", "--json", trace)}
    graphml, perfetto = tmp / f"{name}.graphml", tmp / f"{name}.perfetto.json"
    run("export", "-q", trace, "--graphml", graphml, "--perfetto", perfetto)
    out["graphml"] = graphml.read_text()
    out["perfetto.json"] = perfetto.read_text()
    reduced = tmp / f"{name}.reduced.graphml"
    run("export", "-q", trace, "--graphml", reduced, "--reduced")
    out["reduced.graphml"] = reduced.read_text()
    for a, b in PAIRS:
        if a == name:
            out[f"compare-{b}.json"] = run("compare", "--json", trace, TRACES / f"{b}.parquet")
    return {k: normalise(v) for k, v in out.items()}


def normalise(text: str) -> str:
    """Paths relative to the checkout, whichever checkout recorded the trace
    (its program path) or reads it now (the trace path)."""
    text = text.replace(str(ROOT) + "/", "")
    return re.sub(r'/[^"\s<>]*?/(build/examples/|tests/golden/)', r"\1", text)


# Exports are large (megabytes of GraphML): expected/ keeps their sha256.
DIGESTED = ("graphml", "reduced.graphml", "perfetto.json")


def stored(kind: str, text: str) -> str:
    """What expected/ keeps of an output: the text, or its digest."""
    if kind in DIGESTED:
        return "sha256 " + hashlib.sha256(text.encode()).hexdigest() + "\n"
    return text


def expected(*only):
    import tempfile
    EXPECTED.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in PROGRAMS:
            if only and name not in only:
                continue
            for kind, text in outputs(name, Path(tmp)).items():
                (EXPECTED / f"{name}.{kind}").write_text(stored(kind, text))
            print(name)


if __name__ == "__main__":
    {"traces": record, "expected": expected}[sys.argv[1]](*sys.argv[2:])
