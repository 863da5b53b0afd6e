"""A Kubernetes-compatible API server that the real kubectl and kubernetes_asyncio accept."""
