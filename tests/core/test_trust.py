"""kq counts its own admissions and ones it could have made; a forged one is never counted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kq.api.workload import Admission, PodSetAssignment, Workload, parse_workload
from kq.scheduler.trust import distrust
from tests.core.world import World


def world() -> World:
    w = World()
    w.flavor("on-demand")
    w.flavor("a100")
    w.cluster_queue("team-a", [{"on-demand": {"cpu": 4}}])
    w.cluster_queue("team-b", [{"on-demand": {"cpu": 4}}, {"a100": {"nvidia.com/gpu": 2}}])
    w.local_queue("ns-a", "lq", "team-a")
    w.local_queue("ns-b", "lq", "team-b")
    return w


def forged(
    w: World,
    key: str,
    cq: str,
    usage: dict[str, int],
    count: int = 2,
    flavor: str = "on-demand",
) -> Workload:
    """The workload as a watch would deliver it after someone else wrote its admission."""
    psa = PodSetAssignment("main", {r: flavor for r in usage}, usage, count)
    admission = Admission(cq, (psa,))
    reserved = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}
    obj: dict[str, Any] = {
        "metadata": {"namespace": key.split("/")[0], "name": key.split("/")[1], "uid": key},
        "spec": {
            "queueName": w.workloads[key].queue_name,
            "podSets": [World.pod_set("main", {"cpu": 1}, 2)],
        },
        "status": {"conditions": [reserved]},
    }
    parsed = parse_workload(obj)
    assert isinstance(parsed, Workload)
    return replace(parsed, admission=admission)


@pytest.mark.parametrize(
    ("cq", "usage", "count", "flavor", "why"),
    [
        ("team-b", {"cpu": 2000}, 2, "on-demand", "LocalQueue lq admits to ClusterQueue team-a"),
        ("team-a", {"cpu": 1000}, 2, "on-demand", "the usage of cpu is less than its pods"),
        ("team-a", {"cpu": 4000}, 3, "on-demand", "count 3 is outside 2..2"),
        ("team-a", {"cpu": 2000}, 2, "a100", "ClusterQueue team-a has no quota for cpu in"),
    ],
)
def test_a_forged_admission_is_never_counted(
    cq: str, usage: dict[str, int], count: int, flavor: str, why: str
) -> None:
    w = world()
    key = w.submit("forger", "lq", {"cpu": 1}, namespace="ns-a", count=2)
    w.queues.delete_workload(key)
    assert w.scheduler.workload_changed(forged(w, key, cq, usage, count, flavor)) is None
    assert not w.cache.holds_quota(key)
    assert w.scheduler.untrusted[key].startswith(
        why if "LocalQueue" in why else f"pod set main: {why}"
    )
    assert w.cache.usage_of("team-b") == {} or all(
        v == 0 for v in w.cache.usage_of("team-b").values()
    )


def test_an_admission_kq_could_have_made_is_counted_at_start_up() -> None:
    # A new leader finds admissions its predecessor wrote: consistent ones count.
    w = world()
    key = w.submit("ok", "lq", {"cpu": 1}, namespace="ns-a", count=2)
    w.queues.delete_workload(key)
    w.scheduler.workload_changed(forged(w, key, "team-a", {"cpu": 2000}))
    assert w.cache.holds_quota(key)
    assert key not in w.scheduler.untrusted
    assert w.cache.usage_of("team-a")[("on-demand", "cpu")] == 2000


def test_kqs_own_admission_stays_counted_when_the_cluster_queue_changes() -> None:
    w = world()
    key = w.submit("mine", "lq", {"cpu": 1}, namespace="ns-a", count=2)
    w.cycle()
    cached = w.cache.workload(key)
    assert cached is not None
    assert cached.info.obj.admission is not None
    # The flavor leaves the ClusterQueue after admission; the watch event of kq's write comes.
    w.cluster_queue("team-a", [{"spot": {"cpu": 4}}])
    w.scheduler.workload_changed(cached.info.obj)
    assert w.cache.holds_quota(key)
    assert key not in w.scheduler.untrusted


def test_a_forgery_replacing_a_counted_admission_releases_it() -> None:
    w = world()
    key = w.submit("mine", "lq", {"cpu": 1}, namespace="ns-a", count=2)
    w.cycle()
    assert w.cache.holds_quota(key)
    w.scheduler.workload_changed(forged(w, key, "team-b", {"cpu": 2000}))
    assert not w.cache.holds_quota(key)
    assert key in w.scheduler.untrusted
    w.scheduler.workload_deleted(key)
    assert key not in w.scheduler.untrusted


def test_distrust_names_what_is_missing() -> None:
    w = world()
    key = w.submit("x", "lq", {"cpu": 1}, namespace="ns-a", count=2)
    workload = forged(w, key, "team-a", {"cpu": 2000})
    assert workload.admission is not None
    assert distrust(workload, workload.admission, None, None) == "LocalQueue lq doesn't exist"
    assert distrust(workload, workload.admission, "team-a", None) == (
        "ClusterQueue team-a doesn't exist"
    )
    other = replace(workload.admission.pod_set_assignments[0], name="other")
    stray = Admission("team-a", (other,))
    cq = w.cache.cluster_queues["team-a"]
    assert distrust(workload, stray, "team-a", cq) == "pod set other: no such pod set"
