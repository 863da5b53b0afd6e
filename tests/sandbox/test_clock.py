from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kq.sandbox.cluster.clock import ManualClock, SandboxClock, parse_rfc3339, rfc3339

ORIGIN = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_speed_scales_monotonic_time() -> None:
    ticks = [100.0]
    clock = SandboxClock(60, origin=ORIGIN, monotonic=lambda: ticks[0])
    ticks[0] = 101.0  # one wall second later
    assert (clock.now() - ORIGIN).total_seconds() == 60
    assert clock.wall_seconds(120) == 2


def test_speed_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        SandboxClock(0)


def test_rfc3339_is_second_precision_utc() -> None:
    moment = datetime(2026, 3, 1, 12, 0, 5, 999999, tzinfo=UTC)
    assert rfc3339(moment) == "2026-03-01T12:00:05Z"
    assert parse_rfc3339("2026-03-01T12:00:05Z") == moment.replace(microsecond=0)


def test_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(ORIGIN)
    clock.advance(2.5)
    assert (clock.now() - ORIGIN).total_seconds() == 2.5
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
