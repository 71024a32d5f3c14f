"""Benchmark-style examples, part B (issue 9): health, uts, floorplan,
alignment, stencil_depend, sparselu_depend, loop_dynamic, loop_static and the
planted load imbalance. Each runs through the real collector at 1 and 2
threads; its own verification must pass and its task / chunk count must equal
an independent computation (a closed form, or the program's rule re-run in
plain Python) — or, for the schedule-dependent branch and bound, the bounds
that always hold. The planted imbalance must be found at its source line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, grainlab

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def counts(t):
    s = t.summary()
    return s["tasks"], s["chunks"]


# --- independent references --------------------------------------------------

def health_tasks(levels, steps, cutoff, branch):
    return steps * sum(branch ** d for d in range(1, min(cutoff, levels - 1) + 1))


def splitmix(x):
    x = (x + GOLDEN) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def uts_tasks(shape, size, width, cutoff=None):
    """Nodes at depth 1 .. cutoff of examples/uts.c's tree (iterative walk)."""
    deep = shape == "deep"
    tasks, stack = 0, [(splitmix(1), 0, True)]
    while stack:
        h, depth, spine = stack.pop()
        if deep:
            k = ((depth < size - 1) + h % (width + 1)) if spine else 0
        else:
            k = h % (2 * width + 1) if depth < size else 0
        for c in range(k):
            hc = splitmix(h ^ (((c + 1) * GOLDEN) & MASK))
            sc = deep and spine and c == 0 and depth < size - 1
            if cutoff is None or depth < cutoff:
                tasks += 1
            stack.append((hc, depth + 1, sc))
    return tasks


def sparselu_tasks(nb):
    """examples/sparselu_depend.c's tasks: BOTS pattern, fill-in as it goes."""
    def present(i, j):
        if i == j or abs(i - j) == 1:
            return True
        if i % 2 or j % 2:
            return False
        return i % 3 == 0 if i < j else j % 3 == 0
    a = {(i, j) for i in range(nb) for j in range(nb) if present(i, j)}
    tasks = 0
    for kk in range(nb):
        row = [j for j in range(kk + 1, nb) if (kk, j) in a]
        col = [i for i in range(kk + 1, nb) if (i, kk) in a]
        tasks += 1 + len(row) + len(col) + len(row) * len(col)
        a |= {(i, j) for i in col for j in row}
    return tasks


# --- every program, 1 and 2 threads -------------------------------------------

def dyn(n, threads):
    """Chunks of a schedule(dynamic, 1) loop over n iterations: one per
    iteration; a team of one runs the loop as a single chunk (examples/README.md,
    "loops")."""
    return n if threads > 1 else 1


CASES = [
    # name, args, verified-output prefix, expected (tasks, chunks) as f(threads) or None
    ("health", (3, 5, 3, 3), "health(3, 5, 3, 3):", lambda T: (health_tasks(3, 5, 3, 3), 0)),
    ("health", (4, 4, 2, 3), "health(4, 4, 2, 3):", lambda T: (health_tasks(4, 4, 2, 3), 0)),
    ("uts", ("geo", 5, 3), "uts(geo, 5, 3, -1):", lambda T: (uts_tasks("geo", 5, 3), 0)),
    ("uts", ("geo", 6, 3, 3), "uts(geo, 6, 3, 3):", lambda T: (uts_tasks("geo", 6, 3, 3), 0)),
    ("uts", ("deep", 300, 2), "uts(deep, 300, 2, -1):", lambda T: (uts_tasks("deep", 300, 2), 0)),
    ("alignment", (12, 40), "alignment(12, 40):", lambda T: (12 * 11 // 2, dyn(12, T))),
    ("stencil_depend", (4, 8, 3), "stencil_depend(4, 8, 3):", lambda T: (4 * 4 * 3, 0)),
    ("sparselu_depend", (8, 4), "sparselu_depend(8, 4):", lambda T: (sparselu_tasks(8), 0)),
    ("loop_dynamic", (500, 50, 20), "loop_dynamic(500, 50, 20):", lambda T: (0, dyn(500, T))),
    ("loop_static", (1000, 3), "loop_static(1000, 3):", lambda T: (0, 3 * min(T, 1000))),
    ("imbalance", (300,), "imbalance(300, static):", lambda T: (0, min(T, 300))),
    ("imbalance", (300, "dynamic"), "imbalance(300, dynamic):", lambda T: (0, dyn(300, T))),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name, args, said, expect", CASES,
                         ids=[f"{c[0]}-{'_'.join(map(str, c[1]))}" for c in CASES])
def test_program_verifies_itself_and_counts_are_exact(record, name, args, said, expect, threads):
    t = record(name, *args, threads=threads)
    out = record.stdout(name, *args, threads=threads)
    assert out.startswith(said) and out.rstrip().endswith("verified"), out
    assert counts(t) == expect(threads)


def test_uts_deep_is_deep(record):
    t = record("uts", "deep", 400, 1, threads=2)
    assert t.summary()["max_task_depth"] == 399       # the spine: depth 1 .. 399
    assert "depth 399 verified" in record.stdout("uts", "deep", 400, 1, threads=2)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n, k, cutoff", [(9, 3, 3), (10, 4, 4)])
def test_floorplan_count_stays_within_its_bounds(record, n, k, cutoff, threads):
    """Pruning depends on the schedule: only the bounds are fixed."""
    t = record("floorplan", n, k, cutoff, threads=threads)
    assert record.stdout("floorplan", n, k, cutoff, threads=threads).rstrip().endswith("verified")
    tasks = t.summary()["tasks"]
    assert k <= tasks <= sum(k ** d for d in range(1, cutoff + 1))
    assert t.summary()["max_task_depth"] <= cutoff


@pytest.mark.parametrize("name, args", [
    ("health", ("x",)), ("uts", ("wide",)), ("uts", ("geo", "-1")), ("floorplan", (0,)),
    ("alignment", (1,)), ("stencil_depend", ("8x",)), ("sparselu_depend", (0,)),
    ("loop_dynamic", (0,)), ("loop_static", ("many",)), ("imbalance", (100, "guided")),
])
def test_bad_argument_is_one_usage_error(example, name, args):
    import subprocess
    r = subprocess.run([example(name), *map(str, args)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("usage: "), r.stderr


# --- the planted load imbalance ------------------------------------------------

def planted_line() -> int:
    src = (REPO / "examples" / "imbalance.c").read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(src) if "PLANTED" in line and "#pragma" in line]
    assert len(hits) == 1
    return hits[0]


def load_balance(path):
    r = grainlab("analyze", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["problems"]["load_balance"]


def test_analyze_finds_the_planted_imbalance_at_its_line(record):
    # 4 threads: block works 1 : 15 : 65 : 175, load balance 175 / 40 = 4.4 when
    # undisturbed — far above 1.5 even when a loaded machine stretches a chunk
    t = record("imbalance", 2000, threads=4)
    p = load_balance(t.path)
    assert p["available"] and p["grains"] == 4           # every chunk of the loop
    top = p["locations"][0]["location"]
    assert top.startswith(f"imbalance.c:{planted_line()} "), top
    assert "parallel for" in top


def test_the_fix_is_not_flagged(record):
    t = record("imbalance", 2000, "dynamic", threads=4)
    assert load_balance(t.path)["grains"] == 0


def test_examples_are_documented():
    readme = (REPO / "examples" / "README.md").read_text()
    for name in ("health", "uts", "floorplan", "alignment", "stencil_depend", "sparselu_depend",
                 "loop_dynamic", "loop_static", "imbalance"):
        assert f"## {name}" in readme, name
        assert Path(REPO / "examples" / f"{name}.c").is_file()
