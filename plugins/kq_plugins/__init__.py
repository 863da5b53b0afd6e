"""kq's built-in plugins, each registered through the ``kq`` entry-point group."""

# Importing kq first decides which core runs (kq.native) before any module of the compiled
# preemption package can load compiled: a stale build must run none of it.
import kq  # noqa: F401
