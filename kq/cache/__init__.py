"""The quota cache: flavors, ClusterQueues, cohort trees, usage, and per-cycle snapshots."""
