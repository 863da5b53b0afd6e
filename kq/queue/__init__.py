"""Pending workloads: a heap per ClusterQueue, inadmissible parking and requeue triggers."""
