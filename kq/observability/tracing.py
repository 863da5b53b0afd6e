"""OpenTelemetry tracing from the standard ``OTEL_*`` variables, set up once per process.

The plain SDK ignores ``OTEL_TRACES_EXPORTER`` (only auto-instrumentation reads it), so kq
reads it here: ``console``, ``otlp`` (OTLP over HTTP) or ``none``; the default is ``none`` so
a controller without a collector does not print spans. ``OTEL_SDK_DISABLED=true`` wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from kq import __version__


class TracingConfigError(ValueError):
    """An ``OTEL_*`` variable names something kq cannot export to."""


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


def configure_tracing(environ: Mapping[str, str] | None = None) -> TracerProvider | None:
    """Install kq's tracer provider; None when tracing is off. Call ``shutdown`` to flush."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "none").split(",") if n.strip()]
    exporters = [e for e in (_exporter(n) for n in names) if e is not None]
    if not exporters:
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
    trace.set_tracer_provider(provider)
    return provider
