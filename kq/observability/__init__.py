"""Logs, traces and metrics: configured once per process at the edge."""
