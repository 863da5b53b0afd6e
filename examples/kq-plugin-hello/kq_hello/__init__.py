"""A third-party kq plugin: a module of ``@hookimpl`` functions, found through entry points."""

from __future__ import annotations

from kq.config import KqConfig
from kq.hookspecs import hookimpl

configured: list[KqConfig] = []


@hookimpl
def kq_configure(config: KqConfig) -> None:
    configured.append(config)


@hookimpl
def kq_report_header(config: KqConfig) -> str:
    return "hello from kq-plugin-hello"
