#!/usr/bin/env python3
"""Analysis-scale benchmark: `grainlab analyze` end to end at 10^6 and 10^7 grains, side by side.

    .venv/bin/python benchmarks/analyze_scale.py                     # fib, 1e6 and 1e7 grains
    .venv/bin/python benchmarks/analyze_scale.py --huge              # + 1e8 (fib 38: ~20 GB trace work)
    .venv/bin/python benchmarks/analyze_scale.py --source synth --shape fork-join --sizes 1e5,1e6
    .venv/bin/python benchmarks/analyze_scale.py --sizes 1e6 --profile   # + cProfile top list
    .venv/bin/python benchmarks/analyze_scale.py --shape deep-tree --sizes 1e6   # depth 20 vs 2,000

Traces (cached under --cache-dir, so reruns only measure the analysis):
  --source fib (default): real runs recorded with the collector at 2 threads,
      `examples/fib N` with a task per call (2·F(N+1) − 2 tasks): 1e6 -> fib 28
      (1.03M grains), 1e7 -> fib 33 (11.4M), 1e8 -> fib 38 (126M, --huge);
  --source synth: `grainlab.synth.generate(shape, N)`.
Each size is measured in a FRESH Python process running what `grainlab analyze`
runs (`grainlab.analyze(path, progress=...).report()`), so its peak memory
(VmHWM) is its own. The steps are the analysis's own progress steps (loading,
building the grain graph, each metric, source locations, the report); the table
prints, per size side by side: seconds and share of each step, then grains per
second, peak GiB and peak BYTES PER GRAIN. Issue 31's targets: 1e6 <= 2 s;
>= 1e7 <= 20 s and <= 4 GB (<= 400 B/grain). This is a benchmark, not a test:
it never fails a build; exit 0 unless a child crashed. Wall times on a shared
machine are noisy: the load average is printed, and cpu s beside wall s.
--workers 1,2 (default, for sizes >= 1e7): the same trace also through
`grainlab analyze --json --workers N` (Dask LocalCluster, the trace in parts:
its top-level regions and the serial part, docs/cluster.md) as a fresh CLI
process, wall seconds and the peak RSS of the largest process (wait4's
rusage; a worker's own peak counts when it is larger). `--workers ''` skips
them, `--workers-from 1e6` measures them from a smaller size on.

--shape deep-tree (issue 7, "Scale"): per size N, four traces of ~N tasks, a
synthetic spine (`grainlab synth --shape spine --spine-length D`) and a real
recorded `examples/deeptree D N/D-1` (2 threads), each at depth D = 20 and
D = 2,000. Times `grainlab info --json` and `grainlab analyze --json` as the
user runs them (fresh CLI processes, peak RSS from each child's rusage) and
prints peak bytes per grain at both depths side by side: the figure must not
grow with depth. Targets at depth 2,000, 10^6 tasks: info <= 3 s and <= 1 GiB,
analyze <= 10 s and <= 2.5 GiB. --deep-steps info skips analyze. (Before
compact identities, grainlab/tables/identity.py, analyze held O(tasks x depth)
lineage strings: 14.3 GiB and 46 s at depth 2,000 against 1.6 GiB at depth
20; now the two depths take the same bytes per grain.)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GIB = 1024 ** 3
GB = 1000 ** 3
# issue 31: (seconds, peak bytes) per size judged
TARGETS = {10 ** 6: (2.0, None), 10 ** 7: (20.0, 4 * GB)}
MAX_BYTES_PER_GRAIN = 400
# fib N with a task per call has 2*F(N+1) - 2 tasks
FIB_FOR = {10 ** 5: 23, 10 ** 6: 28, 10 ** 7: 33, 10 ** 8: 38}

# Runs in the fresh child: what `grainlab analyze` runs, each progress step timed.
CHILD = r"""
import json, sys, time, resource
path, profile_to = sys.argv[1], sys.argv[2]
result = {"steps": [], "skipped": []}

def peak_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

marks = []

def mark(msg):
    marks.append((msg, time.perf_counter(), time.process_time(), peak_bytes()))

def work():
    # Imports are not analysis: load them before the clock starts.
    t0 = time.perf_counter()
    import grainlab
    result["import_s"] = time.perf_counter() - t0
    # the command line's process-wide memory choices (grainlab.process_memory)
    from grainlab import process_memory
    process_memory.enable()
    mark("start")
    a = grainlab.analyze(path, progress=mark)
    a.report()
    mark("end")
    g = a.graph
    result["grains"] = int(len(g.grains)); result["nodes"] = int(len(g.nodes))
    result["edges"] = int(len(g.edges)); result["events"] = int(len(a.trace.events))

if profile_to:
    import cProfile, pstats, io
    prof = cProfile.Profile()
    prof.runcall(work)
    prof.dump_stats(profile_to)
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(r"grainlab", 30)
    stats.sort_stats("tottime").print_stats(25)
    result["profile_top"] = out.getvalue()
else:
    work()
# one step per progress message, to the next one (from the start to the
# first message: the analysis's set-up; the last runs to the report's end)
for (msg, t, c, _), (nxt, t2, c2, hwm) in zip(marks[:-1], marks[1:]):
    result["steps"].append(["set-up" if msg == "start" else msg, t2 - t, c2 - c, hwm])
result["peak_bytes"] = peak_bytes()
result["seconds"] = marks[-1][1] - marks[0][1]
result["cpu"] = marks[-1][2] - marks[0][2]
print("RESULT " + json.dumps(result))
"""


def parse_sizes(text: str) -> list[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip().lower()
        if part:
            sizes.append(int(float(part)))
    return sorted(set(sizes))


def python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def synth(shape: str, grains: int, out: Path, timeout: float) -> float:
    """Generate (or reuse) a synthetic trace; returns the seconds it took."""
    if out.exists():
        return 0.0
    tmp = out.with_suffix(".tmp.parquet")
    t = time.perf_counter()
    # In a child process, so the generator's memory never counts for anyone.
    code = ("import sys; from grainlab.synth import generate; "
            "generate(sys.argv[1], sys.argv[2], int(sys.argv[3]))")
    r = subprocess.run([python(), "-c", code, str(tmp), shape, str(grains)],
                       cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise RuntimeError(f"grainlab.synth.generate({shape!r}, {grains}) failed: {tail}")
    os.replace(tmp, out)
    return time.perf_counter() - t


def fib_n(grains: int) -> int:
    """The fib argument whose task-per-call run has about `grains` tasks."""
    if grains in FIB_FOR:
        return FIB_FOR[grains]
    a, b, n = 1, 1, 1          # F(n), F(n+1)
    while 2 * b - 2 < grains:
        a, b, n = b, a + b, n + 1
    return n


def record_fib(grains: int, out: Path, timeout: float) -> float:
    """Record (or reuse) `examples/fib N` with a task per call at 2 threads."""
    if out.exists():
        return 0.0
    tmp = out.with_suffix(".tmp.parquet")
    t = time.perf_counter()
    cmd = [python(), "-m", "grainlab.cli", "record", "-q", "-o", str(tmp), "--",
           str(REPO / "build" / "examples" / "fib"), str(fib_n(grains))]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "OMP_NUM_THREADS": "2"})
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise RuntimeError(f"{' '.join(cmd[3:])}: {tail}")
    os.replace(tmp, out)
    return time.perf_counter() - t


def measure(path: Path, profile_to: str, timeout: float) -> dict:
    t = time.perf_counter()
    try:
        r = subprocess.run([python(), "-c", CHILD, str(path), profile_to],
                           cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"child exited {r.returncode}: {tail}"}
    res = json.loads(lines[-1][len("RESULT "):])
    res["wall"] = wall
    return res


def available_bytes() -> int:
    """MemAvailable from /proc/meminfo (0 if unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def fmt_size(n: int) -> str:
    exp = len(str(n)) - 1
    return f"1e{exp}" if n == 10 ** exp else str(n)


def step_label(msg: str) -> str:
    """A progress message without its run-specific details."""
    for cut in (" (", " /", " ..."):
        if cut in msg:
            msg = msg[:msg.index(cut)]
    return msg.replace("loading", "load").replace("building the grain graph", "graph build")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e6,1e7",
                    help="comma-separated grain counts (default 1e6,1e7)")
    ap.add_argument("--huge", action="store_true", help="also 1e8 grains (fib 38)")
    ap.add_argument("--source", default="fib", choices=["fib", "synth"],
                    help="fib: recorded examples/fib runs (default); synth: generated")
    ap.add_argument("--shape", default="fork-join",
                    choices=["fork-join", "spine", "loop", "random", "deep-tree"],
                    help="synthetic trace shape (--source synth; default fork-join); "
                         "deep-tree: info and analyze at depth 20 and 2,000, synthetic and real")
    ap.add_argument("--deep-steps", default="info,analyze",
                    help="deep-tree: commands to measure (default info,analyze)")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                        "grainlab-bench"),
                    help="where recorded or generated traces are kept between runs")
    ap.add_argument("--profile", action="store_true",
                    help="run each child under cProfile; print its top functions "
                         "and keep the .prof file in the cache dir")
    ap.add_argument("--force", action="store_true",
                    help="run a size even if its extrapolated peak memory exceeds "
                         "what is available")
    ap.add_argument("--workers", default="1,2",
                    help="Dask worker counts to run `analyze --workers N` with "
                         "(default 1,2; '' skips)")
    ap.add_argument("--workers-from", default="1e7",
                    help="smallest size the workers are measured at (default 1e7)")
    ap.add_argument("--timeout", type=float, default=3600,
                    help="seconds allowed per recording / generation / measurement")
    args = ap.parse_args(argv)

    sizes = parse_sizes(args.sizes)
    if args.huge:
        sizes = sorted(set(sizes) | {10 ** 8})
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    if args.shape == "deep-tree":
        return deep_tree(sizes, cache, args.deep_steps.split(","), args.timeout)
    what = "fib (task per call, 2 threads)" if args.source == "fib" else f"synth {args.shape}"
    print(f"analyze_scale: {what} sizes={','.join(map(fmt_size, sizes))} "
          f"cache={cache} python={python()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"  machine: {os.cpu_count()} cpus, load average {load:.1f} at start "
          "(wall seconds, imports excluded; cpu s = the child's CPU time, the better "
          "guide on a busy machine)")
    results: dict[int, dict] = {}
    crashed = False
    prev_peak = None
    for n in sizes:
        if prev_peak and not args.force:
            # Peak memory grows ~linearly with grains: do not let a size that
            # cannot fit push the machine (and everyone on it) into the OOM killer.
            need = prev_peak[1] * n / prev_peak[0] * 1.15
            avail = available_bytes()
            if avail and need > avail:
                results[n] = {"skipped": True, "error": f"skipped: needs ~{need / GIB:.1f} GiB "
                              f"by extrapolation, {avail / GIB:.1f} GiB available (--force runs it)"}
                print(f"  {fmt_size(n)}: {results[n]['error']}")
                continue
        if args.source == "fib":
            trace = cache / f"fib{fib_n(n)}.parquet"
            make = lambda n=n, trace=trace: record_fib(n, trace, args.timeout)  # noqa: E731
        else:
            trace = cache / f"{args.shape}-{n}.parquet"
            make = lambda n=n, trace=trace: synth(args.shape, n, trace, args.timeout)  # noqa: E731
        try:
            gen = make()
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            results[n] = {"error": str(e)}
            crashed = True
            print(f"  {fmt_size(n)}: ERROR: {e}")
            continue
        if gen:
            print(f"  made {trace.name} in {gen:.1f} s ({trace.stat().st_size / 1e6:.0f} MB)")
        prof = str(cache / f"{trace.stem}.prof") if args.profile else ""
        res = measure(trace, prof, args.timeout)
        res["load_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        results[n] = res
        if "error" in res:
            crashed = True
            print(f"  {fmt_size(n)}: ERROR: {res['error']}")
            continue
        print(f"  {fmt_size(n)}: {res['grains']} grains, {res['events']} events, "
              f"{res['nodes']} nodes, {res['edges']} edges; {res['seconds']:.1f} s, "
              f"load average {res['load_after']:.1f} after")
        for name, wall, cpu, hwm in res["steps"][:3]:        # set-up, loading, the build
            print(f"  {fmt_size(n)}: {step_label(name)}: {wall:.2f} wall s, {cpu:.2f} cpu s, "
                  f"VmHWM after it {hwm / GIB:.2f} GiB")
        if args.profile and res.get("profile_top"):
            print(res["profile_top"])
        prev_peak = (n, res["peak_bytes"])
        if n >= float(args.workers_from):
            for w in [int(x) for x in args.workers.split(",") if x.strip()]:
                r = run_cli("analyze", trace, args.timeout, ["--workers", str(w)])
                res.setdefault("workers", {})[w] = r
                print(f"  {fmt_size(n)}: analyze --workers {w}: " + (
                    r["error"] if "error" in r else
                    f"{r['seconds']:.1f} s, peak {r['peak_bytes'] / GIB:.2f} GiB"))
    print(table(results))
    print(summary(results))
    return 1 if crashed else 0


def table(results: dict[int, dict]) -> str:
    """Steps as rows, sizes side by side: seconds and share of the run."""
    done = {n: r for n, r in results.items() if "error" not in r}
    if not done:
        return "(nothing measured)"
    names: list[str] = []
    for r in done.values():
        for name, *_ in r["steps"]:
            label = step_label(name)
            if label not in names:
                names.append(label)
    cols = list(done)
    w = 22
    out = [f"{'':<30}" + "".join(f"{fmt_size(n) + ' (' + format(done[n]['grains'], ',') + ')':>{w}}"
                                 for n in cols)]
    out.append(f"{'step':<30}" + "".join(f"{'wall s   share':>{w}}" for _ in cols))
    for label in names:
        cells = []
        for n in cols:
            r = done[n]
            s = sum(st[1] for st in r["steps"] if step_label(st[0]) == label)
            share = s / r["seconds"] if r["seconds"] else 0.0
            cells.append(f"{s:>12.2f} {100 * share:>6.1f}%")
        out.append(f"{label:<30}" + "".join(f"{c:>{w}}" for c in cells))

    def row(label, fmt):
        out.append(f"{label:<30}" + "".join(f"{fmt(done[n]):>{w}}" for n in cols))
    row("total wall s", lambda r: f"{r['seconds']:.2f}")
    row("total cpu s", lambda r: f"{r['cpu']:.2f}")
    row("grains per second (wall)", lambda r: f"{r['grains'] / r['seconds']:,.0f}")
    row("grains per cpu second", lambda r: f"{r['grains'] / max(r['cpu'], 1e-9):,.0f}")
    row("peak GiB", lambda r: f"{r['peak_bytes'] / GIB:.2f}")
    row("peak bytes per grain", lambda r: f"{r['peak_bytes'] / max(r['grains'], 1):,.0f}")
    row("load average after", lambda r: f"{r['load_after']:.1f}")
    counts = sorted({w for r in done.values() for w in r.get("workers", {})})
    for w in counts:
        def cell(r, w=w):
            x = r.get("workers", {}).get(w)
            if x is None:
                return "-"
            if "error" in x:
                return "ERROR"
            return f"{x['seconds']:.1f} s {x['peak_bytes'] / GIB:.1f} GiB"
        row(f"analyze --workers {w} (CLI)", cell)
    return "\n".join(out)


def summary(results: dict[int, dict]) -> str:
    """One line: each of issue 31's targets met or not (or not measured)."""
    parts, ok_all = [], True
    for n, (max_s, max_mem) in TARGETS.items():
        res = results.get(n)
        if res is None or "error" in res:
            parts.append(f"{fmt_size(n)}: " + ("not run" if res is None else
                                               "skipped (memory)" if res.get("skipped") else "ERROR"))
            ok_all = False
            continue
        t_ok = res["seconds"] <= max_s
        per = res["peak_bytes"] / max(res["grains"], 1)
        m_ok = max_mem is None or (res["peak_bytes"] <= max_mem and per <= MAX_BYTES_PER_GRAIN)
        ok_all &= t_ok and m_ok
        parts.append(f"{fmt_size(n)}: {res['seconds']:.1f} s (cpu {res['cpu']:.1f} s) "
                     f"{'<=' if t_ok else '>'} {max_s:.0f} s"
                     + ("" if max_mem is None else
                        f", {res['peak_bytes'] / GB:.2f} GB, {per:.0f} B/grain "
                        f"{'<=' if m_ok else '>'} {max_mem / GB:.0f} GB, "
                        f"{MAX_BYTES_PER_GRAIN} B/grain"))
    return ("SUMMARY (issue 31): " + ("all targets met" if ok_all else "targets NOT all met")
            + " | " + "; ".join(parts))


# ---------------------------------------------------------------- deep tree

DEPTHS = (20, 2000)
# issue 7's targets, for its case: ~1M tasks, depth 2,000 (other sizes are shown, not judged)
DEEP_TARGETS = {"info": (3.0, 1 * GIB), "analyze": (10.0, 2.5 * GIB)}
DEEP_TARGET_TASKS = 10 ** 6


def deep_trace(source: str, tasks: int, depth: int, cache: Path, timeout: float) -> Path:
    """A ~`tasks`-task trace `depth` deep: synth spine or real examples/deeptree."""
    out = cache / f"deep-{source}-{tasks}-{depth}.parquet"
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp.parquet")
    cli = [python(), "-m", "grainlab.cli"]
    if source == "synth":
        cmd = cli + ["synth", "--shape", "spine", "--grains", str(tasks),
                     "--spine-length", str(depth), "-o", str(tmp), "-q"]
    else:
        leaves = max(tasks // depth - 1, 0)
        cmd = cli + ["record", "-q", "-o", str(tmp), "--",
                     str(REPO / "build" / "examples" / "deeptree"), str(depth), str(leaves)]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "OMP_NUM_THREADS": "2"})
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise RuntimeError(f"{' '.join(cmd[3:])}: {tail}")
    os.replace(tmp, out)
    return out


def run_cli(command: str, path: Path, timeout: float, extra=()) -> dict:
    """Wall seconds and peak RSS of one `grainlab <command> --json` child (its
    own rusage from wait4, so no other child's peak counts)."""
    import threading
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen([python(), "-m", "grainlab.cli", command, "--json", *extra,
                              str(path)],
                             cwd=REPO, stdout=out, stderr=err)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        _, status, usage = os.wait4(p.pid, 0)
        killer.cancel()
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            tail = (err.read().decode(errors="replace").strip().splitlines() or [""])[-1]
            return {"error": f"exit {p.returncode}: {tail}"}
    return {"seconds": wall, "peak_bytes": usage.ru_maxrss * 1024}


def deep_tree(sizes: list[int], cache: Path, steps: list[str], timeout: float) -> int:
    print(f"analyze_scale: shape=deep-tree sizes={','.join(map(fmt_size, sizes))} "
          f"depths={DEPTHS[0]},{DEPTHS[1]} steps={','.join(steps)} cache={cache}")
    print("  each figure: one fresh `grainlab <step> --json` process, wall seconds "
          "and its peak RSS; B/grain = peak bytes / tasks")
    print(f"{'source':>6} {'tasks':>9} {'step':>8} " + " ".join(
        f"{'d=' + str(d) + ' s':>10} {'GiB':>6} {'B/grain':>8}" for d in DEPTHS)
        + f" {'B/grain ratio':>13}")
    crashed, verdict = False, []
    for n in sizes:
        for source in ("synth", "real"):
            try:
                traces = {d: deep_trace(source, n, d, cache, timeout) for d in DEPTHS}
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{source:>6} {fmt_size(n):>9} ERROR: {e}")
                crashed = True
                continue
            for step in steps:
                cells, per = [], {}
                for d in DEPTHS:
                    res = run_cli(step, traces[d], timeout)
                    if "error" in res:
                        crashed = True
                        cells.append(f"{'ERROR':>10} {'':>6} {'':>8}")
                        print(f"  {source} {step} depth {d}: {res['error']}")
                        continue
                    per[d] = res["peak_bytes"] / n
                    cells.append(f"{res['seconds']:>10.2f} {res['peak_bytes'] / GIB:>6.2f} "
                                 f"{per[d]:>8.0f}")
                    if d == DEPTHS[1] and n == DEEP_TARGET_TASKS and step in DEEP_TARGETS:
                        max_s, max_mem = DEEP_TARGETS[step]
                        ok = res["seconds"] <= max_s and res["peak_bytes"] <= max_mem
                        verdict.append(f"{source} {step} {res['seconds']:.1f} s "
                                       f"{res['peak_bytes'] / GIB:.2f} GiB "
                                       f"{'<=' if ok else 'NOT <='} {max_s:.0f} s, "
                                       f"{max_mem / GIB:g} GiB")
                ratio = (f"{per[DEPTHS[1]] / per[DEPTHS[0]]:>13.2f}"
                         if len(per) == 2 else f"{'-':>13}")
                print(f"{source:>6} {n:>9} {step:>8} " + " ".join(cells) + " " + ratio)
    print("SUMMARY (the targets' case: 1e6 tasks, depth 2,000): "
          + ("; ".join(verdict) or "not measured"))
    return 1 if crashed else 0



if __name__ == "__main__":
    sys.exit(main())
