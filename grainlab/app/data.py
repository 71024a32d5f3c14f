"""What the web app shows, prepared once per trace from the analysis: layout
columns, drawable segments, labels, tables. Per-request work (colouring for a
threshold, zoom windows) is column arithmetic on these arrays."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import problems as P
from ..export.drawing import Coded, GrainLayout
from ..export.palette import BY_VALUE_SHARE, SEVERITY_STEPS, severity_class
from ..metrics.contract import is_one_of
from . import layout
from .figures import EDGE_LIMIT, downsample_steps
from .hover import HoverLabels
from .threads_figure import ThreadTimeline

LOCATION_VIEW = "location"      # the "by source location" view
NO_PROBLEM = "none"


def ranks_among(order: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """The rank (0..k-1) of each of the k grains `hit` picks, in their id
    order, by the stable order `order` of all grains: the same as a stable
    argsort of the argsort of their values alone (the subset of a stable
    order keeps its ties by id too)."""
    picked = hit[order]
    rank = np.empty(int(picked.sum()), np.int64)
    # the j-th picked grain in value order has rank j; it is the how-many-th
    # picked grain in id order?
    in_id_order = np.cumsum(hit) - 1
    rank[in_id_order[order[picked]]] = np.arange(len(rank))
    return rank


def _distinct_threads(thread: np.ndarray) -> list[int]:
    """The thread ids present (sorted), -1 (no thread) left out."""
    t = thread[thread != -1]
    if len(t) and t.min() >= 0 and t.max() < 1 << 20:
        return np.flatnonzero(np.bincount(t)).tolist()
    return np.unique(t).tolist()


class Locations(Coded):
    """Every grain's source location as category codes and their names: one
    small integer a grain, where a numpy string array held the longest
    location's width in UCS-4 (~100-200 bytes a grain: 0.4 GiB at 2.7M
    grains) and took ~1 s to make. `locations[i]` is a grain's location
    (str), `locations[ids]` an object array of them; code -1 (none) is ""."""

    def __init__(self, locations: pd.Series):
        cat = pd.Categorical(locations.astype(str)) \
            if not isinstance(locations.dtype, pd.CategoricalDtype) else locations.array
        super().__init__(np.asarray(cat.codes),
                         np.asarray([str(c) for c in cat.categories] + [""], dtype=object))

    def __array__(self, dtype=None, copy=None):
        """Every grain's location as an object array (8 bytes a grain)."""
        out = self.names[self.codes]
        return out if dtype is None else out.astype(dtype)

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(the locations present, sorted; grains at each): np.unique's answer."""
        n = np.bincount(self.codes[self.codes >= 0], minlength=len(self.names) - 1)
        present = np.flatnonzero(n)
        names = self.names[present]
        order = np.argsort(names.astype(str), kind="stable")
        return names[order], n[present][order]

    def where(self, location: str) -> np.ndarray:
        """Which grains are at `location` (bool per grain)."""
        hit = np.flatnonzero(self.names[:-1] == location)
        return self.codes == hit[0] if len(hit) else np.zeros(len(self.codes), bool)


class AppData:
    def __init__(self, analysis, comparison=None, progress=None, *, scaling=None, ranks=None):
        """scaling: a grainlab.Scaling of this run with others (serve --runs);
        ranks: a grainlab.cluster.ranks.Ranks of its MPI run (serve --ranks)."""
        step = progress or (lambda _m: None)
        a = self.analysis = analysis
        self.comparison = comparison
        self.scaling, self.ranks = scaling, ranks
        g = a.graph_with_metrics
        self.report = a.summary
        step("laying out the grain graph")
        self.n_grains = len(g.grains)
        self.grains = a.grains
        created = layout.creation_times(g)
        x = layout.grain_columns(g, created)["x"].to_numpy(np.int64)
        self.grain_layout = GrainLayout(g, key=created)
        self.n_total = len(x)
        seg = layout.segments(g, x)
        self.origin = int(seg["start"].min()) if len(seg) else 0
        seg["start"] -= self.origin
        seg["end"] -= self.origin
        self.segments = seg
        self.x = x
        self.critical = np.zeros(self.n_total, bool)
        self.critical[:self.n_grains] = self.grains["on_critical_path"].to_numpy(bool)
        self.thresholds = a.resolved_thresholds
        self.problems = [m for m in P.RULES if m in self.grains.columns]
        self._value_orders = {}          # per metric: grains by value (_value_order)
        self.worst_problem = self._worst_problem()
        self.locations = Locations(a.locations)
        self.by_location = a.by_location()
        self.hover = HoverLabels(g, self.locations)
        self.edges = self._edges(g) if self.n_grains <= EDGE_LIMIT else None
        step("parallelism profiles")
        profiles = a.parallelism_profiles
        self.ideal = downsample_steps(profiles["exposed"], "start",
                                      ["optimistic", "conservative"])
        self.achieved = downsample_steps(profiles["achieved"], "time", ["running"])
        self.span_text = a.span_text
        self.parallelism = a.parallelism_numbers
        self.cores = int(self.report["cores_used"])
        threads = _distinct_threads(seg["thread"].to_numpy(np.int64))
        self.thread_rows = {t: i for i, t in enumerate(threads)}
        self.segments["row"] = self._rows(seg["thread"].to_numpy(np.int64))
        self.overhead = self._overhead(g)
        run = self.segments[self.segments["row"] >= 0].groupby("row")
        self.thread_span = pd.DataFrame({"start": run["start"].min(), "end": run["end"].max()})
        ends = [int(seg["end"].max()) if len(seg) else 0,
                int(self.overhead["end"].max()) if len(self.overhead) else 0]
        self.timeline = ThreadTimeline(self.segments, self.overhead, len(self.thread_rows),
                                       0, max(ends))
        step("data locality")
        self.krd_runs, self.krd_note = self._krd(a, comparison)

    @staticmethod
    def _krd(a, comparison) -> tuple[dict, str]:
        """({run label: KRD summary}, note): this run's, and the reference
        run's first when comparing; empty with the reason when there is none."""
        from ..errors import GrainlabError
        runs = {}
        pairs = [("reference", comparison.a)] if comparison is not None else []
        for label, an in pairs + [("this run", a)]:
            try:
                runs[label] = an.krd()
            except GrainlabError as e:
                if an is a:
                    return {}, str(e).split(": ", 1)[-1]
        return runs, ""

    def _worst_problem(self):
        """The problem the trace has worst, the view it opens on: the largest
        share of grains flagged plus share of the grains' work flagged (many
        small grains, or a few that hold the time, both count); None when no
        grain has any."""
        gr = self.grains
        work = gr["work"].to_numpy(np.float64) if "work" in gr else np.ones(len(gr))
        total = max(float(work.sum()), 1.0)
        best, score = None, 0.0
        for m in self.problems:
            hit = P.flagged(gr, m, self.thresholds)
            s = hit.sum() / max(len(gr), 1) + float(work[hit].sum()) / total
            if s > score:
                best, score = m, s
        return best

    # -- colouring -------------------------------------------------------------
    def default_threshold(self, problem: str):
        return self.thresholds.get(problem)

    def severity(self, problem: str, threshold, location=None) -> tuple[np.ndarray, int]:
        """Severity in [0, 1] per grain and the number of problem grains, for the
        view `problem` (a metric, "location" or "none") at `threshold`."""
        n = self.n_grains
        if problem == LOCATION_VIEW:
            hit = self.locations.where(str(location)) if location else np.zeros(n, bool)
            return hit.astype(np.float64), int(hit.sum())
        if problem not in self.problems:
            return np.zeros(n), 0
        th = self.default_threshold(problem) if threshold is None else float(threshold)
        col = self.grains[problem]
        sev, hit = P.severity(col, problem, th), P.crossing(col, problem, th)
        floor = P.floor_mask(self.grains, problem, self.thresholds)
        if floor is not None:      # e.g. preempted: also long enough off the CPU
            sev, hit = np.where(floor, sev, 0.0), hit & floor
        if self.by_value(problem, threshold, hit):
            # most grains flagged: one colour would say nothing; the flagged
            # grains' values by rank (mildest to worst), in fifths
            rank = ranks_among(self._value_order(problem), hit)
            sev = np.zeros(n)
            sev[hit] = (rank + 1) / len(rank)
        return sev, int(hit.sum())

    def _value_order(self, problem: str) -> np.ndarray:
        """Every grain by `problem`'s value, mildest first (one stable sort
        per metric, kept: a threshold change then ranks the flagged grains in
        one pass instead of sorting them, ~1 s at 10^7 grains)."""
        if problem not in self._value_orders:
            v = self.grains[problem].to_numpy(np.float64)
            order = np.argsort(-v if P.RULES[problem].below else v, kind="stable")
            self._value_orders[problem] = order.astype(np.int32) if len(v) < 2 ** 31 else order
        return self._value_orders[problem]

    def value_steps(self, problem: str, threshold, sev=None):
        """False, or, when the view colours by value (by_value), the five
        fifths' value ranges, mildest first ("0.12–0.48"): the legend names
        them, so the steps read as a scale of the metric. sev: this view's
        severity (severity()) when the caller has it already."""
        if not self.by_value(problem, threshold):
            return False
        if sev is None:
            sev, _ = self.severity(problem, threshold)
        step = severity_class(sev)
        v = self.grains[problem].to_numpy(np.float64)
        out = []
        for k in range(1, SEVERITY_STEPS + 1):
            vals = v[step == k]
            out.append(f"{vals.min():.3g}–{vals.max():.3g}" if len(vals) else "none")
        return out

    def by_value(self, problem: str, threshold, hit=None) -> bool:
        """Are the severity steps of this view the flagged grains' values in
        fifths (more than BY_VALUE_SHARE of the grains with a value flagged)?"""
        if problem not in self.problems:
            return False
        col = self.grains[problem].to_numpy(np.float64)
        if hit is None:
            th = self.default_threshold(problem) if threshold is None else float(threshold)
            hit = P.crossing(col, problem, th)
            floor = P.floor_mask(self.grains, problem, self.thresholds)
            if floor is not None:
                hit = hit & floor
        valued = int(np.isfinite(col).sum())
        k = int(np.sum(hit))
        return k >= 5 and k > BY_VALUE_SHARE * valued

    # -- prepared tables ----------------------------------------------------------
    def _overhead(self, g) -> pd.DataFrame:
        """The runtime's own time per thread: forks (creation), book-keeping,
        and the taskwait / taskgroup joins a thread sat in (row, start, end)."""
        nodes = g.nodes
        keep = is_one_of(nodes["type"], "fork", "bookkeeping") | \
            is_one_of(nodes["join_kind"], "taskwait", "taskgroup")
        thread = nodes["thread"].to_numpy(np.int64)
        start, end = nodes["start"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
        keep &= (thread >= 0) & (end > start)
        row = self._rows(thread[keep])
        return pd.DataFrame({"row": row, "start": start[keep] - self.origin,
                             "end": end[keep] - self.origin})

    def _rows(self, thread: np.ndarray) -> np.ndarray:
        """The threads view's row of each thread id (-1: none), by one
        look-up table (a dict map over every fragment was ~1 s at 10^7)."""
        if not self.thread_rows:
            return np.full(len(thread), -1, np.int64)
        ids = np.fromiter(self.thread_rows, np.int64, len(self.thread_rows))
        table = np.full(int(ids.max()) + 1, -1, np.int64)
        table[ids] = np.fromiter(self.thread_rows.values(), np.int64, len(ids))
        inside = (thread >= 0) & (thread < len(table))
        return np.where(inside, table[np.where(inside, thread, 0)], -1)

    def _edges(self, g) -> pd.DataFrame:
        """Creation and synchronization edges (GrainGraph.grain_edges) at the
        grains' positions, for small graphs."""
        e = g.grain_edges()
        out = pd.DataFrame({"p0": self.x[e["src"].to_numpy()], "p1": self.x[e["dst"].to_numpy()],
                            "t0": e["t0"].to_numpy(), "t1": e["t1"].to_numpy()})
        out[["t0", "t1"]] -= self.origin
        return out

    def grain_details(self, gid: int) -> dict | None:
        """Everything the details panel shows about one grain."""
        if gid is None or not 0 <= gid < self.n_grains:
            return None
        g = self.analysis.graph
        row = self.grains.loc[gid]
        # the identity, made for this grain (the column exists only while
        # identities are short: grainlab.tables.identity)
        if "identity" not in row.index:
            ident = g.identities([gid])[0]
            row = pd.concat([pd.Series({"kind": row["kind"], "identity": ident}, dtype=object),
                             row.drop(labels=["kind"])])
        nodes = g.nodes
        own = nodes.index[(nodes["grain"].to_numpy() == gid)]
        frag = nodes.loc[own, ["type", "thread", "cpu", "start", "end", "duration"]]
        frag = frag[frag["type"].astype(str).isin(["fragment", "chunk"])]
        children = np.flatnonzero(self.grains["parent"].to_numpy(np.int64) == gid)
        return {"row": row, "fragments": frag, "children": children,
                "location": self.locations[gid]}
