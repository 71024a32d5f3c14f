"""An oracle for the cutoff recommendation (grainlab.suite.cutoffs.recommend):
docs/notebooks.md's rule written again from its words, not from the code
(used by tests/test_notebooks.py on the notebooks' measured runs and by
tests/test_cutoffs.py on random sweeps)."""
from __future__ import annotations


def documented_rule(rows, overhead_limit=0.5):
    """docs/notebooks.md's rule ("The rule"), step by step in plain Python over
    the raw runs (dicts with cutoff, alone_s, overhead_fraction), with the
    statistics module: no pandas, nothing of grainlab.suite.cutoffs. Returns
    what `recommend` returns: cutoff (None: no recommendation), fastest,
    indistinguishable (step 1), overhead_bound, fallback (step 3's second
    branch)."""
    import statistics
    by = {}
    for r in rows:
        by.setdefault(r["cutoff"], []).append(r)
    mean = {c: statistics.fmean(float(r["alone_s"]) for r in rs) for c, rs in by.items()}
    sd = {c: statistics.stdev([float(r["alone_s"]) for r in rs]) if len(rs) > 1 else 0.0
          for c, rs in by.items()}
    ovh = {c: statistics.fmean(float(r["overhead_fraction"]) for r in rs) for c, rs in by.items()}
    fastest = min(mean, key=lambda c: (mean[c], c))
    # 1. within one sd (the fastest's plus its own) of the fastest mean
    close = [c for c in mean if mean[c] <= mean[fastest] + sd[fastest] + sd[c]]
    # 2. minus the overhead-bound (more than half the thread time in overhead)
    not_bound = [c for c in mean if ovh[c] <= overhead_limit]
    kept = [c for c in close if c in not_bound]
    # 3. the fastest of the rest; else the fastest not overhead-bound; else none
    pool = kept or not_bound
    choice = min(pool, key=lambda c: (mean[c], c)) if pool else None
    return {"cutoff": choice, "fastest": fastest, "indistinguishable": sorted(close),
            "overhead_bound": sorted(c for c in mean if c not in not_bound),
            "fallback": not kept}
