"""A tiny stand-in for the API server and the scheduler, applying the reconciler's actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kq.jobframework import Action, ClusterFacts, GenericJob, decide
from kq.jobframework import actions as act
from kq.jobframework.objects import deep_copy


def _set_condition(
    obj: dict[str, Any], type_: str, status: str, reason: str = "", message: str = ""
) -> None:
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c["type"] != type_]
    conditions.append({"type": type_, "status": status, "reason": reason, "message": message})


class World:
    def __init__(self, integration: GenericJob, job: dict[str, Any], facts: ClusterFacts) -> None:
        self.integration = integration
        self.job = job
        self.facts = facts
        self.workloads: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[str, str]] = []

    @property
    def workload(self) -> dict[str, Any]:
        [workload] = self.workloads.values()
        return workload

    def decide(self) -> list[Action]:
        return decide(self.integration, self.job, list(self.workloads.values()), self.facts)

    def step(self) -> list[Action]:
        """Decide once and apply the result."""
        actions = self.decide()
        self.apply(actions)
        return actions

    def apply(self, actions: Sequence[Action]) -> None:
        for action in actions:
            match action:
                case act.UpdateJob(job=job):
                    self.job = deep_copy(job)
                case act.PatchJobStatus(patch=patch):
                    self.job["status"] = {**self.job.get("status", {}), **patch["status"]}
                case act.CreateWorkload(workload=workload):
                    self.workloads[workload["metadata"]["name"]] = deep_copy(workload)
                case act.UpdateWorkloadSpec(name=name, spec=spec):
                    self.workloads[name]["spec"] = deep_copy(spec)
                case act.DeleteWorkload(name=name):
                    del self.workloads[name]
                case act.RemoveWorkloadFinalizer(name=name):
                    self.workloads[name]["metadata"]["finalizers"] = []
                case act.FinishWorkload(name=name, reason=reason, message=message):
                    _set_condition(self.workloads[name], "Finished", "True", reason, message)
                case act.ReleaseQuota(name=name, requeued=requeued, reason=reason):
                    workload = self.workloads[name]
                    workload["status"].pop("admission", None)
                    _set_condition(workload, "QuotaReserved", "False", "Pending")
                    _set_condition(workload, "Admitted", "False", "NoReservation")
                    _set_condition(workload, "Requeued", "True" if requeued else "False", reason)
                case act.SetWorkloadCondition(name=name, condition=condition):
                    _set_condition(self.workloads[name], **condition_args(condition))
                case act.SetReclaimablePods(name=name, pods=pods):
                    self.workloads[name].setdefault("status", {})["reclaimablePods"] = [
                        {"name": p.name, "count": p.count} for p in pods
                    ]
                case act.Event(reason=reason, message=message):
                    self.events.append((reason, message))

    def admit(self, cluster_queue: str, flavor: str, resource: str) -> None:
        """What the scheduler writes when it admits the Workload."""
        workload = self.workload
        workload.setdefault("status", {})["admission"] = {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [
                {"name": ps["name"], "flavors": {resource: flavor}, "count": ps["count"]}
                for ps in workload["spec"]["podSets"]
            ],
        }
        _set_condition(workload, "QuotaReserved", "True", "QuotaReserved")
        _set_condition(workload, "Admitted", "True", "Admitted")
        _set_condition(workload, "Evicted", "False", "QuotaReserved")

    def evict(self, reason: str, message: str) -> None:
        _set_condition(self.workload, "Evicted", "True", reason, message)


def condition_args(condition: Any) -> dict[str, str]:
    return {
        "type_": condition["type"],
        "status": condition["status"],
        "reason": condition["reason"],
        "message": condition["message"],
    }
