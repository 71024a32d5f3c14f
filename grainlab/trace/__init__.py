"""Reading and checking a trace, and what `grainlab info` says about it: the
Parquet file (trace), the spool a run leaves (spool), batches of events
(batches), the checks (validate), dependence waits folded away
(dependence_waits), the parallel regions (regions) and the run's facts, in
memory (facts) or streamed (scan). Imports only the shared base."""
