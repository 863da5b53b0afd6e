"""batch/v1 Job controller: pods for parallelism/completions, suspend/resume, success, backoff.

Finished pods are counted with the upstream finalizer protocol: pods are created with the
``batch.kubernetes.io/job-tracking`` finalizer; a finished pod's uid goes into
``status.uncountedTerminatedPods`` while its finalizer is removed, and moves into the counters once
the finalizer is gone. Pods the controller deletes itself (suspension, excess) lose the finalizer
first and are never counted, so a suspended Job does not spend its backoff limit.
Apply the returned actions in order (status before the pod patches that follow it).
"""

from __future__ import annotations

import copy
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
from kq.sandbox.cluster.exclusive import with_exclusive_affinity
from kq.sandbox.cluster.names import suffix
from kq.sandbox.cluster.pod_failure_policy import evaluate
from kq.sandbox.cluster.podinfo import condition, is_terminal, phase

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
SOURCE = "job-controller"
DEFAULT_BACKOFF_LIMIT = 6
_REACHED = "Reached expected number of succeeded pods"


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("spec") or {}


def _indexed(job: Mapping[str, Any]) -> bool:
    return _spec(job).get("completionMode") == "Indexed"


def _parallelism(job: Mapping[str, Any]) -> int:
    value = _spec(job).get("parallelism")
    return 1 if value is None else int(value)


def _completions(job: Mapping[str, Any]) -> int | None:
    value = _spec(job).get("completions")
    return None if value is None else int(value)


def _true(job: Mapping[str, Any], type_: str) -> bool:
    cond = condition(job, type_)
    return cond is not None and cond.get("status") == "True"


def is_finished(job: Mapping[str, Any]) -> bool:
    return _true(job, "Complete") or _true(job, "Failed")


def _index(pod: Mapping[str, Any]) -> int | None:
    raw = (meta(pod).get("annotations") or {}).get(INDEX_KEY)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def parse_indexes(text: str) -> set[int]:
    """``"0-2,5"`` → ``{0, 1, 2, 5}`` (the ``completedIndexes`` format)."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    ranges: list[str] = []
    for i in sorted(indexes):
        if ranges and ranges[-1].split("-")[-1] == str(i - 1):
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{i}"
        else:
            ranges.append(str(i))
    return ",".join(ranges)


def _condition(type_: str, reason: str, message: str, now: datetime, status: str = "True") -> Obj:
    stamp = rfc3339(now)
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
    }


def build_pod(job: Mapping[str, Any], name: str, index: int | None) -> Obj:
    """The pod the Job creates, from the Job's pod template as it is right now."""
    m = meta(job)
    template = copy.deepcopy(_spec(job).get("template") or {})
    tmeta = template.get("metadata") or {}
    uid, job_name = str(m["uid"]), str(m["name"])
    labels = {
        **(tmeta.get("labels") or {}),
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": job_name,
        "controller-uid": uid,
        "job-name": job_name,
    }
    annotations = dict(tmeta.get("annotations") or {})
    spec: Obj = template.get("spec") or {}
    if index is not None:
        labels[INDEX_KEY] = annotations[INDEX_KEY] = str(index)
        env = {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX_KEY}']"}},
        }
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            container["env"] = [*(container.get("env") or []), env]
        spec.setdefault("hostname", f"{job_name}-{index}")
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": labels,
            "annotations": annotations,
            "finalizers": [TRACKING_FINALIZER],
            "ownerReferences": [controller_ref(job)],
        },
        "spec": spec,
    }
    return with_exclusive_affinity(pod)


@dataclass(slots=True)
class _Pass:
    """What one reconcile learns about a Job's pods and wants to write."""

    job: Obj
    now: datetime
    pods: list[Obj]
    actions: list[Action] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    fail_job: str = ""  # message of a podFailurePolicy FailJob match seen in this pass

    @property
    def ref(self) -> Ref:
        return Ref.of(self.job)

    def event(self, reason: str, message: str, type_: str = "Normal") -> None:
        self.actions.append(Event(self.ref, reason, message, "Warning" if type_ == "Warning"
                                  else "Normal", SOURCE))  # fmt: skip

    def drop_finalizer(self, pod: Obj) -> None:
        kept = [f for f in meta(pod).get("finalizers") or () if f != TRACKING_FINALIZER]
        self.actions.append(Patch(Ref.of(pod), {"metadata": {"finalizers": kept or None}}))

    def remove(self, pod: Obj) -> None:
        """Delete a pod this controller no longer wants, uncounted."""
        if TRACKING_FINALIZER in (meta(pod).get("finalizers") or ()):
            self.drop_finalizer(pod)
        self.actions.append(Delete(Ref.of(pod)))
        self.event("SuccessfulDelete", f"Deleted pod: {meta(pod)['name']}")


def _active(pods: Sequence[Obj]) -> list[Obj]:
    return [p for p in pods if not is_terminal(p) and not meta(p).get("deletionTimestamp")]


def _count(p: _Pass) -> None:
    """Move finished pods through uncountedTerminatedPods into the counters."""
    status = p.job.get("status") or {}
    uncounted = status.get("uncountedTerminatedPods") or {}
    pending = {"succeeded": list(uncounted.get("succeeded") or ()),
               "failed": list(uncounted.get("failed") or ())}  # fmt: skip
    counters = {"succeeded": int(status.get("succeeded") or 0),
                "failed": int(status.get("failed") or 0)}  # fmt: skip
    completed = parse_indexes(str(status.get("completedIndexes") or ""))
    by_uid = {str(meta(pod).get("uid")): pod for pod in p.pods}
    for kind in ("succeeded", "failed"):
        for uid in list(pending[kind]):
            pod = by_uid.get(uid)
            if pod is not None and TRACKING_FINALIZER in (meta(pod).get("finalizers") or ()):
                p.drop_finalizer(pod)
            else:
                pending[kind].remove(uid)
                counters[kind] += 1
    seen = set(pending["succeeded"]) | set(pending["failed"])
    finished = is_finished(p.job)
    for pod in p.pods:
        uid = str(meta(pod).get("uid"))
        if TRACKING_FINALIZER not in (meta(pod).get("finalizers") or ()) or uid in seen:
            continue
        terminating = bool(meta(pod).get("deletionTimestamp"))
        if phase(pod) == "Succeeded":
            index = _index(pod)
            if _indexed(p.job) and index is not None:
                completed.add(index)  # Indexed Jobs count successes by index, not by pod.
                p.drop_finalizer(pod)
                continue
            pending["succeeded"].append(uid)
        elif phase(pod) == "Failed" or (terminating and finished):
            action, message = evaluate(p.job, pod)
            if action == "FailJob" and not p.fail_job:
                p.fail_job = message
            if action != "Ignore":  # an ignored failure spends no backoff
                pending["failed"].append(uid)
        else:
            continue
        p.drop_finalizer(pod)
    if _indexed(p.job):
        counters["succeeded"] = len(completed)
        p.status["completedIndexes"] = format_indexes(completed)
    p.status.update(counters)
    p.status["uncountedTerminatedPods"] = {k: v for k, v in pending.items() if v}


def _name(p: _Pass, index: int | None, taken: set[str], serial: int) -> str:
    job_name, uid = str(meta(p.job)["name"]), str(meta(p.job)["uid"])
    prefix = f"{job_name}-{index}-" if index is not None else f"{job_name}-"
    while True:
        name = prefix + suffix(f"{uid}/{index}/{serial}")
        if name not in taken:
            taken.add(name)
            return name
        serial += 1


def _create(p: _Pass, indexes: Sequence[int | None]) -> None:
    taken = {str(meta(pod)["name"]) for pod in p.pods}
    serial = int(p.status.get("succeeded", 0)) + int(p.status.get("failed", 0)) + len(p.pods)
    for index in indexes:
        name = _name(p, index, taken, serial)
        p.actions.append(Create(build_pod(p.job, name, index)))
        p.event("SuccessfulCreate", f"Created pod: {name}")


def _manage(p: _Pass, active: list[Obj]) -> None:
    """Create or delete pods so the active ones match what the Job still needs."""
    parallelism, completions = _parallelism(p.job), _completions(p.job)
    succeeded = _total(p.status, "succeeded")
    if _indexed(p.job) and completions is not None:
        done = parse_indexes(str(p.status.get("completedIndexes", "")))
        running = {_index(pod) for pod in active}
        extra = [pod for pod in active if _index(pod) in done]
        for pod in extra:
            p.remove(pod)
        want = [i for i in range(completions) if i not in done and i not in running]
        room = parallelism - (len(active) - len(extra))
        _create(p, want[: max(room, 0)])
        return
    if completions is None:
        wanted = 0 if succeeded else parallelism
    else:
        wanted = max(min(parallelism, completions - succeeded), 0)
    if len(active) < wanted:
        _create(p, [None] * (wanted - len(active)))
    for pod in _removal_order(active)[: max(len(active) - wanted, 0)]:
        p.remove(pod)


def _removal_order(pods: Sequence[Obj]) -> list[Obj]:
    """Unscheduled first, then pending, then not ready: the pods cheapest to lose."""

    def key(pod: Obj) -> tuple[bool, bool, bool, str]:
        ready = condition(pod, "Ready")
        return (
            bool((pod.get("spec") or {}).get("nodeName")),
            phase(pod) == "Running",
            bool(ready and ready.get("status") == "True"),
            str(meta(pod)["name"]),
        )

    return sorted(pods, key=key)


def _succeeded(job: Mapping[str, Any], status: Mapping[str, Any], active: int) -> bool:
    completions = _completions(job)
    if _indexed(job) and completions is not None:
        return parse_indexes(str(status.get("completedIndexes", ""))) >= set(range(completions))
    if completions is None:
        return _total(status, "succeeded") > 0 and active == 0
    return _total(status, "succeeded") >= completions


def _restarts_exceed_limit(job: Mapping[str, Any], pods: Sequence[Obj]) -> bool:
    """With ``restartPolicy: OnFailure`` container restarts of live pods spend the backoff."""
    template = (_spec(job).get("template") or {}).get("spec") or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(
        int(c.get("restartCount") or 0)
        for pod in pods
        if phase(pod) in ("Pending", "Running")
        for key in ("initContainerStatuses", "containerStatuses")
        for c in (pod.get("status") or {}).get(key) or ()
    )
    limit = int(_spec(job).get("backoffLimit", DEFAULT_BACKOFF_LIMIT))
    return restarts > 0 if limit == 0 else restarts >= limit


def _total(status: Mapping[str, Any], kind: str) -> int:
    """A counter plus the pods already finished but not yet moved into it."""
    uncounted = status.get("uncountedTerminatedPods") or {}
    return int(status.get(kind) or 0) + len(uncounted.get(kind) or ())


def deadline(job: Mapping[str, Any]) -> datetime | None:
    """When ``activeDeadlineSeconds`` runs out for a started, unsuspended Job."""
    seconds = _spec(job).get("activeDeadlineSeconds")
    start = (job.get("status") or {}).get("startTime")
    if seconds is None or not start or _spec(job).get("suspend"):
        return None
    return parse_rfc3339(str(start)) + timedelta(seconds=int(seconds))


def _past_deadline(job: Mapping[str, Any], now: datetime) -> bool:
    end = deadline(job)
    return end is not None and now >= end


def reconcile_job(job: Obj, pods: Sequence[Obj], now: datetime) -> list[Action]:
    """One level-triggered pass over a Job and the pods it controls."""
    uid = str(meta(job)["uid"])
    p = _Pass(job, now, [pod for pod in pods if owned_by(pod, uid)])
    if meta(job).get("deletionTimestamp"):
        # A Job being deleted lets go of its pods so the garbage collector can remove them.
        for pod in p.pods:
            if TRACKING_FINALIZER in (meta(pod).get("finalizers") or ()):
                p.drop_finalizer(pod)
        return p.actions
    _count(p)
    old = job.get("status") or {}
    conditions: list[Obj] = [dict(c) for c in old.get("conditions") or ()]
    types = {c["type"]: c for c in conditions if c.get("status") == "True"}
    active = _active(p.pods)
    terminating = [pod for pod in p.pods if meta(pod).get("deletionTimestamp")
                   and not is_terminal(pod)]  # fmt: skip
    p.status["startTime"] = old.get("startTime")
    p.status["completionTime"] = old.get("completionTime")
    suspended = bool(_spec(job).get("suspend"))
    # The API rejects a finished condition while uncountedTerminatedPods is non-empty.
    flushed = not p.status["uncountedTerminatedPods"]

    if "Complete" in types or "Failed" in types:
        for pod in active:
            p.actions.append(Delete(Ref.of(pod)))
        active = []
    elif "SuccessCriteriaMet" in types or _succeeded(job, p.status, len(active)):
        if "SuccessCriteriaMet" not in types:
            conditions.append(_condition("SuccessCriteriaMet", "CompletionsReached", _REACHED, now))
        for pod in active:
            p.remove(pod)
        if not active and not terminating and flushed:
            conditions.append(_condition("Complete", "CompletionsReached", _REACHED, now))
            p.status["completionTime"] = rfc3339(now)
            p.event("Completed", "Job completed")
        active = []
    elif (
        "FailureTarget" in types
        or p.fail_job
        or _past_deadline(job, now)
        or _restarts_exceed_limit(job, p.pods)
        or _total(p.status, "failed") > int(_spec(job).get("backoffLimit", DEFAULT_BACKOFF_LIMIT))
    ):
        target = types.get("FailureTarget")
        if target is None:
            reason, message = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
            if p.fail_job:
                reason, message = "PodFailurePolicy", p.fail_job
            elif _past_deadline(job, now):
                reason, message = "DeadlineExceeded", "Job was active longer than its deadline"
            target = _condition("FailureTarget", reason, message, now)
            conditions.append(target)
        for pod in active:  # terminated with their finalizers kept: they count as failed
            p.actions.append(Delete(Ref.of(pod)))
        if not active and not terminating and flushed:
            conditions.append(_condition("Failed", target["reason"], target["message"], now))
            p.event(target["reason"], target["message"], "Warning")
        active = []
    elif suspended:
        for pod in active:
            p.remove(pod)
        active = []
        p.status["startTime"] = None
        if "Suspended" not in types:
            conditions = [c for c in conditions if c["type"] != "Suspended"]
            conditions.append(_condition("Suspended", "JobSuspended", "Job suspended", now))
            p.event("Suspended", "Job suspended")
    else:
        resumed = "Suspended" in types
        if resumed:
            conditions = [c for c in conditions if c["type"] != "Suspended"]
            conditions.append(
                _condition("Suspended", "JobResumed", "Job resumed", now, status="False")
            )
            p.status["startTime"] = rfc3339(now)
        if not p.status["startTime"]:
            p.status["startTime"] = rfc3339(now)
        _manage(p, active)
        if resumed:  # after the pods, as kube's job controller: SuccessfulCreate, then Resumed
            p.event("Resumed", "Job resumed")
        deleted = {x.ref.name for x in p.actions if isinstance(x, Delete)}
        active = [pod for pod in active if meta(pod)["name"] not in deleted]

    ready = [pod for pod in active if (condition(pod, "Ready") or {}).get("status") == "True"]
    p.status.update(active=len(active), ready=len(ready), terminating=len(terminating))
    p.status["conditions"] = conditions or None
    _write_status(p, old)
    return p.actions


def _write_status(p: _Pass, old: Mapping[str, Any]) -> None:
    """Prepend one status patch with only the fields that changed (and omit empty defaults)."""
    patch: Obj = {}
    for key, value in p.status.items():
        empty = value in (None, {}, "", 0) and key not in ("ready", "terminating")
        normalized = None if empty else value
        if old.get(key) != normalized and not (normalized is None and key not in old):
            patch[key] = normalized
    if patch:
        p.actions.insert(0, Patch(p.ref, {"status": patch}, "status"))


def release_orphans(pods: Sequence[Obj], jobs: Sequence[Obj]) -> list[Action]:
    """Drop the tracking finalizer from pods whose Job is gone, so they can be deleted."""
    uids = {str(meta(job).get("uid")) for job in jobs}
    actions: list[Action] = []
    for pod in pods:
        finalizers = meta(pod).get("finalizers") or ()
        owners = [r for r in meta(pod).get("ownerReferences") or () if r.get("kind") == "Job"]
        if TRACKING_FINALIZER in finalizers and owners and owners[0].get("uid") not in uids:
            kept = [f for f in finalizers if f != TRACKING_FINALIZER]
            actions.append(Patch(Ref.of(pod), {"metadata": {"finalizers": kept or None}}))
    return actions
