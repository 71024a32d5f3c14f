"""Durations as every view prints them: one formatter, so `grainlab analyze`,
the web app and the exports show the same numbers the same way."""
from __future__ import annotations


def fmt_ns(ns) -> str:
    """A duration in ns as "12.3 ms", "4.56 us", "789 ns" (3 significant digits)."""
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"
