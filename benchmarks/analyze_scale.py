#!/usr/bin/env python3
"""Analysis-scale benchmark: load + grain graph + all metrics at 10^5..10^7 grains.

    .venv/bin/python benchmarks/analyze_scale.py                 # 1e5 1e6 1e7
    .venv/bin/python benchmarks/analyze_scale.py --sizes 1e5,1e6 --shape fork-join
    .venv/bin/python benchmarks/analyze_scale.py --sizes 1e6 --profile   # + cProfile top list
    .venv/bin/python benchmarks/analyze_scale.py --shape deep-tree --sizes 1e6   # depth 20 vs 2,000

Synthetic traces come from `grainlab.synth.generate` and are cached (by shape and size)
under --cache-dir, so reruns only measure the analysis. Each size is measured in
a FRESH Python process, so its peak memory (VmHWM of that process) is its own.
Timed steps, through `grainlab.analyze` (lazy, one attribute per step):
load (`a.trace`: read + validate), graph build (`a.graph`), metrics (`a.metrics`).

Targets (issue 3, "Performance"; 2-core machine): 10^6 grains <= 10 s and
<= 4 GiB; 10^7 grains <= 120 s and <= 20 GiB; 10^7/10^6 time ratio <= 12.
The last line is a one-line verdict against them. This is a benchmark, not a
test: it never fails a build; its exit code is 0 unless a child crashed.

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
TARGETS = {10 ** 6: (10.0, 4 * GIB), 10 ** 7: (120.0, 20 * GIB)}
MAX_RATIO = 12.0

# Runs in the fresh child: times each step, reports peak RSS of this process.
CHILD = r"""
import json, sys, time, resource
path, profile_to = sys.argv[1], sys.argv[2]
result = {"steps": {}, "cpu_steps": {}, "skipped": []}

def peak_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

def step(name, t):
    # Record the step that began at t = (wall, cpu); return the next start.
    now = (time.perf_counter(), time.process_time())
    result["steps"][name] = now[0] - t[0]
    result["cpu_steps"][name] = now[1] - t[1]
    result.setdefault("peak_after", {})[name] = peak_bytes()
    return now

def work():
    # Imports are not analysis: load them before the clock starts.
    t0 = time.perf_counter()
    import grainlab
    result["import_s"] = time.perf_counter() - t0
    t = (time.perf_counter(), time.process_time())
    # grainlab.analyze is lazy: each attribute is one pipeline step, timed apart.
    a = grainlab.analyze(path)
    trace = a.trace
    t = step("load", t)
    g = a.graph
    t = step("graph", t)
    result["grains"] = int(len(g.grains)); result["nodes"] = int(len(g.nodes))
    result["edges"] = int(len(g.edges)); result["events"] = int(len(trace.events))
    a.metrics
    step("metrics", t)
    result["metric_columns"] = int(len(g.grains.columns))

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
result["peak_bytes"] = peak_bytes()
result["cpu"] = sum(result["cpu_steps"].values())
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
    res["seconds"] = sum(res["steps"].values())
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6,1e7",
                    help="comma-separated grain counts (default 1e5,1e6,1e7)")
    ap.add_argument("--shape", default="fork-join",
                    choices=["fork-join", "spine", "loop", "random", "deep-tree"],
                    help="synthetic trace shape (default fork-join); deep-tree: "
                         "info and analyze at depth 20 and 2,000, synthetic and real")
    ap.add_argument("--deep-steps", default="info,analyze",
                    help="deep-tree: commands to measure (default info,analyze)")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                        "grainlab-bench"),
                    help="where generated traces are kept between runs")
    ap.add_argument("--profile", action="store_true",
                    help="run each child under cProfile; print its top functions "
                         "and keep the .prof file in the cache dir")
    ap.add_argument("--force", action="store_true",
                    help="run a size even if its extrapolated peak memory exceeds "
                         "what is available")
    ap.add_argument("--timeout", type=float, default=1800,
                    help="seconds allowed per generation / measurement")
    args = ap.parse_args(argv)

    sizes = parse_sizes(args.sizes)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    if args.shape == "deep-tree":
        return deep_tree(sizes, cache, args.deep_steps.split(","), args.timeout)
    print(f"analyze_scale: shape={args.shape} sizes={','.join(map(fmt_size, sizes))} "
          f"cache={cache} python={python()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"  machine: {os.cpu_count()} cpus, load average {load:.1f} at start "
          "(step seconds are wall time, imports excluded; cpu s = the child's CPU "
          "time over the same steps: on a busy machine it is the better guide)")
    header = (f"{'grains':>9} {'events':>10} {'nodes':>10} {'load s':>8} {'graph s':>8} "
              f"{'metrics s':>9} {'total s':>8} {'cpu s':>7} {'peak GiB':>8} {'x prev':>7}")
    results: dict[int, dict] = {}
    printed_header = False
    crashed = False
    prev = None
    prev_peak = None
    for n in sizes:
        if prev_peak and not args.force:
            # Peak memory grows ~linearly with grains: do not let a size that
            # cannot fit push the machine (and everyone on it) into the OOM killer.
            need = prev_peak[1] * n / prev_peak[0] * 1.15
            avail = available_bytes()
            if avail and need > avail:
                results[n] = {"skipped": True, "error": f"skipped: needs ~{need / GIB:.1f} GiB by extrapolation, "
                                       f"{avail / GIB:.1f} GiB available (--force runs it)"}
                print(f"{fmt_size(n):>9} SKIPPED: {results[n]['error'][9:]}")
                continue
        trace = cache / f"{args.shape}-{n}.parquet"
        try:
            gen = synth(args.shape, n, trace, args.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            results[n] = {"error": str(e)}
            crashed = True
            print(f"{fmt_size(n):>9} ERROR: {e}")
            prev = prev_peak = None
            continue
        if gen:
            print(f"  generated {trace.name} in {gen:.1f} s ({trace.stat().st_size / 1e6:.0f} MB)")
        prof = str(cache / f"{args.shape}-{n}.prof") if args.profile else ""
        res = measure(trace, prof, args.timeout)
        results[n] = res
        if not printed_header:
            print(header)
            printed_header = True
        if "error" in res:
            crashed = True
            print(f"{fmt_size(n):>9} ERROR: {res['error']}")
            prev = None
            continue
        steps = res["steps"]
        ratio = ""
        if prev is not None and prev[1] > 0:
            ratio = f"{res['seconds'] / prev[1]:.2f}"
        print(f"{res['grains']:>9} {res['events']:>10} {res['nodes']:>10} "
              f"{steps.get('load', 0):>8.2f} {steps.get('graph', 0):>8.2f} "
              f"{steps['metrics'] if 'metrics' in steps else float('nan'):>9.2f} "
              f"{res['seconds']:>8.2f} {res.get('cpu', float('nan')):>7.2f} "
              f"{res['peak_bytes'] / GIB:>8.2f} {ratio:>7}"
              + (f"  (vs {fmt_size(prev[0])})" if ratio else ""))
        cpu = res.get("cpu_steps", {})
        print(f"{'':>9} {'cpu s:':>21} " + " ".join(
            f"{cpu[k]:>{w}.2f}" if k in cpu else f"{'-':>{w}}"
            for k, w in (("load", 8), ("graph", 8), ("metrics", 9))))
        hwm = res.get("peak_after", {})
        print(f"{'':>9} {'peak GiB after:':>21} " + " ".join(
            f"{hwm[k] / GIB:>{w}.2f}" if k in hwm else f"{'-':>{w}}"
            for k, w in (("load", 8), ("graph", 8), ("metrics", 9))))
        for s in res["skipped"]:
            print(f"          skipped: {s}")
        if args.profile and res.get("profile_top"):
            print(res["profile_top"])
        prev = (n, res["seconds"])
        prev_peak = (n, res["peak_bytes"])
    print(summary(results))
    return 1 if crashed else 0


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


def run_cli(command: str, path: Path, timeout: float) -> dict:
    """Wall seconds and peak RSS of one `grainlab <command> --json` child (its
    own rusage from wait4, so no other child's peak counts)."""
    import threading
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen([python(), "-m", "grainlab.cli", command, "--json", str(path)],
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


def summary(results: dict[int, dict]) -> str:
    """One line: each target met or not (or not measured)."""
    parts = []
    ok_all = True
    for n, (max_s, max_mem) in TARGETS.items():
        res = results.get(n)
        if res is None:
            parts.append(f"{fmt_size(n)}: not run")
            ok_all = False
            continue
        if "error" in res:
            parts.append(f"{fmt_size(n)}: " + ("skipped (memory)" if res.get("skipped") else "ERROR"))
            ok_all = False
            continue
        t_ok = res["seconds"] <= max_s
        m_ok = res["peak_bytes"] <= max_mem
        ok_all &= t_ok and m_ok
        partial = ""
        if "metrics" not in res["steps"]:
            partial = " (metrics skipped)"
            ok_all = False
        parts.append(f"{fmt_size(n)}: {res['seconds']:.1f} s (cpu {res.get('cpu', 0):.1f} s) "
                     f"{'<=' if t_ok else '>'} {max_s:.0f} s, "
                     f"{res['peak_bytes'] / GIB:.2f} GiB {'<=' if m_ok else '>'} "
                     f"{max_mem / GIB:.0f} GiB{partial}")
    a, b = results.get(10 ** 6), results.get(10 ** 7)
    if a and b and "error" not in a and "error" not in b and a["seconds"] > 0:
        ratio = b["seconds"] / a["seconds"]
        ok_all &= ratio <= MAX_RATIO
        parts.append(f"1e7/1e6 time ratio {ratio:.1f} {'<=' if ratio <= MAX_RATIO else '>'} "
                     f"{MAX_RATIO:.0f}")
    else:
        parts.append("1e7/1e6 ratio: not measured")
        ok_all = False
    return ("SUMMARY: " + ("all targets met" if ok_all else "targets NOT all met")
            + " | " + "; ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
