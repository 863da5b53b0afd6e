"""kq's configuration file: defaults, validation, and errors that name the bad field.

The file is YAML in the spirit of Kueue's Configuration API; sections are added as the
runtime grows. Unknown keys are errors, because a typo silently ignored is worse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """The configuration is invalid; the message names the field."""


@dataclass(frozen=True)
class PluginsConfig:
    """Which plugins load: ``disabled`` names are blocked; ``enabled``, if set, is an allow-list."""

    autoload: bool = True
    disabled: tuple[str, ...] = ()
    enabled: tuple[str, ...] | None = None


@dataclass(frozen=True)
class KqConfig:
    plugins: PluginsConfig = field(default_factory=PluginsConfig)


def _names(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: must be a list of plugin names")
    return tuple(value)


def _check_keys(section: Mapping[str, Any], allowed: set[str], path: str) -> None:
    unknown = sorted(set(section) - allowed)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise ConfigError(f"{where}: unknown field (allowed: {', '.join(sorted(allowed))})")


def _plugins(section: object) -> PluginsConfig:
    if section is None:
        return PluginsConfig()
    if not isinstance(section, dict):
        raise ConfigError("plugins: must be a mapping")
    _check_keys(section, {"autoload", "disabled", "enabled"}, "plugins")
    autoload = section.get("autoload", True)
    if not isinstance(autoload, bool):
        raise ConfigError("plugins.autoload: must be true or false")
    enabled = section.get("enabled")
    return PluginsConfig(
        autoload=autoload,
        disabled=_names(section.get("disabled", []), "plugins.disabled"),
        enabled=None if enabled is None else _names(enabled, "plugins.enabled"),
    )


def parse_config(document: object) -> KqConfig:
    """Validate a parsed YAML document into a ``KqConfig``."""
    if document is None:
        return KqConfig()
    if not isinstance(document, dict):
        raise ConfigError("configuration: the document must be a mapping")
    _check_keys(document, {"apiVersion", "kind", "plugins"}, "")
    return KqConfig(plugins=_plugins(document.get("plugins")))


def load_config(path: Path | None) -> KqConfig:
    """Read and validate the configuration file; no file means all defaults."""
    if path is None:
        return KqConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return parse_config(document)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
