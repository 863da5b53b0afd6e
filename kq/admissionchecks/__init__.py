"""Admission checks: the contract a check controller plugin implements, and kq's generic part.

A plugin imports only this package (and ``kq.hookspecs.hookimpl`` to register).
"""

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
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource
from kq.runtime.store import Store

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
