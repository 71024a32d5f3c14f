"""One analysis of one trace (analysis: Analysis, analyze, open, Comparison)
and its store on disk (store)."""
