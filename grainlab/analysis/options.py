"""How a trace is analyzed, in one object: what `gl.analyze` takes as
keywords, what a reference run is analyzed with, what a saved analysis keeps
(as Perfetto's TraceProcessorConfig gathers a trace processor's settings)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import problems as P
from ..errors import UsageError

WEIGHTS = ("wall", "cpu")


@dataclass(frozen=True)
class Options:
    """thresholds: {metric: value | "auto"} over the defaults (docs/metrics.md;
                   kept as the whole table, defaults included)
    interval:      "median" | "min" | "gap" | ns, for instantaneous parallelism
    region:        parallel region N (as `grainlab info` lists them) or a source
                   location ("app.c:42", "app.c", a function name); None: all
    window:        (t0, t1) ns from the trace's start, or a text "120ms:300ms";
                   kept as (t0, t1), a side None when open; None: all of it
    weigh:         "wall" | "cpu": what a node weighs (docs/metrics.md)
    Bad values fail here, before anything is loaded."""
    thresholds: dict | None = field(default=None, compare=True)
    interval: object = "median"
    region: object = None
    window: object = None
    weigh: str = "wall"

    def __post_init__(self):
        th = P.thresholds(flags=None) if self.thresholds is None else \
            {**P.default_thresholds(), **{k: P.parse_value(k, v, "thresholds")
                                          for k, v in self.thresholds.items()}}
        object.__setattr__(self, "thresholds", th)
        if self.weigh not in WEIGHTS:
            raise UsageError(f"weigh={self.weigh!r}: expected one of {', '.join(WEIGHTS)}")
        if self.window is not None:
            from ..trace.regions import parse_window
            object.__setattr__(self, "window", parse_window(self.window))

    def for_reference(self) -> "Options":
        """A reference run is analyzed whole, with the same thresholds,
        interval and weights."""
        return replace(self, region=None, window=None)

    def to_doc(self) -> dict:
        """As a saved analysis keeps them (JSON)."""
        return {"thresholds": self.thresholds, "interval": self.interval,
                "region": self.region if self.region is None else str(self.region),
                "window": None if self.window is None else list(self.window),
                "weigh": self.weigh}

    @classmethod
    def from_doc(cls, doc: dict) -> "Options":
        w = doc.get("window")
        return cls(thresholds=doc.get("thresholds"), interval=doc.get("interval", "median"),
                   region=doc.get("region"), window=None if w is None else tuple(w),
                   weigh=doc.get("weigh", "wall"))
