"""Many traces at once: analyses run on a Dask cluster (a LocalCluster of
worker processes by default, or the user's own scheduler), and the
across-ranks view of an MPI run's traces (docs/cluster.md)."""
