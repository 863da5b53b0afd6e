"""The visibility API (``visibility.kueue.x-k8s.io``): pending workloads and their positions,
served by ``kq run`` as an aggregated API."""
