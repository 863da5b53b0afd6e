"""``kq simulate``: what-if runs of the real admission core on a virtual clock.

The queueing objects (Kueue's manifests) and a workload trace go in; the same Cache,
QueueManager, Scheduler and plugins as ``kq run`` decide, cycle after cycle, while a virtual
clock brings arrivals and finishes; figures, a terminal summary and an HTML report come out.
"""
