"""The read-only web dashboard: the cohort tree and its quota, the queues with their pending
positions, a timeline of admissions and preemptions, and each workload's explanation.

It reads the cluster as any client would, through the API server (``kq.dashboard.gather``),
and renders plain HTML with inline SVG; a few lines of JavaScript refresh it.
"""
