"""The garbage collector's settings for a heap of long-lived caches (kq run, kq simulate)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# kq's garbage is rarely cyclic, but each default young collection (every 700 allocations)
# also walks survivors that are about to join millions of cached objects: collect less often.
THRESHOLDS = (50_000, 20, 100)


def settle() -> None:
    """Once the long-lived objects exist (informers synced, a simulation set up): keep them
    out of the collector's scans from now on, and collect young objects less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


@contextmanager
def settled() -> Iterator[None]:
    """``settle`` for a block, in a process that goes on afterwards (tests, benchmarks)."""
    before = gc.get_threshold()
    settle()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
