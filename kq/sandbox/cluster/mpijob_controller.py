"""MPIJob (kubeflow.org/v2beta1) controller: worker pods, a launcher Job, conditions, status.

As mpi-operator v2 does: workers are pods ``<mpijob>-worker-<i>`` and the launcher is the batch/v1
Job ``<mpijob>-launcher`` (run by the Job controller), all labelled
``training.kubeflow.org/{operator-name,job-name,job-role}`` (workers also ``replica-index``);
the ConfigMap ``<mpijob>-config`` holds the hostfile. Conditions Created, Running, Suspended,
Succeeded and Failed carry mpi-operator's reasons, and the launcher Job's outcome decides the
MPIJob's. Once finished, ``runPolicy.cleanPodPolicy`` (upstream default ``None``) says which
workers go: ``Running`` deletes the pending and running ones, ``All`` every one.

Two simplifications: the launcher Job is created once every worker is ready (upstream's
``WaitForWorkersReady``; under ``AtStartup`` a real mpirun waits for the workers over ssh, which
the kubelet cannot model), and ``runPolicy.suspend`` deletes the launcher Job with the workers
(upstream suspends it and syncs its template on resume), so on resume both are built again from
the templates as they are then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kq.sandbox.cluster.actions import (
    Action,
    Create,
    Delete,
    Event,
    Obj,
    Patch,
    Ref,
    meta,
    owned_by,
)
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.mpijob_objects import (
    JOB_ROLE,
    build_config,
    build_launcher,
    build_worker,
    mpi_spec,
    worker_count,
)
from kq.sandbox.cluster.podinfo import condition, labels_of, phase

SOURCE = "mpi-job-controller"
_FINISHED = ("Succeeded", "Failed")


def _suspended(mpijob: Mapping[str, Any]) -> bool:
    return bool((mpi_spec(mpijob).get("runPolicy") or {}).get("suspend"))


def _true(obj: Mapping[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


@dataclass(slots=True)
class _Pass:
    mpijob: Obj
    now: datetime
    conditions: list[Obj]
    old: Mapping[str, Any]  # the status as read
    status: Obj  # startTime and completionTime as they will be written
    actions: list[Action] = field(default_factory=list)

    @property
    def ref(self) -> Ref:
        return Ref.of(self.mpijob)

    @property
    def title(self) -> str:
        m = meta(self.mpijob)
        return f"MPIJob {m.get('namespace', 'default')}/{m['name']}"

    def event(self, reason: str, message: str, warning: bool = False) -> None:
        self.actions.append(
            Event(self.ref, reason, message, "Warning" if warning else "Normal", SOURCE)
        )

    def set_condition(self, type_: str, status: str, reason: str, message: str) -> bool:
        """mpi-operator's setCondition: no-op on the same status and reason; finishing a job
        turns Running (and an older Failed) False. Returns whether anything changed."""
        current = next((c for c in self.conditions if c["type"] == type_), None)
        if current and current.get("status") == status and current.get("reason") == reason:
            return False
        stamp = rfc3339(self.now)
        new = {"type": type_, "status": status, "reason": reason, "message": message,
               "lastUpdateTime": stamp, "lastTransitionTime": stamp}  # fmt: skip
        if current and current.get("status") == status:
            new["lastTransitionTime"] = current.get("lastTransitionTime", stamp)
        kept = []
        for c in self.conditions:
            if c["type"] == type_:
                continue
            if type_ in _FINISHED and c["type"] in ("Running", "Failed"):
                c = {**c, "status": "False"}
            kept.append(c)
        self.conditions = [*kept, new]
        return True


def _clean_workers(p: _Pass, workers: Sequence[Obj], policy: str) -> None:
    """Delete the workers ``cleanPodPolicy`` releases (Running keeps the finished ones)."""
    for pod in workers:
        if meta(pod).get("deletionTimestamp"):
            continue
        if policy == "All" or (policy == "Running" and phase(pod) in ("Pending", "Running")):
            p.actions.append(Delete(Ref.of(pod)))


def _launcher_status(p: _Pass, launcher: Obj | None, pods: Sequence[Obj]) -> Obj | None:
    """The Launcher replica status; records success or failure of the launcher Job."""
    if launcher is None:
        return None
    job_status = launcher.get("status") or {}
    replica = {"active": 0, "succeeded": 0, "failed": int(job_status.get("failed") or 0)}
    if _true(launcher, "Complete"):
        replica["succeeded"] = 1
        message = f"{p.title} successfully completed."
        if p.set_condition("Succeeded", "True", "MPIJobSucceeded", message):
            p.event("MPIJobSucceeded", message)
        p.status["completionTime"] = p.status.get("completionTime") or job_status.get(
            "completionTime", rfc3339(p.now)
        )
    elif _true(launcher, "Failed"):
        failed = condition(launcher, "Failed") or {}
        reason = str(failed.get("reason") or "MPIJobFailed")
        message = str(failed.get("message") or f"{p.title} has failed")
        if p.set_condition("Failed", "True", reason, message):
            p.event(reason, message, warning=True)
        p.status["completionTime"] = p.status.get("completionTime") or rfc3339(p.now)
    else:
        uid = str(meta(launcher).get("uid"))
        replica["active"] = sum(1 for pod in pods if owned_by(pod, uid) and phase(pod) == "Running")
    return replica


def _ours(mpijob: Mapping[str, Any]) -> bool:
    """Whether this controller runs the MPIJob: not being deleted, not managed elsewhere."""
    if meta(mpijob).get("deletionTimestamp"):
        return False
    managed = (mpi_spec(mpijob).get("runPolicy") or {}).get("managedBy")
    return not managed or managed == "kubeflow.org/mpi-operator"  # else MultiKueue runs it


def _find_launcher(mpijob: Mapping[str, Any], jobs: Sequence[Obj]) -> Obj | None:
    m = meta(mpijob)
    uid, name = str(m["uid"]), f"{m['name']}-launcher"
    alive = (j for j in jobs if owned_by(j, uid) and not meta(j).get("deletionTimestamp"))
    return next((j for j in alive if meta(j)["name"] == name), None)


def _find_workers(mpijob: Mapping[str, Any], pods: Sequence[Obj]) -> list[Obj]:
    uid = str(meta(mpijob)["uid"])
    mine = (pod for pod in pods if owned_by(pod, uid) and labels_of(pod).get(JOB_ROLE) == "worker")
    return sorted(mine, key=lambda pod: str(meta(pod)["name"]))


def _job_finished(job: Obj | None) -> bool:
    return job is not None and (_true(job, "Complete") or _true(job, "Failed"))


def _mark_created(p: _Pass) -> None:
    message = f"{p.title} is created."
    p.set_condition("Created", "True", "MPIJobCreated", message)
    p.event("MPIJobCreated", message)


def _clean_up_finished(p: _Pass, workers: Sequence[Obj]) -> list[Action]:
    """A finished MPIJob only releases its workers as ``cleanPodPolicy`` says."""
    clean = str((mpi_spec(p.mpijob).get("runPolicy") or {}).get("cleanPodPolicy") or "None")
    _clean_workers(p, workers, clean)
    replicas = p.old.get("replicaStatuses") or {}
    worker = dict(replicas.get("Worker") or {})
    if clean != "None":
        worker["active"] = 0
    return _finish(p, {**replicas, "Worker": worker})


def _create_children(
    p: _Pass, launcher: Obj | None, workers: Sequence[Obj], configs: Sequence[Obj], run: bool
) -> None:
    """Create the ConfigMap, then (when running) missing workers, then the launcher once every
    worker is ready (upstream's ``WaitForWorkersReady``)."""
    m = meta(p.mpijob)
    uid, name = str(m["uid"]), str(m["name"])
    if not any(meta(c)["name"] == f"{name}-config" and owned_by(c, uid) for c in configs):
        p.actions.append(Create(build_config(p.mpijob)))
    if not run:
        return
    have = {str(meta(pod)["name"]) for pod in workers}
    for index in range(worker_count(p.mpijob)):
        if f"{name}-worker-{index}" not in have:
            p.actions.append(Create(build_worker(p.mpijob, index)))
    alive = [w for w in workers if not meta(w).get("deletionTimestamp")]
    ready = [w for w in alive if (condition(w, "Ready") or {}).get("status") == "True"]
    if launcher is None and len(ready) == worker_count(p.mpijob) == len(alive):
        p.actions.append(Create(build_launcher(p.mpijob)))


def _suspend(p: _Pass, launcher: Obj | None, workers: Sequence[Obj]) -> None:
    """Suspension deletes the launcher Job and every worker (see the module docstring)."""
    if launcher is not None:
        p.actions.append(Delete(Ref.of(launcher)))
    _clean_workers(p, workers, "All")
    if p.set_condition("Suspended", "True", "MPIJobSuspended", "MPIJob suspended"):
        p.event("MPIJobSuspended", "MPIJob suspended")


def _resume(p: _Pass) -> None:
    """A resumed MPIJob starts its clock again."""
    if condition(p.mpijob, "Suspended") is not None and p.set_condition(
        "Suspended", "False", "MPIJobResumed", "MPIJob resumed"
    ):
        p.event("MPIJobResumed", "MPIJob resumed")
        p.status["startTime"] = rfc3339(p.now)


def _worker_status(workers: Sequence[Obj]) -> Obj:
    counts = {"Running": 0, "Succeeded": 0, "Failed": 0}
    for pod in workers:
        counts[phase(pod)] = counts.get(phase(pod), 0) + 1
    return {"active": counts["Running"], "succeeded": counts["Succeeded"],
            "failed": counts["Failed"]}  # fmt: skip


def _mark_evicted(p: _Pass, workers: Sequence[Obj]) -> None:
    evicted = sum(1 for w in workers if (w.get("status") or {}).get("reason") == "Evicted")
    if evicted:
        message = f"{evicted}/{len(workers)} workers are evicted"
        if p.set_condition("Failed", "True", "MPIJobEvicted", message):
            p.event("MPIJobEvicted", message, warning=True)


def _set_running(p: _Pass, suspended: bool, replicas: Mapping[str, Any], workers: int) -> None:
    """The Running condition: True once the launcher and every worker run, False when
    suspended, or finished without ever having run."""
    finished = any(c["type"] in _FINISHED and c.get("status") == "True" for c in p.conditions)
    if suspended:
        p.set_condition("Running", "False", "MPIJobSuspended", f"{p.title} is suspended.")
    elif finished and condition({"status": {"conditions": p.conditions}}, "Running") is None:
        p.set_condition("Running", "False", "MPIJobRunning",
                        f"{p.title} is finished but Running condition was never set.")  # fmt: skip
    elif not finished:
        launched = replicas.get("Launcher")
        launcher_up = launched is not None and launched["active"] >= 1
        running = f"{p.title} is running"
        all_up = launcher_up and replicas["Worker"]["active"] == workers
        if all_up and p.set_condition("Running", "True", "MPIJobRunning", running + "."):
            p.event("MPIJobRunning", running)


def reconcile_mpijob(
    mpijob: Obj, jobs: Sequence[Obj], pods: Sequence[Obj], configs: Sequence[Obj], now: datetime
) -> list[Action]:
    """One level-triggered pass over an MPIJob, its launcher Job, worker pods and ConfigMap."""
    if not _ours(mpijob):
        return []
    old = mpijob.get("status") or {}
    p = _Pass(mpijob, now, [dict(c) for c in old.get("conditions") or ()], old,
              {k: old.get(k) for k in ("startTime", "completionTime")})  # fmt: skip
    launcher = _find_launcher(mpijob, jobs)
    workers = _find_workers(mpijob, pods)
    suspended = _suspended(mpijob)
    if not p.conditions:
        _mark_created(p)
    if any(_true(mpijob, t) for t in _FINISHED) and old.get("completionTime"):
        return _clean_up_finished(p, workers)

    if not p.status["startTime"] and not suspended:
        p.status["startTime"] = rfc3339(now)
    if not _job_finished(launcher):
        _create_children(p, launcher, workers, configs, run=not suspended)
    if suspended:
        _suspend(p, launcher, workers)
        launcher, workers = None, []
    else:
        _resume(p)

    replicas: Obj = {}
    launched = _launcher_status(p, launcher, pods)
    if launched is not None:
        replicas["Launcher"] = launched
    replicas["Worker"] = _worker_status(workers)
    _mark_evicted(p, workers)
    _set_running(p, suspended, replicas, len(workers))
    return _finish(p, replicas)


def _finish(p: _Pass, replicas: Obj) -> list[Action]:
    """Prepend one status patch with the fields that changed."""
    old, status = p.old, p.status
    status["conditions"] = p.conditions
    # A merge patch keeps keys it does not mention: a role that is gone must be removed.
    gone = {role: None for role in old.get("replicaStatuses") or {} if role not in replicas}
    status["replicaStatuses"] = {**replicas, **gone}
    patch = {
        k: v for k, v in status.items() if old.get(k) != v and not (v is None and k not in old)
    }
    if patch:
        p.actions.insert(0, Patch(p.ref, {"status": patch}, "status"))
    return p.actions
