"""A StatefulSet's pods made members of its pod group, and its group's Workload adopted or
deleted, as pure functions."""

from __future__ import annotations

from typing import Any

from kq.runtime.resources import WORKLOADS
from kq_plugins.jobs import pod_group as group
from kq_plugins.jobs.statefulset import group_workload_name
from kq_plugins.jobs.statefulset_pods import PODS, pod_writes, workload_writes

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"


def sts(replicas: int, parent: str = "statefulset") -> dict[str, Any]:
    return {
        "metadata": {"name": "db", "namespace": "ns", "uid": "sts-uid",
                     "labels": {QUEUE_LABEL: "lq"}},
        "spec": {"replicas": replicas,
                 "template": {"metadata": {"annotations": {PARENT: parent}}}},
    }  # fmt: skip


def pod(name: str, **labels: str) -> dict[str, Any]:
    owner = {"kind": "StatefulSet", "name": "db", "controller": True}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels,
                     "annotations": {PARENT: "statefulset"}, "ownerReferences": [owner]},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def test_a_pod_becomes_a_member_of_its_sets_fast_admission_group() -> None:
    sets = {"ns/db": sts(3)}
    [(resource, found, patch)] = list(pod_writes([pod("db-0")], sets))
    assert (resource, found["metadata"]["name"]) == (PODS, "db-0")
    assert patch is not None
    assert patch["metadata"]["labels"][group.GROUP_NAME_LABEL] == group_workload_name(sts(3))
    assert patch["metadata"]["labels"][QUEUE_LABEL] == "lq"
    notes = patch["metadata"]["annotations"]
    assert notes[group.GROUP_TOTAL_COUNT_ANNOTATION] == "3"
    assert notes[group.FAST_ADMISSION_ANNOTATION] == "true"
    assert notes[group.ROLE_HASH_ANNOTATION] == "main"
    member = pod("db-0", **{group.GROUP_NAME_LABEL: group_workload_name(sts(3)), QUEUE_LABEL: "lq"})
    assert list(pod_writes([member], sets)) == []
    # Only the queue label follows the set once the pod is a member.
    moved = {"ns/db": {**sts(3), "metadata": {**sts(3)["metadata"], "labels": {QUEUE_LABEL: "b"}}}}
    [(_, _, relabel)] = list(pod_writes([member], moved))
    assert relabel == {"metadata": {"labels": {QUEUE_LABEL: "b"}}}
    assert list(pod_writes([pod("db-0")], {"ns/db": sts(0)})) == []


def test_the_set_adopts_its_groups_workload_and_deletes_it_at_zero() -> None:
    workload = {
        "metadata": {"name": group_workload_name(sts(2)), "namespace": "ns",
                     "annotations": {group.IS_GROUP_WORKLOAD_ANNOTATION: "true"},
                     "ownerReferences": [{"kind": "Pod", "uid": "pod-uid"}]},
    }  # fmt: skip
    workloads = {f"ns/{workload['metadata']['name']}": workload}
    [(resource, _, patch)] = list(workload_writes({"ns/db": sts(2)}, workloads))
    assert resource == WORKLOADS
    assert patch is not None
    owners = patch["metadata"]["ownerReferences"]
    assert [(o["kind"], o["uid"]) for o in owners] == [
        ("Pod", "pod-uid"),
        ("StatefulSet", "sts-uid"),
    ]
    assert list(workload_writes({"ns/db": sts(0)}, workloads)) == [(WORKLOADS, workload, None)]
    assert list(workload_writes({"ns/db": sts(2, parent="lws")}, workloads)) == []
