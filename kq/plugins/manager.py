"""Build the pluggy PluginManager: hookspecs, entry points, and the config's selection."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import TypeVar

import pluggy

from kq import hookspecs
from kq.config import PluginsConfig
from kq.plugins.registry import Registry

T = TypeVar("T")

DISABLE_ENV = "KQ_DISABLE_PLUGINS"
NO_AUTOLOAD_ENV = "KQ_DISABLE_PLUGIN_AUTOLOAD"


def _env_names(variable: str) -> set[str]:
    return {name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()}


def build_plugin_manager(config: PluginsConfig | None = None) -> pluggy.PluginManager:
    """Return a manager with every selected ``kq`` entry point loaded and validated.

    Built-in and third-party plugins load the same way; a name is blocked when the config or
    ``KQ_DISABLE_PLUGINS`` disables it, or when ``plugins.enabled`` is set and omits it.
    """
    config = config or PluginsConfig()
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    blocked = set(config.disabled) | _env_names(DISABLE_ENV)
    if config.enabled is not None:
        available = {ep.name for ep in entry_points(group=hookspecs.ENTRY_POINT_GROUP)}
        blocked |= available - set(config.enabled)
    for name in blocked:
        pm.set_blocked(name)
    if config.autoload and not os.environ.get(NO_AUTOLOAD_ENV):
        pm.load_setuptools_entrypoints(hookspecs.ENTRY_POINT_GROUP)
    pm.check_pending()
    return pm


def plugin_names(pm: pluggy.PluginManager) -> list[str]:
    """Names of the registered plugins, sorted, for reports and logs."""
    return sorted(name for name, plugin in pm.list_name_plugin() if plugin is not None)


def collect_registrations(
    pm: pluggy.PluginManager, hook_name: str, registry: Registry[T]
) -> Registry[T]:
    """Call one ``kq_register_*`` hook per plugin so a duplicate names both owners."""
    caller = getattr(pm.hook, hook_name)
    for impl in caller.get_hookimpls():
        impl.function(register=registry.register_from(impl.plugin_name))
    return registry
