"""Adds kq's runtime facts to ``kq version`` and the start-up log."""

from __future__ import annotations

import platform

from kq.config import KqConfig
from kq.hookspecs import hookimpl


@hookimpl(trylast=True)
def kq_report_header(config: KqConfig) -> list[str]:
    selection = "all" if config.plugins.enabled is None else ", ".join(config.plugins.enabled)
    return [
        f"python: {platform.python_implementation()} {platform.python_version()}",
        f"plugin selection: {selection}",
    ]
