"""One analysis of one trace, split by job:

  analysis    the pipeline: Analysis (trace -> graph -> metrics -> problems,
              each step cached), analyze, open
  report      what `grainlab analyze` prints, the problems and location tables
  comparison  Comparison: two runs grain by grain (`grainlab compare`)
  prediction  the replay on simulated cores and its what-ifs (`grainlab predict`)
  locality    data accesses and Kernel Reuse Distance (`grainlab krd`)
  store       save and reopen an analysis without rebuilding it
  selection   a region or time window of the run
  scaling     runs at several thread counts (`grainlab scaling`)
"""
