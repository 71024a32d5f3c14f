"""Shared by `analyze` and `compare`: trace -> graph -> metrics, with progress.

Progress goes to stderr, one line per step, only when stderr is a terminal or
the run has already taken a while (so quick runs and pipes stay quiet).
"""
from __future__ import annotations

import sys
import time

from ..trace import load

SLOW_SECONDS = 3.0


class Progress:
    def __init__(self, enabled=None):
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty() if enabled is None else enabled

    def __call__(self, message: str):
        elapsed = time.monotonic() - self.t0
        if self.tty or elapsed > SLOW_SECONDS:
            print(f"grainlab: [{elapsed:6.1f} s] {message} ...", file=sys.stderr, flush=True)


def graph_of(path, progress):
    """Load and validate the trace at `path`, build its grain graph."""
    progress(f"loading {path}")
    trace = load(path)
    progress(f"building the grain graph ({len(trace.events)} events)")
    return trace, trace.graph()


def program_of(trace) -> str:
    cmd = trace.meta.get("command")
    if isinstance(cmd, list) and cmd:
        return " ".join(map(str, cmd))
    return str(cmd or "?")


def warn_incomplete(trace):
    if not trace.complete:
        print(f"grainlab: warning: {trace.path} is incomplete: " + "; ".join(trace.problems),
              file=sys.stderr)


def fmt_ns(ns) -> str:
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"
