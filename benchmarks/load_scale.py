#!/usr/bin/env python3
"""Loading and `info` at scale (issue 31): per trace, in fresh processes,

  load   what `grainlab analyze` does before its graph: read the events
         (grainlab.trace.trace._read_trace) then validate them, as the command
         line runs it (grainlab.process_memory.enable()); CPU s (user+sys)
         and wall s of each half, VmHWM after each, and the bytes of the
         events frame (per event);
  info   `grainlab info --json TRACE` as the user runs it: CPU s and peak
         RSS from the child's rusage, wall s.

    .venv/bin/python benchmarks/load_scale.py TRACE [TRACE ...] [--repeat N] [--no-info]

Wall seconds on a shared machine are noisy: CPU seconds and peak RSS are the
guide. The best (least CPU) of --repeat runs is printed. Record fib traces
with benchmarks/analyze_scale.py (its cache keeps them). A benchmark, not a
test: it never fails a build.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GIB = 1024 ** 3
# the children's working directory (on their sys.path): another checkout's
# copy can be measured with PYTHONPATH and LOAD_SCALE_CWD pointing at it
CWD = os.environ.get("LOAD_SCALE_CWD", str(REPO))

CHILD = r"""
import json, sys, time
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
import grainlab
from grainlab import process_memory
from grainlab.trace.trace import _read_trace
from grainlab.trace.validate import validate
process_memory.enable()
out = {"hwm_imports": hwm()}
w, c = time.perf_counter(), time.process_time()
t = _read_trace(sys.argv[1])
out["read_wall"], out["read_cpu"] = time.perf_counter() - w, time.process_time() - c
out["hwm_read"] = hwm()
out["events"] = len(t.events)
out["frame_bytes"] = int(t.events.memory_usage(index=False, deep=False).sum())
w, c = time.perf_counter(), time.process_time()
validate(t)
out["check_wall"], out["check_cpu"] = time.perf_counter() - w, time.process_time() - c
out["hwm_checked"] = hwm()
print("RESULT " + json.dumps(out))
"""


def python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def child(args) -> tuple[subprocess.CompletedProcess, float, float, int]:
    """(result, wall s, cpu s, peak RSS bytes) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(args, cwd=CWD, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r, wall, cpu, after.ru_maxrss * 1024


def load(trace: Path) -> dict:
    r, wall, _, _ = child([python(), "-c", CHILD, str(trace)])
    lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if r.returncode or not lines:
        raise SystemExit(f"load {trace}: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(lines[-1][7:])


def info(trace: Path) -> dict:
    # each info in its own grandchild-free child: ru_maxrss of RUSAGE_CHILDREN
    # is the largest child so far, so measure it through a wrapper process
    code = ("import resource, subprocess, sys, time, json\n"
            "t = time.perf_counter()\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "w = time.perf_counter() - t\n"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(json.dumps({'rc': r.returncode, 'wall': w, 'cpu': u.ru_utime + u.ru_stime,"
            " 'peak': u.ru_maxrss * 1024, 'err': r.stderr[-300:]}))\n")
    r = subprocess.run([python(), "-c", code, python(), "-m", "grainlab.cli", "info", "--json",
                        str(trace)], cwd=CWD, capture_output=True, text=True)
    out = json.loads(r.stdout)
    if out["rc"]:
        raise SystemExit(f"info {trace}: {out['err']}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-info", action="store_true")
    ap.add_argument("--no-load", action="store_true")
    args = ap.parse_args(argv)
    print(f"# load average {os.getloadavg()[0]:.2f}; python {python()}")
    for trace in args.traces:
        if not args.no_load:
            runs = [load(trace) for _ in range(args.repeat)]
            b = min(runs, key=lambda x: x["read_cpu"] + x["check_cpu"])
            n = b["events"]
            print(f"{trace.name}: {n:,} events | read {b['read_cpu']:.2f} cpu s "
                  f"({b['read_wall']:.2f} wall), VmHWM {b['hwm_read'] / GIB:.2f} GiB | "
                  f"validate {b['check_cpu']:.2f} cpu s ({b['check_wall']:.2f} wall), "
                  f"VmHWM {b['hwm_checked'] / GIB:.2f} GiB | events frame "
                  f"{b['frame_bytes'] / GIB:.2f} GiB ({b['frame_bytes'] / max(n, 1):.0f} B/event)"
                  f" | imports {b['hwm_imports'] / GIB:.2f} GiB", flush=True)
        if not args.no_info:
            runs = [info(trace) for _ in range(args.repeat)]
            b = min(runs, key=lambda x: x["cpu"])
            print(f"{trace.name}: info --json {b['cpu']:.2f} cpu s ({b['wall']:.2f} wall), "
                  f"peak RSS {b['peak'] / GIB:.2f} GiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
