"""structlog set-up: key=value on a terminal, JSON otherwise (in-cluster), configured once."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from opentelemetry import trace


def add_trace_ids(
    _: Any, __: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Attach the current OpenTelemetry trace and span ids so logs join traces."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event_dict["trace_id"] = format(context.trace_id, "032x")
        event_dict["span_id"] = format(context.span_id, "016x")
    return event_dict


def configure_logging(
    level: str = "info", *, json: bool | None = None, stream: TextIO | None = None
) -> None:
    """Route kq's and the stdlib's loggers (aiohttp, kubernetes_asyncio) through one chain."""
    stream = stream or sys.stderr
    as_json = not stream.isatty() if json is None else json
    numeric = logging.getLevelNamesMapping()[level.upper()]
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        add_trace_ids,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    )
    # Tracebacks without local variables: they would copy tokens, objects and bodies into logs.
    no_locals = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
    exceptions: list[structlog.typing.Processor] = (
        [structlog.processors.ExceptionRenderer(no_locals)] if as_json else []
    )
    structlog.configure(
        processors=[*shared, *exceptions, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *exceptions,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # aiohttp and kubernetes_asyncio are chatty below WARNING and say nothing kq's logs don't.
    root.setLevel(max(numeric, logging.WARNING))


LOG_LEVELS = ("debug", "info", "warning", "error")


def add_log_level_option(parser: argparse.ArgumentParser) -> None:
    """``--log-level``: at ``debug``, one line per scheduling decision besides the rest."""
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="lowest level logged (debug adds one line per scheduling decision)",
    )
