"""Plugin loading and the named-registry used by the ``kq_register_*`` hooks."""

from kq.plugins.manager import build_plugin_manager, collect_registrations, plugin_names
from kq.plugins.registry import DuplicateNameError, Registry

__all__ = [
    "DuplicateNameError",
    "Registry",
    "build_plugin_manager",
    "collect_registrations",
    "plugin_names",
]
