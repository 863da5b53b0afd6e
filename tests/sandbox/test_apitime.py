from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kq.sandbox.cluster.apitime import ApiTime
from kq.sandbox.cluster.clock import SandboxClock, parse_rfc3339

START = datetime(2026, 3, 1, 12, 0, 0, 400_000, tzinfo=UTC)  # mid-second, as in reality


def _api_time(speed: float = 60.0) -> tuple[ApiTime, list[float]]:
    ticks = [0.0]
    clock = SandboxClock(speed, monotonic=lambda: ticks[0],
                         wall=lambda: START + timedelta(seconds=ticks[0]))  # fmt: skip
    return ApiTime(clock), ticks


def _pod(status: dict[str, object], rv: str = "1") -> dict[str, object]:
    return {"metadata": {"name": "p", "uid": "u1", "resourceVersion": rv}, "status": status}


def test_written_stamps_are_wall_time_never_ahead_of_it() -> None:
    api, ticks = _api_time()
    ticks[0] = 10.3  # sandbox time is 618 s ahead of the origin, wall time only 10.3 s
    sandbox_now = api.clock.now()
    body, stamps = api.outgoing({"status": {"startTime": _rfc(sandbox_now), "phase": "Running"}})
    wall = parse_rfc3339(body["status"]["startTime"])
    assert wall <= api.clock.wall() < wall + timedelta(seconds=1)
    assert body["status"]["phase"] == "Running"
    assert [s.path for s in stamps] == [("status", "startTime")]


def test_read_back_gives_the_exact_sandbox_value_this_process_wrote() -> None:
    api, ticks = _api_time()
    ticks[0] = 10.3
    started = _rfc(api.clock.now())
    body, stamps = api.outgoing({"status": {"containerStatuses": [
        {"state": {"running": {"startedAt": started}}}]}})  # fmt: skip
    api.record("u1", stamps)
    seen = api.incoming(_pod(body["status"]))
    assert seen["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] == started
    # Written again unchanged, the stamp is the same wall second: no spurious update.
    again, _ = api.outgoing({"status": seen["status"]})
    assert again == body


def test_stamps_from_elsewhere_map_to_the_sandbox_time_of_that_wall_moment() -> None:
    api, ticks = _api_time()
    ticks[0] = 20.0
    created = _rfc(START + timedelta(seconds=10))  # written by the API server at wall +10 s
    seen = api.incoming({"metadata": {"uid": "x", "resourceVersion": "3",
                                      "creationTimestamp": created}})  # fmt: skip
    moment = parse_rfc3339(str(seen["metadata"]["creationTimestamp"]))
    assert moment == api.clock.from_wall(parse_rfc3339(created))
    assert moment < api.clock.now()
    body, _ = api.outgoing({"metadata": seen["metadata"]})
    assert body["metadata"]["creationTimestamp"] == created  # the round trip is stable


def test_forgets_objects_that_are_gone() -> None:
    api, ticks = _api_time()
    ticks[0] = 5.5
    body, stamps = api.outgoing({"status": {"startTime": _rfc(api.clock.now())}})
    api.record("u1", stamps)
    api.retain(set())
    seen = api.incoming(_pod(body["status"], rv="2"))
    exact = _rfc(api.clock.now())
    assert seen["status"]["startTime"] != exact  # back to the API's whole-second precision
    assert parse_rfc3339(str(seen["status"]["startTime"])) <= parse_rfc3339(exact)


def _rfc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
