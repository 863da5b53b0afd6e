"""RayJob (ray.io/v1) controller: KubeRay's jobDeploymentStatus state machine in K8sJobMode.

'' (New) → Initializing (the RayCluster ``<rayjob>-<5>`` is created from ``spec.rayClusterSpec``)
→ Running (once the cluster is ready: the submitter batch/v1 Job ``<rayjob>`` is created) →
Complete or Failed (when the submitter Job finishes; ``jobStatus`` SUCCEEDED or FAILED), after
which ``shutdownAfterJobFinishes`` deletes the cluster once ``ttlSecondsAfterFinished`` passed.
``spec.suspend`` moves an Initializing or Running RayJob to Suspending, which deletes the cluster
and the submitter and then settles in Suspended; clearing it goes back to New, so a fresh cluster
is built from the templates as they are then (Kueue edits them before unsuspending).

The Ray job's run time is the submitter pod's: the kubelet reads the trailing ``sleep N`` of the
entrypoint (the last words of the ``ray job submit`` command) or the ``kq.dev/run-seconds`` and
``kq.dev/exit-code`` annotations, which are copied from the RayJob to the submitter pod.
Other submission modes are not simulated: their RayJob gets its cluster and a Warning Event.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kq.sandbox.cluster.actions import (
    Action,
    Create,
    Delete,
    Event,
    Obj,
    Patch,
    Ref,
    controller_ref,
    meta,
    owned_by,
)
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.kubelet import EXIT_CODE_ANNOTATION, RUN_SECONDS_ANNOTATION
from kq.sandbox.cluster.names import suffix
from kq.sandbox.cluster.podinfo import condition

K8S_JOB_MODE = "K8sJobMode"
SOURCE = "rayjob-controller"
ORIGIN_NAME = "ray.io/originated-from-cr-name"
ORIGIN_CRD = "ray.io/originated-from-crd"
SUBMITTER_BACKOFF_LIMIT = 2
_DASHBOARD_PORT = 8265
_COPIED_ANNOTATIONS = (RUN_SECONDS_ANNOTATION, EXIT_CODE_ANNOTATION)
# KubeRay's default submitter resources (common.GetDefaultSubmitterContainer).
_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


def _spec(rayjob: Mapping[str, Any]) -> Mapping[str, Any]:
    return rayjob.get("spec") or {}


def _mode(rayjob: Mapping[str, Any]) -> str:
    return str(_spec(rayjob).get("submissionMode") or K8S_JOB_MODE)


def _true(obj: Mapping[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def build_cluster(rayjob: Mapping[str, Any], name: str) -> Obj:
    """The RayCluster for this RayJob: its labels plus KubeRay's origin labels, its cluster spec."""
    m = meta(rayjob)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": {
                **(m.get("labels") or {}),
                ORIGIN_NAME: str(m["name"]),
                ORIGIN_CRD: "RayJob",
                "ray.io/job-submission-mode": _mode(rayjob),
            },
            "annotations": dict(m.get("annotations") or {}),
            "ownerReferences": [controller_ref(rayjob)],
        },
        "spec": copy.deepcopy(_spec(rayjob).get("rayClusterSpec") or {}),
    }


def _submit_command(rayjob: Mapping[str, Any]) -> str:
    """``ray job submit`` for the entrypoint; the entrypoint ends it, so its ``sleep`` counts."""
    status = rayjob.get("status") or {}
    words = ["ray", "job", "submit", "--address", f"http://{status.get('dashboardURL', '')}",
             "--submission-id", str(status.get("jobId", "")), "--"]  # fmt: skip
    return " ".join([*map(shlex.quote, words), str(_spec(rayjob).get("entrypoint") or "").strip()])


def build_submitter(rayjob: Mapping[str, Any]) -> Obj:
    """The submitter Job: ``submitterPodTemplate`` (else KubeRay's default) submitting the job."""
    m = meta(rayjob)
    spec = _spec(rayjob)
    template = copy.deepcopy(spec.get("submitterPodTemplate") or {})
    if not template:
        head = (((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template")
                or {}).get("spec") or {}  # fmt: skip
        image = ((head.get("containers") or [{}])[0]).get("image", "")
        template = {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "ray-job-submitter", "image": image,
             "resources": copy.deepcopy(_SUBMITTER_RESOURCES)}]}}  # fmt: skip
    pod_spec = template.setdefault("spec", {})
    pod_spec.setdefault("restartPolicy", "Never")
    container = (pod_spec.get("containers") or [{}])[0]
    if not container.get("command"):
        container["command"] = ["/bin/bash", "-ce", "--"]
        container["args"] = [_submit_command(rayjob)]
    container["env"] = [*(container.get("env") or []),
                        {"name": "RAY_DASHBOARD_ADDRESS",
                         "value": str((rayjob.get("status") or {}).get("dashboardURL", ""))},
                        {"name": "RAY_JOB_SUBMISSION_ID",
                         "value": str((rayjob.get("status") or {}).get("jobId", ""))}]  # fmt: skip
    origin = {ORIGIN_NAME: str(m["name"]), ORIGIN_CRD: "RayJob",
              "app.kubernetes.io/created-by": "kuberay-operator"}  # fmt: skip
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), **origin}
    copied = {k: v for k, v in (m.get("annotations") or {}).items() if k in _COPIED_ANNOTATIONS}
    if copied:
        tmeta["annotations"] = {**copied, **(tmeta.get("annotations") or {})}
    backoff = (spec.get("submitterConfig") or {}).get("backoffLimit", SUBMITTER_BACKOFF_LIMIT)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": str(m["name"]),
            "namespace": m.get("namespace", "default"),
            "labels": origin,
            "ownerReferences": [controller_ref(rayjob)],
        },
        "spec": {"backoffLimit": int(backoff), "template": template},
    }


@dataclass(slots=True)
class _Pass:
    rayjob: Obj
    cluster: Obj | None
    submitter: Obj | None
    now: datetime
    status: Obj
    actions: list[Action] = field(default_factory=list)

    @property
    def ref(self) -> Ref:
        return Ref.of(self.rayjob)

    def event(self, reason: str, message: str, warning: bool = False) -> None:
        self.actions.append(
            Event(self.ref, reason, message, "Warning" if warning else "Normal", SOURCE)
        )

    @property
    def namespace(self) -> str:
        return str(meta(self.rayjob).get("namespace", "default"))


def _new(p: _Pass) -> None:
    """New: name the cluster and the Ray job, then initialize (or settle suspended)."""
    if _spec(p.rayjob).get("suspend"):
        # KubeRay passes through Initializing and Suspending; with nothing created yet the
        # sandbox goes straight to where they end.
        p.status.update(jobStatus="", jobDeploymentStatus="Suspended")
        return
    name, uid = str(meta(p.rayjob)["name"]), str(meta(p.rayjob).get("uid", ""))
    attempt = f"{uid}/{p.status.get('startTime') or ''}/{rfc3339(p.now)}"
    p.status.update(
        jobId=str(_spec(p.rayjob).get("jobId") or f"{name}-{suffix('job/' + attempt)}"),
        rayClusterName=f"{name}-{suffix('cluster/' + attempt)}",
        jobStatus="",
        jobDeploymentStatus="Initializing",
        startTime=rfc3339(p.now),
        endTime=None,
    )
    if _mode(p.rayjob) != K8S_JOB_MODE:
        message = f"the sandbox runs the cluster but not a {_mode(p.rayjob)} submission"
        p.event("SubmissionModeNotSimulated", message, warning=True)
    _initializing(p)


def _ensure_cluster(p: _Pass) -> bool:
    """Create the cluster if missing; whether it exists already."""
    if p.cluster is not None:
        return True
    cluster = build_cluster(p.rayjob, str(p.status["rayClusterName"]))
    p.actions.append(Create(cluster))
    p.event("CreatedRayCluster", f"Created RayCluster {p.namespace}/{p.status['rayClusterName']}")
    return False


def _initializing(p: _Pass) -> None:
    if _spec(p.rayjob).get("suspend"):
        _suspending(p)
        return
    if not _ensure_cluster(p) or p.cluster is None:
        return
    p.status["rayClusterStatus"] = p.cluster.get("status") or {}
    if (p.cluster.get("status") or {}).get("state") != "ready" or _mode(p.rayjob) != K8S_JOB_MODE:
        return
    cluster = str(p.status["rayClusterName"])
    p.status["dashboardURL"] = (
        f"{cluster}-head-svc.{p.namespace}.svc.cluster.local:{_DASHBOARD_PORT}"
    )
    p.status["jobDeploymentStatus"] = "Running"
    p.status["jobStatus"] = "PENDING"
    _running(p)


def _running(p: _Pass) -> None:
    if _spec(p.rayjob).get("suspend"):
        _suspending(p)
        return
    if _ensure_cluster(p) and p.cluster is not None:
        p.status["rayClusterStatus"] = p.cluster.get("status") or {}
    job = p.submitter
    if job is None:
        p.actions.append(Create(build_submitter({**p.rayjob, "status": p.status})))
        p.event(
            "CreatedRayJobSubmitter",
            f"Created Kubernetes Job {p.namespace}/{meta(p.rayjob)['name']}",
        )
        return
    if _true(job, "Complete"):
        p.status.update(jobStatus="SUCCEEDED", jobDeploymentStatus="Complete", reason=None,
                        message="Job finished successfully.")  # fmt: skip
    elif _true(job, "Failed"):
        failed = condition(job, "Failed") or {}
        message = f"The submitter Job failed: {failed.get('message', '')}"
        p.status.update(jobStatus="FAILED", jobDeploymentStatus="Failed", reason="AppFailed",
                        message=message)  # fmt: skip
    elif int((job.get("status") or {}).get("ready") or 0) > 0:
        p.status["jobStatus"] = "RUNNING"
        info = dict(p.status.get("rayJobInfo") or {})
        info.setdefault("startTime", rfc3339(p.now))
        p.status["rayJobInfo"] = info
    if p.status["jobDeploymentStatus"] in ("Complete", "Failed"):
        p.status["endTime"] = rfc3339(p.now)
        p.status["rayJobInfo"] = {**(p.status.get("rayJobInfo") or {}), "endTime": rfc3339(p.now)}
        p.event(str(p.status["jobDeploymentStatus"]), str(p.status["message"]),
                p.status["jobDeploymentStatus"] == "Failed")  # fmt: skip
        _finished(p)


def _suspending(p: _Pass) -> None:
    """Delete the cluster and the submitter; Suspended once both are gone."""
    p.status["jobDeploymentStatus"] = "Suspending"
    for child in (p.cluster, p.submitter):
        if child is not None and not meta(child).get("deletionTimestamp"):
            p.actions.append(Delete(Ref.of(child)))
    if p.cluster is None and p.submitter is None:
        p.status.update(
            jobDeploymentStatus="Suspended", jobStatus="", rayClusterName="", dashboardURL="",
            jobId="", message=None, reason=None, rayJobInfo=None, rayClusterStatus=None,
        )  # fmt: skip


def _suspended(p: _Pass) -> None:
    if not _spec(p.rayjob).get("suspend"):
        p.status.update(jobStatus="", jobDeploymentStatus="")
        _new(p)


def shutdown_at(rayjob: Mapping[str, Any]) -> datetime | None:
    """When a finished RayJob's cluster is due for deletion (None: never)."""
    spec, status = _spec(rayjob), rayjob.get("status") or {}
    end = status.get("endTime")
    if not spec.get("shutdownAfterJobFinishes") or not end:
        return None
    if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
        return None
    return parse_rfc3339(str(end)) + timedelta(
        seconds=int(spec.get("ttlSecondsAfterFinished") or 0)
    )


def _finished(p: _Pass) -> None:
    due = shutdown_at({**p.rayjob, "status": p.status})
    cluster = p.cluster
    if due is None or p.now < due or cluster is None or meta(cluster).get("deletionTimestamp"):
        return
    p.actions.append(Delete(Ref.of(cluster)))
    p.event("DeletedRayCluster", f"Deleted RayCluster {p.namespace}/{meta(cluster)['name']}")


_STEPS = {
    "": _new,
    "Initializing": _initializing,
    "Running": _running,
    "Suspending": _suspending,
    "Suspended": _suspended,
    "Complete": _finished,
    "Failed": _finished,
}


def reconcile_rayjob(
    rayjob: Obj, clusters: Sequence[Obj], jobs: Sequence[Obj], now: datetime
) -> list[Action]:
    """One level-triggered pass over a RayJob, its RayCluster and its submitter Job."""
    spec = _spec(rayjob)
    managed = spec.get("managedBy")
    if meta(rayjob).get("deletionTimestamp") or spec.get("clusterSelector"):
        return []
    if managed and managed != "ray.io/kuberay-operator":
        return []  # another controller (MultiKueue) runs it
    old = rayjob.get("status") or {}
    uid, name = str(meta(rayjob)["uid"]), str(meta(rayjob)["name"])
    cluster_name = old.get("rayClusterName")
    cluster = next((c for c in clusters if owned_by(c, uid)
                    and meta(c)["name"] == cluster_name), None)  # fmt: skip
    submitter = next((j for j in jobs if owned_by(j, uid) and meta(j)["name"] == name), None)
    p = _Pass(rayjob, cluster, submitter, now, dict(old))
    step = _STEPS.get(str(old.get("jobDeploymentStatus") or ""))
    if step is not None:
        step(p)
    patch = {k: v for k, v in p.status.items()
             if old.get(k) != v and not (v in (None, "") and not old.get(k))}  # fmt: skip
    if patch:
        p.actions.insert(0, Patch(Ref.of(rayjob), {"status": patch}, "status"))
    return p.actions
