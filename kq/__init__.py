"""kq: Kubernetes-native job queueing that speaks Kueue's API."""

from importlib.metadata import PackageNotFoundError, version

from kq import native

try:
    __version__ = version("kq")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

CORE = native.choose()
"""``compiled`` when the mypyc-built admission core runs, else ``python`` (``kq.native``)."""

__all__ = ["CORE", "__version__"]
