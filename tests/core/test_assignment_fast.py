"""The one-pod-set, one-resource-group fast path of flavor assignment gives exactly what the
general path gives: modes, borrowing, reasons, every flavor tried and the NoFit reason."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kq.api.clusterqueue import ClusterQueue, FlavorFungibility, PreemptionPolicy
from kq.api.quotas import (
    FlavorQuotas,
    FlavorResource,
    ResourceGroup,
    ResourceQuota,
    quotas_by_flavor_resource,
)
from kq.api.resourceflavor import ResourceFlavor
from kq.api.selectors import Taint, Toleration
from kq.api.workload import PodSet, Workload
from kq.cache.cache import Cache
from kq.cache.snapshot import Snapshot
from kq.scheduler.assignment import _Evaluator, _in_order, _single_group, assign_flavors
from kq.scheduler.modes import AdmissionTerms, Mode
from kq.workload.info import WorkloadInfo
from tests.core.world import plugins

TAINT = Taint("spot", "true", "NoSchedule")
ORACLE_MODES = (Mode.NO_CANDIDATES, Mode.PREEMPT, Mode.RECLAIM)

QUOTA = st.builds(ResourceQuota, st.integers(0, 8), st.one_of(st.none(), st.integers(0, 4)))
CASE = st.fixed_dictionaries(
    {
        "flavors": st.lists(
            st.sampled_from(("a", "spot", "c")), min_size=1, max_size=3, unique=True
        ),
        "covered": st.sampled_from((["cpu"], ["cpu", "memory"], ["cpu", "memory", "pods"])),
        "quotas": st.lists(QUOTA, min_size=18, max_size=18),
        "used": st.lists(st.integers(0, 6), min_size=18, max_size=18),
        "requests": st.dictionaries(
            st.sampled_from(("cpu", "memory", "gpu")), st.integers(0, 4), min_size=1, max_size=2
        ),
        "count": st.integers(1, 3),
        "reduced": st.one_of(st.none(), st.integers(0, 3)),
        "tolerates": st.booleans(),
        "fungibility": st.builds(
            FlavorFungibility,
            st.sampled_from(("MayStopSearch", "TryNextFlavor")),
            st.sampled_from(("MayStopSearch", "TryNextFlavor")),
            st.sampled_from((None, "BorrowingOverPreemption", "PreemptionOverBorrowing")),
        ),
        "borrow_within": st.sampled_from(("Never", "LowerPriority")),
        "assigner": st.sampled_from(("InOrder", "MinimizeBorrowing")),
        "borrow_only": st.booleans(),
        "fair_sharing": st.booleans(),
        "salt": st.integers(0, 2),
    }
)


def _queue(name: str, case: dict[str, Any], offset: int) -> ClusterQueue:
    quotas = iter(case["quotas"][offset:])
    group = ResourceGroup(
        tuple(case["covered"]),
        tuple(FlavorQuotas(f, {r: next(quotas) for r in case["covered"]}) for f in case["flavors"]),
    )
    return ClusterQueue(
        name,
        (group,),
        cohort="co",
        flavor_fungibility=case["fungibility"],
        preemption=PreemptionPolicy("LowerPriority", "Any", case["borrow_within"]),
        flavor_assigner=case["assigner"],
        quotas=quotas_by_flavor_resource((group,)),
    )


def _snapshot(case: dict[str, Any]) -> Snapshot:
    cache = Cache()
    for flavor in ("a", "spot", "c"):
        cache.set_flavor(ResourceFlavor(flavor, node_taints=(TAINT,) if flavor == "spot" else ()))
    cache.set_cluster_queue(_queue("q", case, 0))
    cache.set_cluster_queue(_queue("other", case, 9))
    snapshot = cache.snapshot()
    snapshot.fair_sharing = () if case["fair_sharing"] else None
    used = iter(case["used"])
    for name in ("q", "other"):
        frs = [(f, r) for f in case["flavors"] for r in case["covered"]]
        snapshot.add_usage(snapshot.cluster_queues[name], {fr: next(used) for fr in frs})
    return snapshot


@settings(max_examples=500, deadline=None)
@given(CASE)
def test_fast_path_gives_what_the_general_path_gives(case: dict[str, Any]) -> None:
    snapshot = _snapshot(case)
    cq = snapshot.cluster_queues["q"]
    tolerations = (Toleration("spot", "Exists", "", "NoSchedule"),) if case["tolerates"] else ()
    pod_set = PodSet("main", case["count"], case["requests"], tolerations=tolerations)
    counts = None if case["reduced"] is None else {"main": case["reduced"]}
    terms = AdmissionTerms(True, "budget") if case["borrow_only"] else None
    assigner = plugins().assigners[case["assigner"]]

    def oracle(fr: FlavorResource, value: int) -> tuple[Mode, int]:
        return ORACLE_MODES[(case["salt"] + value + len(fr[0])) % 3], value % 2

    evaluator = _Evaluator(snapshot, cq, oracle, terms)
    general = _in_order(evaluator, (pod_set,), counts, assigner)
    fast = _single_group(evaluator, pod_set, counts, assigner)
    event("general path" if fast is None else f"fast path: {general.mode.name}")
    if fast is not None:
        assert fast == general
    workload = WorkloadInfo(Workload("ns", "w", "ns.w", (pod_set,), "lq", 0))
    assert assign_flavors(snapshot, cq, workload, assigner, oracle, counts, terms) == general
