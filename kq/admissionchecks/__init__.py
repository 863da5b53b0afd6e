"""Admission checks: the contract a check controller plugin implements, and kq's generic part.

A plugin imports only this package (and ``kq.hookspecs.hookimpl`` to register).
"""

from typing import TYPE_CHECKING

from kq.admissionchecks.interface import (
    PENDING,
    READY,
    REJECTED,
    RETRY,
    STATES,
    Activity,
    AdmissionCheckController,
    CheckContext,
    CheckUpdate,
    Obj,
)
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource
from kq.runtime.store import Store

if TYPE_CHECKING:
    from kq.runtime.client import KubeClient


def __getattr__(name: str) -> object:
    # Loading a plugin must not load kubernetes_asyncio (the pure core's benchmarks and tools
    # run without it); the client type is fetched when a plugin asks for it.
    if name == "KubeClient":
        from kq.runtime.client import KubeClient

        return KubeClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PENDING",
    "READY",
    "REJECTED",
    "RETRY",
    "STATES",
    "Activity",
    "AdmissionCheckController",
    "ApiError",
    "CheckContext",
    "CheckUpdate",
    "KubeClient",
    "Obj",
    "Resource",
    "Store",
]
