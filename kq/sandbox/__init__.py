"""The embedded default: an in-process Kubernetes API server and a simulated cluster."""
