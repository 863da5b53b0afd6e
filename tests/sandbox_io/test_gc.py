"""The driver's stand-in garbage collector for a bare kube-apiserver (no controller-manager)."""

from __future__ import annotations

from typing import Any

from kq.sandbox.cluster.actions import Delete, Patch, Ref
from kq.sandbox.cluster.garbage import finish_foreground, orphans


def _obj(kind: str, name: str, uid: str, owner: tuple[str, str] | None = None,
         **meta: Any) -> dict[str, Any]:  # fmt: skip
    refs = [{"kind": owner[0], "name": "x", "uid": owner[1], "apiVersion": "v1"}] if owner else []
    api = {"Pod": "v1", "Job": "batch/v1", "JobSet": "jobset.x-k8s.io/v1alpha2",
           "Workload": "kueue.x-k8s.io/v1beta1"}[kind]  # fmt: skip
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": refs,
                         **meta}}  # fmt: skip


def test_dependents_of_a_vanished_owner_are_orphans() -> None:
    orphan = _obj("Pod", "p", "u1", ("Job", "gone"))
    workload = _obj("Workload", "job-gone", "u4", ("Job", "gone"))  # Kueue leaves it to the GC
    foreign = _obj("Pod", "q", "u2", ("DaemonSet", "gone"))  # not a kind the driver watches
    kept = _obj("Pod", "r", "u3", ("Job", "j"))
    deleting = _obj("Pod", "s", "u5", ("Job", "gone"), deletionTimestamp="2026-01-01T00:00:00Z")
    objects = [orphan, workload, foreign, kept, deleting, _obj("Job", "j", "j")]
    assert orphans(objects) == [orphan, workload]


def test_foreground_deletion_waits_for_dependents_then_drops_the_finalizer() -> None:
    deleting: dict[str, Any] = {
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "finalizers": ["foregroundDeletion"],
    }
    jobset = _obj("JobSet", "js", "s", **deleting)
    job = _obj("Job", "js-slice-0", "j", ("JobSet", "s"))
    assert finish_foreground([jobset, job]) == [Delete(Ref.of(job), "Foreground")]
    job["metadata"]["deletionTimestamp"] = deleting["deletionTimestamp"]
    assert finish_foreground([jobset, job]) == []  # still there: the JobSet keeps waiting
    assert finish_foreground([jobset]) == [
        Patch(Ref.of(jobset), {"metadata": {"finalizers": None}})
    ]
