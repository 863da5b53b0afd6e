"""kq: Kubernetes-native job queueing that speaks Kueue's API."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kq")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
