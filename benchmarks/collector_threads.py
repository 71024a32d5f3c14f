#!/usr/bin/env python3
"""The collector's cost per event at 1, 2, 4 and 8 threads, above the empty
OMPT tool (issue 20, part 5): fib with a task per call and the `uts deep`
tree (tied and, when built, untied), each run

  app      alone
  empty    under libgrainempty.so (OMPT callbacks that do nothing: the floor)
  clock    under libgrainclock.so (the empty tool reading the collector's clock
           once per callback and nothing else: the floor of any tool that
           timestamps every event, as the grain graph needs)
  coll     under the collector as users run it (time only, writer thread
           when the run leaves it a core; GRAINLAB_CONVERT=no: the spool is
           left and removed, the converter is not part of the run)

Repetitions are interleaved (app, empty, coll, app, ...) so drift in the
machine's load hits every configuration alike; the figures are medians over
repetitions:

  app s / empty s / coll s   wall seconds of the whole process
  empty/app, coll/app        median of per-repetition ratios (neighbouring
                             runs share the machine's load)
  coll/empty                 the same for the collector over the empty tool:
                             the target is <= 1.15 at every thread count
  clock/empty                the clock floor over the empty tool: where it is
                             above the target, no tool that reads the clock
                             per event meets it on this machine
  coll/clock                 what the collector adds beyond reading the clock
  ns/ev                      (coll - empty) wall / the events the collector
                             recorded, per repetition, median: what recording
                             one event costs the run beyond OMPT dispatch
  -fixed                     the same with each tool's fixed cost taken off
                             (start-up and end: its run of the same program
                             with next to no events, `fib 2`, `uts deep 2 1`,
                             in the same repetition; shown as fixed ms)
  cpu ns/ev                  the same from CPU time (user + sys of every
                             thread, the writer's included)

Deep trees nest task executions on a thread's stack: the runs get an
unlimited stack and OMP_STACKSIZE=256M (every configuration alike).

    .venv/bin/python benchmarks/collector_threads.py [--reps 5] [--threads 1,2,4,8]
        [--fib 29] [--uts "deep 5000 200"] [--no-untied] [--collector LIB]

(--collector another build's libgraincollect.so: before/after on one machine.)

On a machine shared with other work the figures are noisy (the load average
is printed before and after); the ratio column is the one to compare.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grainlab import _paths  # noqa: E402

CONFIGS = ("app", "empty", "clock", "coll")
FIXED = {"fib": ["2"], "uts": ["deep", "2", "1"]}  # next to no events: the fixed cost
TARGET = 1.15
EVENTS = re.compile(r"\((?:complete|[^;]*); (\d+) events\)")


def unlimited_stack():
    resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


TOOLS = {"empty": None, "clock": None, "coll": None}  # set in main: the libraries under test


def environment(config: str, threads: int, trace: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAINLAB_", "OMP_TOOL", "OMP_NUM_THREADS"))}
    env.update(OMP_NUM_THREADS=str(threads), OMP_STACKSIZE="256M")
    if config in ("empty", "clock"):
        env["OMP_TOOL_LIBRARIES"] = TOOLS[config]
    elif config == "coll":
        env.update(OMP_TOOL_LIBRARIES=TOOLS["coll"], GRAINLAB_OUTPUT=str(trace),
                   GRAINLAB_CONVERT="no")
    return env


def run(argv, env) -> tuple[float, float, str]:
    """Wall and CPU (user + sys, all threads) seconds of one run, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, preexec_fn=unlimited_stack)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"collector_threads: {' '.join(map(str, argv))} failed with {r.returncode}: "
                 f"{r.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.stderr


def measure(argv, threads: int, reps: int, tmp: Path, fixed_argv) -> dict:
    """Each repetition: every configuration on the workload, then on a run
    with next to no events (fixed_argv: the tools' start-up and end)."""
    trace = tmp / "t.parquet"
    spool = tmp / "t.parquet.spool"
    r = {c: {"wall": [], "cpu": [], "fixed": []} for c in CONFIGS}
    events = []
    for _ in range(reps):
        for config in CONFIGS:
            wall, _, _ = run(fixed_argv, environment(config, threads, trace))
            r[config]["fixed"].append(wall)
            spool.unlink(missing_ok=True)
            wall, cpu, err = run(argv, environment(config, threads, trace))
            r[config]["wall"].append(wall)
            r[config]["cpu"].append(cpu)
            if config == "coll":
                m = EVENTS.search(err)
                if not m:
                    sys.exit(f"collector_threads: no event count in the collector's line: "
                             f"{err.strip()[-300:]}")
                events.append(int(m.group(1)))
                spool.unlink(missing_ok=True)
    r["events"] = events
    return r


def paired(r, a: str, b: str, key="wall") -> float:
    return statistics.median(x / y for x, y in zip(r[a][key], r[b][key]))


def ns_per_event(r, key="wall") -> float:
    return statistics.median((c - e) / n * 1e9 for c, e, n in
                             zip(r["coll"][key], r["empty"][key], r["events"]))


def ns_per_event_unfixed(r) -> float:
    """Wall ns per event with each tool's fixed cost (its run of next to no
    events in the same repetition) taken off: what recording events costs."""
    return statistics.median(((c - cf) - (e - ef)) / n * 1e9 for c, cf, e, ef, n in
                             zip(r["coll"]["wall"], r["coll"]["fixed"], r["empty"]["wall"],
                                 r["empty"]["fixed"], r["events"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--fib", default="29", help="fib arguments (a task per call)")
    ap.add_argument("--uts", default="deep 5000 200", help="uts arguments")
    ap.add_argument("--no-untied", action="store_true", help="leave out the _untied builds")
    ap.add_argument("--collector", default=str(_paths.collector_library()),
                    help="collector library (another build's, to compare)")
    ap.add_argument("--empty", default=str(_paths.empty_tool_library()),
                    help="empty tool library")
    ap.add_argument("--clock", default=str(_paths.clock_tool_library()),
                    help="clock-floor tool library")
    args = ap.parse_args()
    TOOLS.update(empty=args.empty, clock=args.clock, coll=args.collector)
    threads = [int(t) for t in args.threads.split(",")]
    workloads = [("fib", args.fib), ("uts", args.uts)]
    if not args.no_untied:
        workloads += [(f"{name}_untied", a) for name, a in workloads]
    programs = []
    missing = []
    for name, a in workloads:
        path = _paths.build_dir() / "examples" / name
        if path.exists():
            programs.append((f"{name} {a}", [str(path), *a.split()]))
        else:
            missing.append(name)
    print(f"collector {args.collector}: cost per event, {args.reps} interleaved repetitions, "
          f"medians; {os.cpu_count()} CPUs; load average before "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    if missing:
        print("not built (left out): " + ", ".join(missing))
    header = (f"{'workload':<26}{'thr':>4}{'events':>10}{'app s':>8}{'empty s':>8}{'coll s':>8}"
              f"{'empty/app':>10}{'coll/app':>9}{'clock/empty':>12}{'coll/clock':>11}{'coll/empty':>11}{'ns/ev':>7}{'-fixed':>7}"
              f"{'cpu ns/ev':>10}{'fixed ms':>9}  target")
    print(header)
    print("-" * len(header))
    worst = []
    with tempfile.TemporaryDirectory(prefix="grainlab-threads-") as d:
        for label, argv in programs:
            fixed_argv = [argv[0], *FIXED[Path(argv[0]).name.removesuffix("_untied")]]
            for th in threads:
                r = measure(argv, th, args.reps, Path(d), fixed_argv)
                med = {c: statistics.median(r[c]["wall"]) for c in CONFIGS}
                ratio = paired(r, "coll", "empty")
                ok = ratio <= TARGET
                worst.append((ratio, label, th, paired(r, "clock", "empty")))
                fixed = statistics.median(c - e for c, e in
                                          zip(r["coll"]["fixed"], r["empty"]["fixed"]))
                print(f"{label:<26}{th:>4}{statistics.median(r['events']):>10.0f}"
                      f"{med['app']:>8.3f}{med['empty']:>8.3f}{med['coll']:>8.3f}"
                      f"{paired(r, 'empty', 'app'):>10.2f}{paired(r, 'coll', 'app'):>9.2f}"
                      f"{paired(r, 'clock', 'empty'):>12.2f}{paired(r, 'coll', 'clock'):>11.2f}"
                      f"{ratio:>11.2f}{ns_per_event(r):>7.1f}{ns_per_event_unfixed(r):>7.1f}"
                      f"{ns_per_event(r, 'cpu'):>10.1f}{fixed * 1e3:>9.1f}"
                      f"  {'ok' if ok else 'MISSED'} (<= {TARGET})", flush=True)
    met = sum(1 for w in worst if w[0] <= TARGET)
    floor = sum(1 for w in worst if w[3] > TARGET)
    ratio, label, th, _ = max(worst)
    print(f"summary: collector <= {TARGET}x the empty tool in {met} of {len(worst)} "
          f"(workload, threads); worst {ratio:.2f}x ({label} at {th} threads); the clock "
          f"floor alone is above {TARGET}x in {floor} of them; load average "
          "after " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
