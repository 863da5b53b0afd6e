"""Admission-check controllers collected from plugins through ``kq_register_admission_checks``."""

from __future__ import annotations

import pluggy

from kq.admissionchecks.interface import AdmissionCheckController
from kq.plugins import Registry, collect_registrations

HOOK = "kq_register_admission_checks"


class NotACheckController(TypeError):
    """A registered class does not implement ``AdmissionCheckController``."""


def controller_name(cls: type[AdmissionCheckController]) -> str:
    """The ``controllerName`` ``cls`` owns, after checking that it implements the Protocol."""
    if not isinstance(cls, type) or not isinstance(cls(), AdmissionCheckController):
        raise NotACheckController(
            f"{cls!r} does not implement kq.admissionchecks.AdmissionCheckController "
            "(CONTROLLER_NAME, WATCHES, activity, sync)"
        )
    return cls.CONTROLLER_NAME


def check_controllers(pm: pluggy.PluginManager) -> dict[str, AdmissionCheckController]:
    """One instance of every registered controller, keyed by ``controllerName``."""
    registry: Registry[type[AdmissionCheckController]] = Registry(
        "admission check controller", controller_name
    )
    collect_registrations(pm, HOOK, registry)
    return {name: registry[name]() for name in registry}
