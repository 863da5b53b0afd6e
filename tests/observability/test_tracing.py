"""Tracing set-up: which exporter the OTEL_* variables choose, and kq dev's span ring."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from kq.observability.tracing import RECENT, RecentSpans, TracingConfigError, configure_tracing


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_an_otlp_endpoint_turns_the_otlp_exporter_on(environ: dict[str, str], on: bool) -> None:
    provider = configure_tracing(environ)
    try:
        assert (provider is not None) == on
    finally:
        if provider is not None:
            provider.shutdown()


def test_kq_dev_keeps_spans_without_a_collector() -> None:
    provider = configure_tracing({}, keep_recent=True)
    assert provider is not None
    try:
        with provider.get_tracer("test").start_as_current_span("kq.test.kept") as span:
            trace_id = format(span.get_span_context().trace_id, "032x")
        kept = RECENT.spans(trace_id)
        assert [s.name for s in kept] == ["kq.test.kept"]
    finally:
        provider.shutdown()


def test_an_unknown_exporter_is_refused() -> None:
    with pytest.raises(TracingConfigError, match="jaeger"):
        configure_tracing({"OTEL_TRACES_EXPORTER": "jaeger"}, keep_recent=True)


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 8), count=st.integers(0, 20))
def test_the_ring_keeps_the_newest_spans_in_order(size: int, count: int) -> None:
    """``count`` root spans (a trace each): the ring holds the last ``size``, oldest first;
    a trace id finds its span while it is kept, and nothing once it was pushed out."""
    ring = RecentSpans(size)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ring))
    tracer = provider.get_tracer("test")
    ids = []
    for index in range(count):
        with tracer.start_as_current_span(f"span-{index}") as span:
            ids.append(format(span.get_span_context().trace_id, "032x"))
    provider.shutdown()
    kept = ring.spans()
    assert [s.name for s in kept] == [f"span-{i}" for i in range(max(0, count - size), count)]
    for index, trace_id in enumerate(ids):
        found = [s.name for s in ring.spans(trace_id)]
        assert found == ([f"span-{index}"] if index >= count - size else [])
