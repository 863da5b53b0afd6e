"""Error logs carry the traceback, never the failing frame's local variables."""

from __future__ import annotations

import io
import json

import structlog

from kq.observability.logs import configure_logging


def test_an_exception_logs_its_frames_without_locals() -> None:
    stream = io.StringIO()
    structlog.reset_defaults()
    configure_logging("info", json=True, stream=stream)
    secret = "token-abc123"
    try:
        raise ValueError("bad input")
    except ValueError:
        structlog.get_logger("kq.test").exception("failed", using=len(secret))
    record = json.loads(stream.getvalue().splitlines()[-1])
    frames = record["exception"][0]["frames"]
    assert record["exception"][0]["exc_type"] == "ValueError"
    assert frames
    assert all("locals" not in frame for frame in frames)
    assert secret not in stream.getvalue()
    structlog.reset_defaults()
