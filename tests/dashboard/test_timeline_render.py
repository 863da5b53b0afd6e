"""The timeline's marks from conditions and Events, and the page drawn from a view: what
it says and that it escapes what users wrote."""

from __future__ import annotations

from typing import Any

import pytest

from kq.dashboard.model import PENDING_SHOWN, Explanation, Lists, build_view, pending_items
from kq.dashboard.render import WORKLOADS_SHOWN, fragment, page
from kq.dashboard.server import parse_address
from kq.dashboard.timeline import ADMITTED, CREATED, FINISHED, PREEMPTED, lanes


def stamp(second: int) -> str:
    return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}Z"


def wl(name: str, created: int, *conditions: tuple[str, str, int, str]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "creationTimestamp": stamp(created)},
        "spec": {"queueName": "lq", "priority": 3},
        "status": {"conditions": [
            {"type": t, "status": "True", "reason": r, "message": f"{t} {r}",
             "lastTransitionTime": stamp(at)} for t, r, at, _ in conditions]},
    }  # fmt: skip


def event(name: str, reason: str, first: int, last: int, message: str = "") -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "Workload", "namespace": "ns", "name": name},
        "reason": reason, "message": message or reason,
        "firstTimestamp": stamp(first), "lastTimestamp": stamp(last),
    }  # fmt: skip


def test_admitted_preempted_readmitted_finished() -> None:
    workload = wl("w", 0, ("Admitted", "Admitted", 50, ""), ("Finished", "Succeeded", 80, ""))
    events = [
        event("w", "Admitted", 10, 10),
        event("w", "Preempted", 30, 30, "preempted by ns/high"),
        event("w", "Admitted", 50, 50),  # the condition's own admission, once
        event("gone", "Admitted", 5, 5),  # a deleted workload's event
        {"involvedObject": {"kind": "Pod", "namespace": "ns", "name": "w"}, "reason": "Preempted"},
    ]
    (lane,) = lanes([workload], events)
    assert lane.key == "ns/w"
    kinds = [(m.kind, m.at % 3600) for m in lane.marks]
    assert kinds == [(CREATED, 0), (ADMITTED, 10), (PREEMPTED, 30), (ADMITTED, 50), (FINISHED, 80)]
    assert lane.marks[2].message == "preempted by ns/high"


def test_an_evicted_condition_marks_a_preemption_without_events() -> None:
    workload = wl("w", 0, ("Evicted", "Preempted", 20, ""))
    (lane,) = lanes([workload], [])
    assert [m.kind for m in lane.marks] == [CREATED, PREEMPTED]


def view() -> Any:
    lists = Lists(
        cluster_queues=[{"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [
                {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]},
            "status": {"flavorsUsage": [{"name": "rf", "resources": [
                {"name": "cpu", "total": "1500m", "borrowed": "0"}]}]}}],
        local_queues=[{"metadata": {"namespace": "ns", "name": "lq"},
                       "spec": {"clusterQueue": "cq"}}],
        workloads=[wl("<b>w</b>", 0)],
        problems=["cannot list events: 403 Forbidden"],
    )  # fmt: skip
    summary = {"items": [{"metadata": {"namespace": "ns", "name": "<b>w</b>"}, "priority": 3,
                          "localQueueName": "lq", "positionInClusterQueue": 0,
                          "positionInLocalQueue": 0}]}  # fmt: skip
    return build_view(lists, {"cq": pending_items(summary)}, now=1767225700.0)


def test_the_page_says_what_the_view_holds_and_escapes_it() -> None:
    shown = view()
    shown.explanation = Explanation("ns/<b>w</b>", "Pending", ["Position 1 of 1 <here>"])
    html = page(shown, "ns/<b>w</b>")
    assert "<b>w</b>" not in html
    assert "ns/&lt;b&gt;w&lt;/b&gt;" in html
    assert "Position 1 of 1 &lt;here&gt;" in html
    assert "used 1500m of nominal 2, borrowed 0, lent 0" in html
    assert "cannot list events: 403 Forbidden" in html
    assert 'href="?workload=ns%2F%3Cb%3Ew%3C%2Fb%3E"' in html
    assert "<script>" in html
    assert 'fetch("fragment"' in html


def test_a_missing_explanation_says_why() -> None:
    shown = view()
    shown.explanation = Explanation(
        "ns/x", "", [], "no explanation: 503: this replica does not lead"
    )
    assert "no explanation: 503: this replica does not lead" in fragment(shown, "ns/x")


@pytest.mark.parametrize("text", ["8080", "host:", "host:port", "h:70000", ""])
def test_a_bad_address_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not HOST:PORT"):
        parse_address(text)


def test_addresses() -> None:
    assert parse_address("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_address(":0") == ("", 0)
    assert parse_address("[::1]:9") == ("::1", 9)


def test_long_lists_are_cut_and_say_so() -> None:
    lists = Lists(workloads=[wl(f"w{i:03}", i) for i in range(WORKLOADS_SHOWN + 2)])
    summary = {"items": [{"metadata": {"namespace": "ns", "name": f"w{i:03}"},
                          "positionInClusterQueue": i} for i in range(PENDING_SHOWN)]}  # fmt: skip
    html = fragment(build_view(lists, {"cq": pending_items(summary)}, now=1767225700.0), None)
    assert "and 2 more (finished ones last)" in html
    assert f"the first {PENDING_SHOWN} shown" in html
    assert html.count('<tr class="state-pending">') == WORKLOADS_SHOWN
