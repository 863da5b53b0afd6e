"""Job integrations collected from plugins through ``kq_register_job_integrations``."""

from __future__ import annotations

from collections.abc import Mapping

import pluggy

from kq.jobframework.interface import GenericJob
from kq.plugins import Registry, collect_registrations

HOOK = "kq_register_job_integrations"


class NotAnIntegration(TypeError):
    """A registered class does not implement ``GenericJob``."""


def integration_name(cls: type[GenericJob]) -> str:
    """The framework name of ``cls``, after checking that it implements ``GenericJob``."""
    if not isinstance(cls, type) or not isinstance(cls(), GenericJob):
        raise NotAnIntegration(
            f"{cls!r} does not implement kq.jobframework.GenericJob "
            "(NAME, GVK, is_suspended, suspend, pod_sets, run_with_pod_set_info, "
            "restore_pod_sets_info, finished, is_active, pods_ready)"
        )
    return cls.NAME


def job_integrations(pm: pluggy.PluginManager) -> dict[str, GenericJob]:
    """One instance of every registered integration, keyed by framework name."""
    registry: Registry[type[GenericJob]] = Registry("job integration", integration_name)
    collect_registrations(pm, HOOK, registry)
    return {name: registry[name]() for name in registry}


def by_gvk(integrations: Mapping[str, GenericJob]) -> dict[tuple[str, str], GenericJob]:
    """Integrations keyed by ``(apiVersion, kind)``, to find the one for an object."""
    return {(i.GVK.api_version, i.GVK.kind): i for i in integrations.values()}
