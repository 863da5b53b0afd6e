"""OpenTelemetry tracing from the standard ``OTEL_*`` variables, set up once per process.

The plain SDK ignores ``OTEL_TRACES_EXPORTER`` (only auto-instrumentation reads it), so kq
reads it here: ``console``, ``otlp`` (OTLP over HTTP) or ``none``. Unset, it is ``otlp`` when
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its ``_TRACES_`` form) names a collector, else ``none``
so a controller without a collector does not print spans. ``OTEL_SDK_DISABLED=true`` wins.
``kq dev`` also keeps the latest spans in memory (``RECENT``) for ``explain`` and its page.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Mapping, Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from kq import __version__

KEPT_SPANS = 20_000
"""Spans ``kq dev`` keeps in memory; the oldest go first."""


class TracingConfigError(ValueError):
    """An ``OTEL_*`` variable names something kq cannot export to."""


class RecentSpans(SpanExporter):
    """A bounded ring of finished spans, newest last; exporting is an append."""

    def __init__(self, size: int = KEPT_SPANS) -> None:
        self._spans: deque[ReadableSpan] = deque(maxlen=size)
        self._lock = threading.Lock()  # the SDK may export from its worker thread

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self._spans.extend(spans)
        return SpanExportResult.SUCCESS

    def spans(self, trace_id: str | None = None) -> list[ReadableSpan]:
        """Kept spans, all or of one trace (32 hex digits)."""
        with self._lock:
            kept = list(self._spans)
        if trace_id is None:
            return kept
        wanted = int(trace_id, 16)
        return [s for s in kept if s.context is not None and s.context.trace_id == wanted]


RECENT = RecentSpans()
"""The process's ring, filled once ``configure_tracing(keep_recent=True)`` ran."""


def _exporter(name: str) -> SpanExporter | None:
    if name == "console":
        return ConsoleSpanExporter()
    if name == "otlp":
        # Imported only when chosen: it pulls in protobuf and requests.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if name == "none":
        return None
    raise TracingConfigError(f"OTEL_TRACES_EXPORTER: unsupported exporter {name!r}")


def _exporter_names(env: Mapping[str, str]) -> list[str]:
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    default = "otlp" if endpoint else "none"
    raw = env.get("OTEL_TRACES_EXPORTER", default)
    return [n.strip() for n in raw.split(",") if n.strip()]


def configure_tracing(
    environ: Mapping[str, str] | None = None, *, keep_recent: bool = False
) -> TracerProvider | None:
    """Install kq's tracer provider; None when tracing is off. Call ``shutdown`` to flush.
    ``keep_recent``: also keep the latest spans in ``RECENT`` (``kq dev``)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporters = [e for e in (_exporter(n) for n in _exporter_names(env)) if e is not None]
    if not exporters and not keep_recent:
        return None
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, which win over these.
    defaults = {SERVICE_NAME: "kq", SERVICE_VERSION: __version__}
    detected = Resource.create()
    attributes = dict(detected.attributes)
    if "OTEL_SERVICE_NAME" not in env:
        attributes[SERVICE_NAME] = "kq"
    provider = TracerProvider(resource=Resource(defaults).merge(Resource(attributes)))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    if keep_recent:
        provider.add_span_processor(SimpleSpanProcessor(RECENT))
    trace.set_tracer_provider(provider)
    return provider
