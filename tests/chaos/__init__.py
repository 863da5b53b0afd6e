"""The chaos suite (issue 18): kq under kills, pauses, watch drops, error storms and API server
restarts, with a workload mix flowing, checked for quota over-commit, double admission, lost
Workloads, leader hand-over and convergence. ``storm.run_storm`` is the engine; the short
seeded run is ``test_chaos.py``, the long configurable one ``benchmarks/chaos.py``."""
