#!/usr/bin/env python3
"""What recording costs: fib with a task per call (the finest grains) and fib
with a good cutoff, each run

  app      alone
  empty    under libgrainempty.so (an OMPT tool whose callbacks do nothing: the floor)
  time     under the collector, time only
  counters under the collector with software counters (task-clock,context-switches)

Repetitions are interleaved (app, empty, time, counters, app, ...) so drift in
machine load hits every configuration alike; the table shows the best and the
median wall time, their ratios to the app alone and the median of the
per-repetition ratios ("x pair", what the summary uses: neighbouring runs
share the machine's load), events, bytes per event on disk, and peak memory
(max RSS of the program, via GNU time). A second, longer per-call
run with the same buffer setting shows that memory does not grow with the
run. The last line is a one-line summary against the targets:
<= 1.25x per call, <= 1.02x at a good cutoff, <= 8 bytes/event.

    .venv/bin/python benchmarks/collector_overhead.py [--reps 7] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import pyarrow.parquet as pq  # noqa: E402

from grainlab import _paths  # noqa: E402

CONFIGS = ("app", "empty", "time", "counters")
COUNTERS = "task-clock,context-switches"
TARGETS = {"per-call": 1.25, "cutoff": 1.02}
BYTES_TARGET = 8.0


GNU_TIME = "/usr/bin/time"


def run_once(argv, env, tmp) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run of argv.

    Linux carries a process's peak RSS across exec, so a child forked from
    this (large) Python process would report Python's size. GNU time is a
    small process that forks the program itself and reports its %M."""
    rss_file = tmp / "rss"
    use_time = os.access(GNU_TIME, os.X_OK)
    full = [GNU_TIME, "-f", "%M", "-o", str(rss_file), *argv] if use_time else argv
    start = time.perf_counter()
    proc = subprocess.Popen(full, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"collector_overhead: {' '.join(argv)} failed with {code}")
    if use_time:
        return elapsed, int(rss_file.read_text().split()[-1])
    return elapsed, usage.ru_maxrss


def environment(config, threads, trace, buffer_events) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAINLAB_", "OMP_TOOL"))}
    env["OMP_NUM_THREADS"] = str(threads)
    if config == "empty":
        env["OMP_TOOL_LIBRARIES"] = str(_paths.empty_tool_library())
    elif config in ("time", "counters"):
        env.update(OMP_TOOL_LIBRARIES=str(_paths.collector_library()),
                   GRAINLAB_OUTPUT=str(trace), GRAINLAB_QUIET="1",
                   GRAINLAB_BUFFER_EVENTS=str(buffer_events))
        if config == "counters":
            env["GRAINLAB_COUNTERS"] = COUNTERS
    return env


def measure(name, argv, reps, threads, buffer_events, tmp):
    times = {c: [] for c in CONFIGS}
    rss = {c: 0 for c in CONFIGS}
    files = {c: tmp / f"{name}-{c}.parquet" for c in CONFIGS}
    for _ in range(reps):
        for config in CONFIGS:
            t, r = run_once(argv, environment(config, threads, files[config], buffer_events),
                            tmp)
            times[config].append(t)
            rss[config] = max(rss[config], r)
    events = {c: pq.ParquetFile(files[c]).metadata.num_rows if files[c].exists() else 0
              for c in CONFIGS}
    sizes = {c: files[c].stat().st_size if files[c].exists() else 0 for c in CONFIGS}
    return times, rss, events, sizes


def paired_ratio(times, config) -> float:
    """Median over repetitions of (config time / app time in the same
    repetition): runs next to each other in time share the machine's load."""
    return statistics.median(t / a for t, a in zip(times[config], times["app"]))


def table(rows):
    header = (f"{'workload':<22}{'config':<10}{'best s':>9}{'median s':>10}"
              f"{'x best':>8}{'x med':>8}{'x pair':>8}{'events':>11}{'B/event':>9}"
              f"{'peak MiB':>10}")
    lines = [header, "-" * len(header)]
    for workload, times, rss, events, sizes in rows:
        base_best = min(times["app"])
        base_med = statistics.median(times["app"])
        for c in CONFIGS:
            best, med = min(times[c]), statistics.median(times[c])
            bpe = f"{sizes[c] / events[c]:.2f}" if events[c] else "-"
            ev = str(events[c]) if events[c] else "-"
            lines.append(f"{workload:<22}{c:<10}{best:>9.3f}{med:>10.3f}"
                         f"{best / base_best:>8.3f}{med / base_med:>8.3f}"
                         f"{paired_ratio(times, c):>8.3f}{ev:>11}"
                         f"{bpe:>9}{rss[c] / 1024:>10.1f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--buffer-events", type=int, default=65536)
    ap.add_argument("--per-call", default="24", help="fib args, task per call")
    ap.add_argument("--per-call-long", default="27", help="longer run for memory")
    ap.add_argument("--cutoff", default="39 12", help="fib args with a good cutoff")
    args = ap.parse_args()
    fib = str(_paths.example("fib"))
    with tempfile.TemporaryDirectory(prefix="grainlab-bench-") as d:
        tmp = Path(d)
        rows = []
        workloads = [("per-call", f"fib {args.per_call}", args.reps),
                     ("cutoff", f"fib {args.cutoff}", args.reps),
                     # a run with almost no events: the tool's fixed start/finish cost
                     ("fixed", "fib 2", args.reps),
                     ("per-call-long", f"fib {args.per_call_long}", max(1, args.reps // 3))]
        results = {}
        for key, label, reps in workloads:
            argv = [fib, *label.split()[1:]]
            times, rss, events, sizes = measure(key, argv, reps, args.threads,
                                                args.buffer_events, tmp)
            results[key] = (times, rss, events, sizes)
            rows.append((label, times, rss, events, sizes))
    print(f"threads={args.threads} buffer_events={args.buffer_events} reps={args.reps} "
          f"(long run: {max(1, args.reps // 3)}); ratios vs the app alone: of the best "
          "times, of the medians, and the median of per-repetition ratios (x pair, "
          "used in the summary); load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print(table(rows))

    def ratio(key, config="time"):
        return paired_ratio(results[key][0], config)

    per_call, cutoff = ratio("per-call"), ratio("cutoff")
    times, rss, events, sizes = results["per-call"]
    bpe = sizes["time"] / events["time"] if events["time"] else float("inf")
    long_rss, long_events = results["per-call-long"][1], results["per-call-long"][2]
    extra_short = (rss["time"] - rss["app"]) / 1024
    extra_long = (long_rss["time"] - long_rss["app"]) / 1024
    growth = long_events["time"] / max(events["time"], 1)
    bounded = extra_long <= max(2 * extra_short, extra_short + 16)
    ok = lambda good: "ok" if good else "MISSED"  # noqa: E731
    print(f"summary: per-call {per_call:.2f}x ({ok(per_call <= TARGETS['per-call'])} "
          f"<= {TARGETS['per-call']}), cutoff {cutoff:.3f}x "
          f"({ok(cutoff <= TARGETS['cutoff'])} <= {TARGETS['cutoff']}), "
          f"{bpe:.2f} B/event ({ok(bpe <= BYTES_TARGET)} <= {BYTES_TARGET:g}), "
          f"memory +{extra_short:.0f} MiB -> +{extra_long:.0f} MiB for {growth:.1f}x "
          f"the events ({'bounded' if bounded else 'GROWS'}); counters per-call "
          f"{ratio('per-call', 'counters'):.2f}x, empty tool {ratio('per-call', 'empty'):.2f}x, "
          f"fixed cost {1e3 * (min(results['fixed'][0]['time']) - min(results['fixed'][0]['app'])):.0f} ms")


if __name__ == "__main__":
    main()
