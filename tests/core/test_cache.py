"""The cache owns usage: assume/forget, copy-on-write snapshots, spec changes."""

from __future__ import annotations

from dataclasses import replace

from kq.api.admissioncheck import parse_admission_check
from kq.api.conditions import Condition
from kq.api.interning import flavor_resource
from kq.api.workload import EVICTED, QUOTA_RESERVED, Admission, PodSet, PodSetAssignment, Workload
from kq.workload.info import WorkloadInfo, new_info
from tests.core.world import World

FR = ("f", "cpu")


def holder(name: str, cpu: int) -> WorkloadInfo:
    wl = Workload("ns", name, name, (PodSet("main", 1, {"cpu": cpu}),), "q")
    return WorkloadInfo(wl, "a", 0.0, {FR: cpu})


def world() -> World:
    w = World()
    w.flavor("f")
    w.cluster_queue("a", [{"f": {"cpu": 4}}], cohort="c")
    w.cluster_queue("b", [{"f": {"cpu": 4}}], cohort="c")
    return w


def test_assume_then_forget_returns_the_quota() -> None:
    w = world()
    w.cache.assume_workload(holder("x", 3000))
    assert w.cache.usage_of("a")[FR] == 3000
    w.cache.forget_workload("ns/x")
    assert w.cache.usage_of("a")[FR] == 0


def test_forget_leaves_a_confirmed_workload_alone() -> None:
    w = world()
    w.cache.assume_workload(holder("x", 3000))
    w.cache.mark_admitted("ns/x")
    w.cache.forget_workload("ns/x")
    assert w.cache.holds_quota("ns/x")


def test_snapshot_changes_never_leak_into_the_cache_or_back() -> None:
    w = world()
    w.cache.add_workload(holder("x", 1000))
    snapshot = w.cache.snapshot()
    a = snapshot.cluster_queues["a"]
    snapshot.add_usage(a, {FR: 2000})
    assert w.cache.usage_of("a")[FR] == 1000
    w.cache.add_workload(holder("y", 1000))
    assert snapshot.used(a, FR) == 3000
    assert set(a.workloads) == {"ns/x"}
    assert set(w.cache.workloads_in("a")) == {"ns/x", "ns/y"}


def test_spec_change_reapplies_usage_to_the_new_tree() -> None:
    w = world()
    w.cache.add_workload(holder("x", 6000))
    snapshot = w.cache.snapshot()
    assert snapshot.available(snapshot.cluster_queues["b"], FR) == 2000
    w.cluster_queue("b", [{"f": {"cpu": 10}}], cohort="c")
    snapshot = w.cache.snapshot()
    assert snapshot.available(snapshot.cluster_queues["b"], FR) == 8000


def test_re_adding_a_workload_replaces_its_usage() -> None:
    w = world()
    info = holder("x", 1000)
    w.cache.add_workload(info)
    w.cache.add_workload(replace(info, usage={FR: 2500}))
    assert w.cache.usage_of("a")[FR] == 2500
    w.cache.delete_workload("ns/x")
    assert w.cache.usage_of("a")[FR] == 0


def test_deleting_a_flavor_or_failing_a_check_deactivates_the_queue() -> None:
    w = world()
    w.cache.delete_flavor("f")
    assert w.cache.inactive_reason("a") == (
        "FlavorNotFound",
        "Can't admit new workloads: references missing ResourceFlavor(s): f.",
    )
    w.flavor("f")
    w.cluster_queue("a", [{"f": {"cpu": 4}}], cohort="c", admissionChecks=["prov"])
    assert w.cache.inactive_reason("a") == (
        "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): prov.",
    )
    check = parse_admission_check(
        {
            "metadata": {"name": "prov"},
            "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"},
            "status": {"conditions": [{"type": "Active", "status": "False"}]},
        }
    )
    w.cache.set_admission_check(check)
    assert w.cache.inactive_reason("a") == (
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): prov.",
    )
    w.cache.set_admission_check(replace(check, active=True))
    assert w.cache.inactive_reason("a") is None
    w.cache.delete_admission_check("prov")
    assert w.cache.inactive_reason("a") is not None


def test_the_active_queues_are_those_a_snapshot_holds() -> None:
    w = world()
    assert w.cache.active() == set(w.cache.snapshot().cluster_queues) == {"a", "b"}
    w.cluster_queue("a", [{"f": {"cpu": 4}}], cohort="c", admissionChecks=["prov"])
    assert w.cache.active() == set(w.cache.snapshot().cluster_queues) == {"b"}
    w.cache.delete_cluster_queue("b")
    assert w.cache.active() == set(w.cache.snapshot().cluster_queues) == set()


def test_quota_and_usage_maps_share_one_tuple_per_flavor_and_resource() -> None:
    """Lookups then find their key by identity (``kq.api.interning``)."""
    w = world()
    w.cache.add_workload(new_info(admitted(), "a"))
    node = w.cache.snapshot().cluster_queues["a"].node
    (quota_key,) = node.quotas
    (usage_key,) = w.cache.usage_of("a")
    assert quota_key == usage_key == ("f", "cpu")
    assert quota_key is usage_key is flavor_resource("f", "cpu")


def admitted() -> Workload:
    assignment = PodSetAssignment("main", {"cpu": "f"}, {"cpu": 2000}, 1)
    wl = Workload("ns", "x", "x", (PodSet("main", 1, {"cpu": 2000}),), "q")
    return replace(wl, admission=Admission("a", (assignment,)))


def test_deleting_a_queue_or_cohort_rebuilds_the_tree() -> None:
    w = world()
    w.cache.add_workload(holder("x", 6000))
    w.cache.delete_cluster_queue("b")
    snapshot = w.cache.snapshot()
    assert set(snapshot.cluster_queues) == {"a"}
    assert snapshot.available(snapshot.cluster_queues["a"], FR) == 0  # 4 nominal, 6 used
    w.cohort("c", groups=[{"f": {"cpu": 10}}])
    snapshot = w.cache.snapshot()
    assert snapshot.available(snapshot.cluster_queues["a"], FR) == 8000
    w.cache.delete_cohort("c")
    snapshot = w.cache.snapshot()
    assert snapshot.available(snapshot.cluster_queues["a"], FR) == 0


def test_a_workloads_eviction_and_reservation_time_are_read_from_its_conditions() -> None:
    wl = admitted()
    assert WorkloadInfo(wl).reservation() == (False, None)
    reserved = Condition(QUOTA_RESERVED, "True", "QuotaReserved", "", 7.0)
    evicted = Condition(EVICTED, "True", "Preempted", "", 9.0)
    info = WorkloadInfo(replace(wl, conditions=(reserved, evicted)))
    assert info.reservation() == (True, 7.0)
    gone = Condition(EVICTED, "False", "Preempted", "", 9.0)
    assert WorkloadInfo(replace(wl, conditions=(reserved, gone))).reservation() == (False, 7.0)
