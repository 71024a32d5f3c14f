#!/usr/bin/env python3
"""What recording costs: fib with a task per call (the finest grains) and fib
with a good cutoff, each run

  app      alone
  empty    under libgrainempty.so (an OMPT tool whose callbacks do nothing: the floor)
  inline   under the collector, time only, each thread writing its own full
           buffers (GRAINLAB_WRITER=0: how it was before the writer thread)
  writer   under the collector, time only, full buffers always handed to the
           writer thread (GRAINLAB_WRITER=1), even when the application's
           threads fill every core
  time     under the collector, time only, as users run it: the writer thread
           takes full buffers while the application leaves it a core (fewer
           traced threads than CPUs), threads write their own otherwise
  counters under the collector with software counters (task-clock,context-switches)

The collector spools compact blocks of events during the run and the
Parquet trace is written afterwards by grainlab-convert, in its own process,
while the application has already exited. Both costs are shown, separately:

  x best / x med / x cpu   the application's wall (best, median) and CPU time
                           (user+sys, best) relative to the app alone
  x pair                   median over repetitions of (wall / the app's wall in
                           the same repetition): neighbouring runs share the
                           machine's load; the summary uses it
  +conv s                  extra wall time from the application's exit until
                           the Parquet file is ready (the converter; median)

Repetitions are interleaved (app, empty, time, counters, app, ...) so drift in
machine load hits every configuration alike; each run waits for the previous
trace to be ready. Also shown: events, bytes per event of the Parquet trace,
and the application's peak RSS. Below the table, the per-call workload at two
run lengths with the same buffer setting: the application's and the
converter's peak RSS and the spool size (the spool is the file of compact
blocks, ~5 bytes/event on fib, that exists between the run and the
conversion; benchmarks/spool_bytes.py compares it with raw blocks). The last line is a
one-line summary against the targets: <= 1.25x per call, <= 1.02x at a good
cutoff, <= 8 bytes/event, memory bounded.

    .venv/bin/python benchmarks/collector_overhead.py [--reps 5] [--threads 2]
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
from grainlab.trace.spool import is_locked, spool_of  # noqa: E402

CONFIGS = ("app", "empty", "inline", "writer", "time", "counters")
TRACED = ("inline", "writer", "time", "counters")
COUNTERS = "task-clock,context-switches"
TARGETS = {"per-call": 1.25, "cutoff": 1.02}
BYTES_TARGET = 8.0
GNU_TIME = "/usr/bin/time"


def timed(argv, env, tmp):
    """Wall seconds, CPU seconds (user+sys) and peak RSS (KiB) of one run.

    Linux carries a process's peak RSS across exec, so a child forked from
    this (large) Python process would report Python's size. GNU time is a
    small process that forks the program itself and reports its %M."""
    if not os.access(GNU_TIME, os.X_OK):
        sys.exit(f"collector_overhead: {GNU_TIME} (GNU time) is needed for peak RSS")
    stats = tmp / "stats"
    start = time.perf_counter()
    proc = subprocess.Popen([GNU_TIME, "-f", "%M %U %S", "-o", str(stats), *argv], env=env,
                            stdout=subprocess.DEVNULL)
    _, status, _ = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"collector_overhead: {' '.join(argv)} failed with {code}")
    rss, user, system = stats.read_text().split()[-3:]
    return elapsed, float(user) + float(system), int(rss)


def wait_ready(trace: Path, timeout=600.0) -> float:
    """Seconds until the converter has written `trace` (spool gone, file there)."""
    start = time.perf_counter()
    spool = spool_of(trace)
    while time.perf_counter() - start < timeout:
        locked = is_locked(spool)
        if locked is None and trace.exists():
            return time.perf_counter() - start
        if locked is False and not trace.exists():
            sys.exit(f"collector_overhead: {spool} was left unconverted (converter failed?)")
        time.sleep(0.002)
    sys.exit(f"collector_overhead: {trace} not ready after {timeout:.0f} s")


def environment(config, threads, trace, buffer_events, convert="background") -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAINLAB_", "OMP_TOOL"))}
    env["OMP_NUM_THREADS"] = str(threads)
    if config == "empty":
        env["OMP_TOOL_LIBRARIES"] = str(_paths.empty_tool_library())
    elif config in TRACED:
        env.update(OMP_TOOL_LIBRARIES=str(_paths.collector_library()),
                   GRAINLAB_OUTPUT=str(trace), GRAINLAB_QUIET="1",
                   GRAINLAB_BUFFER_EVENTS=str(buffer_events), GRAINLAB_CONVERT=convert)
        if config == "counters":
            env["GRAINLAB_COUNTERS"] = COUNTERS
        if config == "inline":
            env["GRAINLAB_WRITER"] = "0"
        if config == "writer":
            env["GRAINLAB_WRITER"] = "1"
    return env


def longest_stall_ms(trace: Path) -> float:
    """The longest time any application thread waited in a flush (FLUSH_BEGIN
    to its FLUSH_END): with the writer thread, only when its pool was full."""
    import json
    import numpy as np
    from grainlab import schema as S
    f = pq.ParquetFile(trace)
    hz = float(json.loads(f.metadata.metadata[b"grainlab.clock"])["hz"])
    t = f.read(columns=["event", "thread", "tsc"])
    ev, th, tsc = (t.column(c).to_numpy() for c in ("event", "thread", "tsc"))
    flush = np.flatnonzero((ev == S.FLUSH_BEGIN) | (ev == S.FLUSH_END))
    o = np.lexsort((tsc[flush], th[flush]))
    rows = flush[o]
    begin = (ev[rows][:-1] == S.FLUSH_BEGIN) & (ev[rows][1:] == S.FLUSH_END) \
        & (th[rows][:-1] == th[rows][1:])
    if not begin.any():
        return 0.0
    gaps = tsc[rows][1:][begin].astype(np.int64) - tsc[rows][:-1][begin].astype(np.int64)
    return float(gaps.max()) * 1e3 / hz


def measure(name, argv, reps, threads, buffer_events, tmp):
    r = {c: {"wall": [], "cpu": [], "conv": [], "rss": 0, "stall": 0.0} for c in CONFIGS}
    files = {c: tmp / f"{name}-{c}.parquet" for c in CONFIGS}
    for _ in range(reps):
        for config in CONFIGS:
            env = environment(config, threads, files[config], buffer_events)
            wall, cpu, rss = timed(argv, env, tmp)
            r[config]["wall"].append(wall)
            r[config]["cpu"].append(cpu)
            r[config]["rss"] = max(r[config]["rss"], rss)
            if config in TRACED:
                r[config]["conv"].append(wait_ready(files[config]))
                r[config]["stall"] = max(r[config]["stall"], longest_stall_ms(files[config]))
    for c in CONFIGS:
        f = files[c]
        r[c]["events"] = pq.ParquetFile(f).metadata.num_rows if f.exists() else 0
        r[c]["bytes"] = f.stat().st_size if f.exists() else 0
    return r


def converter_memory(argv, threads, buffer_events, tmp, name):
    """Run once leaving the spool (GRAINLAB_CONVERT=no), then convert it under
    GNU time: application RSS, spool bytes, converter seconds and RSS."""
    trace = tmp / f"{name}-mem.parquet"
    env = environment("time", threads, trace, buffer_events, convert="no")
    _, _, app_rss = timed(argv, env, tmp)
    spool_bytes = spool_of(trace).stat().st_size
    wall, _, conv_rss = timed([str(_paths.converter()), str(spool_of(trace)), str(trace)],
                              os.environ.copy(), tmp)
    return {"app_rss": app_rss, "spool": spool_bytes, "conv_s": wall, "conv_rss": conv_rss,
            "events": pq.ParquetFile(trace).metadata.num_rows}


def slow_disk(argv, threads, buffer_events, tmp, reps):
    """A disk that stalls: every 4th spool write sleeps 30 ms (the page-cache
    throttling seen on long runs, made repeatable by build/tests/
    libslowwritev.so). Longest application stall and wall, inline vs writer."""
    slow = _paths.build_dir() / "tests" / "libslowwritev.so"
    out = {}
    for config in ("inline", "writer"):
        walls, stalls = [], []
        for _ in range(reps):
            trace = tmp / f"slow-{config}.parquet"
            env = environment(config, threads, trace, buffer_events)
            env.update(LD_PRELOAD=str(slow), GL_SLOW_WRITEV_FROM="2", GL_SLOW_WRITEV_COUNT="4",
                       GL_SLOW_WRITEV_MS="30")
            wall, _, _ = timed(argv, env, tmp)
            wait_ready(trace)
            walls.append(wall)
            stalls.append(longest_stall_ms(trace))
        out[config] = (statistics.median(walls), max(stalls))
    return out


def paired_ratio(r, config, key="wall") -> float:
    """Median over repetitions of (config / app in the same repetition)."""
    return statistics.median(t / a for t, a in zip(r[config][key], r["app"][key]))


def table(rows):
    header = (f"{'workload':<16}{'config':<10}{'best s':>8}{'med s':>8}{'x best':>8}"
              f"{'x med':>7}{'x pair':>7}{'cpu s':>7}{'x cpu':>7}{'+conv s':>9}{'events':>10}"
              f"{'B/event':>8}{'app MiB':>8}{'stall ms':>9}")
    lines = [header, "-" * len(header)]
    for workload, r in rows:
        base_best, base_med = min(r["app"]["wall"]), statistics.median(r["app"]["wall"])
        base_cpu = min(r["app"]["cpu"])
        for c in CONFIGS:
            x = r[c]
            best, med, cpu = min(x["wall"]), statistics.median(x["wall"]), min(x["cpu"])
            conv = f"{statistics.median(x['conv']):.3f}" if x["conv"] else "-"
            ev = str(x["events"]) if x["events"] else "-"
            bpe = f"{x['bytes'] / x['events']:.2f}" if x["events"] else "-"
            xcpu = f"{cpu / base_cpu:.3f}" if base_cpu >= 0.02 else "-"
            stall = f"{x['stall']:.2f}" if c in TRACED else "-"
            lines.append(f"{workload:<16}{c:<10}{best:>8.3f}{med:>8.3f}{best / base_best:>8.3f}"
                         f"{med / base_med:>7.3f}{paired_ratio(r, c):>7.3f}{cpu:>7.3f}"
                         f"{xcpu:>7}{conv:>9}"
                         f"{ev:>10}{bpe:>8}{x['rss'] / 1024:>8.1f}{stall:>9}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--buffer-events", type=int, default=65536)
    ap.add_argument("--per-call", default="27", help="fib args, task per call")
    ap.add_argument("--per-call-long", default="30", help="longer run for memory")
    ap.add_argument("--cutoff", default="39 12", help="fib args with a good cutoff")
    args = ap.parse_args()
    fib = str(_paths.example("fib"))
    long_reps = max(1, args.reps // 3)
    with tempfile.TemporaryDirectory(prefix="grainlab-bench-") as d:
        tmp = Path(d)
        workloads = [("per-call", f"fib {args.per_call}", args.reps),
                     ("cutoff", f"fib {args.cutoff}", args.reps),
                     # a run with almost no events: the tool's fixed start/finish cost
                     ("fixed", "fib 2", args.reps),
                     ("per-call-long", f"fib {args.per_call_long}", long_reps)]
        results, rows = {}, []
        for key, label, reps in workloads:
            results[key] = measure(key, [fib, *label.split()[1:]], reps, args.threads,
                                   args.buffer_events, tmp)
            rows.append((label, results[key]))
        memory = {key: converter_memory([fib, *label.split()[1:]], args.threads,
                                        args.buffer_events, tmp, key)
                  for key, label in (("per-call", f"fib {args.per_call}"),
                                     ("per-call-long", f"fib {args.per_call_long}"))}
        slow = slow_disk([fib, *args.per_call.split()], args.threads, args.buffer_events, tmp,
                         max(1, args.reps // 2))
    print(f"threads={args.threads} buffer_events={args.buffer_events} reps={args.reps} "
          f"(long run: {long_reps}); ratios vs the app alone; +conv s = extra time until "
          "the Parquet trace is ready; load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print(table(rows))
    print()
    print(f"{'memory, same buffer':<22}{'events':>11}{'app MiB':>9}{'spool MiB':>10}"
          f"{'conv s':>8}{'conv ns/ev':>11}{'conv MiB':>9}")
    for key in ("per-call", "per-call-long"):
        m = memory[key]
        print(f"{key:<22}{m['events']:>11}{m['app_rss'] / 1024:>9.1f}"
              f"{m['spool'] / 2**20:>10.1f}{m['conv_s']:>8.2f}"
              f"{1e9 * m['conv_s'] / m['events']:>11.0f}{m['conv_rss'] / 1024:>9.1f}")

    print()
    print(f"slow disk (4 spool writes of fib {args.per_call} sleep 30 ms each): "
          + "; ".join(f"{c}: app wall {w:.3f} s, longest app stall {st:.1f} ms"
                      for c, (w, st) in slow.items()))

    def ratio(key, config="time"):
        return paired_ratio(results[key], config)

    def ready_ratio(key):
        r = results[key]
        return statistics.median((w + c) / a for w, c, a in
                                 zip(r["time"]["wall"], r["time"]["conv"], r["app"]["wall"]))

    per_call, cutoff = ratio("per-call"), ratio("cutoff")
    r = results["per-call"]["time"]
    bpe = r["bytes"] / r["events"] if r["events"] else float("inf")
    short, long_ = memory["per-call"], memory["per-call-long"]
    extra_short = (short["app_rss"] - results["per-call"]["app"]["rss"]) / 1024
    extra_long = (long_["app_rss"] - results["per-call-long"]["app"]["rss"]) / 1024
    growth = long_["events"] / max(short["events"], 1)
    bounded = extra_long <= max(2 * extra_short, extra_short + 16)
    ok = lambda good: "ok" if good else "MISSED"  # noqa: E731
    fixed = results["fixed"]
    print(f"summary: app time per-call {per_call:.2f}x ({ok(per_call <= TARGETS['per-call'])} "
          f"<= {TARGETS['per-call']}), cutoff {cutoff:.3f}x "
          f"({ok(cutoff <= TARGETS['cutoff'])} <= {TARGETS['cutoff']}); "
          f"until the trace is ready per-call {ready_ratio('per-call'):.2f}x, cutoff "
          f"{ready_ratio('cutoff'):.3f}x; {bpe:.2f} B/event ({ok(bpe <= BYTES_TARGET)} "
          f"<= {BYTES_TARGET:g}); app memory +{extra_short:.0f} MiB -> +{extra_long:.0f} MiB "
          f"for {growth:.1f}x the events ({'bounded' if bounded else 'GROWS'}); counters "
          f"per-call {ratio('per-call', 'counters'):.2f}x, empty tool "
          f"{ratio('per-call', 'empty'):.2f}x, inline writes (no writer thread) "
          f"{ratio('per-call', 'inline'):.2f}x, always the writer thread "
          f"{ratio('per-call', 'writer'):.2f}x, longest stall "
          f"{results['per-call']['time']['stall']:.1f} ms (inline "
          f"{results['per-call']['inline']['stall']:.1f} ms, writer "
          f"{results['per-call']['writer']['stall']:.1f} ms), fixed cost "
          f"{1e3 * (min(fixed['time']['wall']) - min(fixed['app']['wall'])):.0f} ms")


if __name__ == "__main__":
    main()
