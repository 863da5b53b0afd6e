from __future__ import annotations

import io
import json
import logging

import structlog

from kq.observability.logs import configure_logging


def test_json_lines_off_a_terminal_for_kq_and_stdlib_loggers() -> None:
    stream = io.StringIO()
    configure_logging("info", json=True, stream=stream)
    structlog.reset_defaults()
    configure_logging("info", json=True, stream=stream)
    structlog.get_logger("kq.test").info("admitted", workload="default/wl", flavor="vlp-24")
    logging.getLogger("aiohttp.test").warning("slow response")
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert records[0]["event"] == "admitted"
    assert records[0]["flavor"] == "vlp-24"
    assert records[0]["level"] == "info"
    assert records[1]["event"] == "slow response"
    assert records[1]["level"] == "warning"
