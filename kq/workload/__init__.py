"""Workload helpers for the core: the queue-facing info and quota usage of a Workload."""
