"""The LeaderWorkerSet group Workloads' upkeep as pure functions: which Workloads a set adopts,
and which it owns beyond its groups (kept while a rolling update surges)."""

from __future__ import annotations

from typing import Any

from kq_plugins.jobs.leaderworkerset import group_workload_name
from kq_plugins.jobs.leaderworkerset_groups import adoptions, replicas, surplus
from kq_plugins.jobs.pod_group import IS_GROUP_WORKLOAD_ANNOTATION


def lws(wanted: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "llm", "namespace": "ns", "uid": "set-uid"},
        "spec": {"replicas": wanted},
        "status": status or {},
    }


def workload(index: int, *owners: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": group_workload_name("llm", str(index)),
            "namespace": "ns",
            "resourceVersion": "7",
            "annotations": {IS_GROUP_WORKLOAD_ANNOTATION: "true"},
            "ownerReferences": [{"kind": "Pod", "uid": uid} for uid in owners],
        }
    }


def by_key(*workloads: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"ns/{w['metadata']['name']}": w for w in workloads}


def test_a_set_adopts_its_groups_workloads_once() -> None:
    sets = {"ns/llm": lws(2)}
    mine, beyond = workload(0, "pod-a"), workload(2, "pod-b")
    [(found, patch)] = list(adoptions(sets, by_key(mine, beyond)))
    assert found is mine
    owners = patch["metadata"]["ownerReferences"]
    assert [o["uid"] for o in owners] == ["pod-a", "set-uid"]
    assert owners[1]["kind"] == "LeaderWorkerSet"
    assert patch["metadata"]["resourceVersion"] == "7"
    adopted = workload(0, "pod-a", "set-uid")
    assert list(adoptions(sets, by_key(adopted))) == []


def test_the_workloads_a_set_owns_beyond_its_groups_go() -> None:
    owned = by_key(workload(0, "set-uid"), workload(1, "set-uid"), workload(2, "other"))
    assert surplus({"ns/llm": lws(1)}, owned) == {("ns", group_workload_name("llm", "1"))}
    assert surplus({"ns/llm": lws(2)}, owned) == set()


def test_a_surging_rolling_update_keeps_the_extra_groups() -> None:
    surging = lws(2, {"replicas": 3, "updatedReplicas": 1})
    surging["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 1}}
    assert replicas(surging) == 3
    surging["status"]["updatedReplicas"] = 2
    assert replicas(surging) == 2
    surging["status"]["updatedReplicas"] = 1
    surging["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] = "50%"
    assert replicas(surging) == 2
