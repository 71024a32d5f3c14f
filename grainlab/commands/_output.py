"""Shared by the commands: the progress reporter (grainlab.progress), the
incomplete-trace warning, durations for people."""
from __future__ import annotations

import sys

from ..progress import Progress

__all__ = ["Progress", "warn_incomplete", "fmt_ns"]

def warn_incomplete(analysis):
    """One stderr line when the analysed trace is incomplete (what is missing)."""
    run = analysis.run
    if not run["complete"]:
        print(f"grainlab: warning: {run['trace']} is incomplete: " + "; ".join(run["problems"]),
              file=sys.stderr)


def fmt_ns(ns) -> str:
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"
