"""How the Job controller counts finished pods: the upstream finalizer protocol.

Pods are created with the ``batch.kubernetes.io/job-tracking`` finalizer; a finished pod's uid goes
into ``status.uncountedTerminatedPods`` while its finalizer is removed, and moves into the counters
once the finalizer is gone. Pods the controller deletes itself (suspension, excess) lose the
finalizer first and are never counted, so a suspended Job does not spend its backoff limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kq.sandbox.cluster.actions import Action, Delete, Event, Obj, Patch, Ref, meta
from kq.sandbox.cluster.job_pods import (
    TRACKING_FINALIZER,
    format_indexes,
    indexed,
    is_finished,
    parse_indexes,
    pod_index,
    tracked,
)
from kq.sandbox.cluster.pod_failure_policy import evaluate
from kq.sandbox.cluster.podinfo import phase

SOURCE = "job-controller"
_KINDS = ("succeeded", "failed")


@dataclass(slots=True)
class JobPass:
    """What one reconcile learns about a Job's pods and wants to write."""

    job: Obj
    now: datetime
    pods: list[Obj]
    actions: list[Action] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    fail_job: str = ""  # message of a podFailurePolicy FailJob match seen in this pass
    # Set once the finished pods are counted (job_controller):
    conditions: list[Obj] = field(default_factory=list)  # as they will be written
    true_before: dict[str, Obj] = field(default_factory=dict)  # True conditions as read, by type
    active: list[Obj] = field(default_factory=list)
    terminating: list[Obj] = field(default_factory=list)

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
        if tracked(pod):
            self.drop_finalizer(pod)
        self.actions.append(Delete(Ref.of(pod)))
        self.event("SuccessfulDelete", f"Deleted pod: {meta(pod)['name']}")


def total(status: Mapping[str, Any], kind: str) -> int:
    """A counter plus the pods already finished but not yet moved into it."""
    uncounted = status.get("uncountedTerminatedPods") or {}
    return int(status.get(kind) or 0) + len(uncounted.get(kind) or ())


@dataclass(slots=True)
class _Tally:
    """The status counters as read, updated as this pass counts finished pods."""

    pending: dict[str, list[str]]  # uids in uncountedTerminatedPods, by kind
    counters: dict[str, int]
    completed: set[int]  # completedIndexes

    @classmethod
    def of(cls, status: Mapping[str, Any]) -> _Tally:
        uncounted = status.get("uncountedTerminatedPods") or {}
        return cls(
            {kind: list(uncounted.get(kind) or ()) for kind in _KINDS},
            {kind: int(status.get(kind) or 0) for kind in _KINDS},
            parse_indexes(str(status.get("completedIndexes") or "")),
        )


def _settle_uncounted(p: JobPass, tally: _Tally) -> None:
    """Uncounted pods whose finalizer is gone move into the counters; the others lose it."""
    by_uid = {str(meta(pod).get("uid")): pod for pod in p.pods}
    for kind in _KINDS:
        for uid in list(tally.pending[kind]):
            pod = by_uid.get(uid)
            if pod is not None and tracked(pod):
                p.drop_finalizer(pod)
            else:
                tally.pending[kind].remove(uid)
                tally.counters[kind] += 1


def _record_finished(p: JobPass, pod: Obj, tally: _Tally, job_finished: bool) -> None:
    """A tracked pod that has finished goes into the tally and loses its finalizer."""
    uid = str(meta(pod).get("uid"))
    terminating = bool(meta(pod).get("deletionTimestamp"))
    if phase(pod) == "Succeeded":
        index = pod_index(pod)
        if indexed(p.job) and index is not None:
            tally.completed.add(index)  # Indexed Jobs count successes by index, not by pod.
        else:
            tally.pending["succeeded"].append(uid)
    elif phase(pod) == "Failed" or (terminating and job_finished):
        action, message = evaluate(p.job, pod)
        if action == "FailJob" and not p.fail_job:
            p.fail_job = message
        if action != "Ignore":  # an ignored failure spends no backoff
            tally.pending["failed"].append(uid)
    else:
        return
    p.drop_finalizer(pod)


def count_finished(p: JobPass) -> None:
    """Move finished pods through uncountedTerminatedPods into the counters."""
    tally = _Tally.of(p.job.get("status") or {})
    _settle_uncounted(p, tally)
    seen = set(tally.pending["succeeded"]) | set(tally.pending["failed"])
    job_finished = is_finished(p.job)
    for pod in p.pods:
        if tracked(pod) and str(meta(pod).get("uid")) not in seen:
            _record_finished(p, pod, tally, job_finished)
    if indexed(p.job):
        tally.counters["succeeded"] = len(tally.completed)
        p.status["completedIndexes"] = format_indexes(tally.completed)
    p.status.update(tally.counters)
    p.status["uncountedTerminatedPods"] = {k: v for k, v in tally.pending.items() if v}


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
