"""batch/v1 Job controller: pods for parallelism/completions, suspend/resume, success, backoff.

Each pass counts the Job's finished pods (``job_tracking``: the finalizer protocol), then runs
the first phase of ``_PHASES`` whose test holds (finished, succeeding, failing, suspended,
running) and writes the status. Apply the returned actions in order (status before the pod
patches that follow it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kq.sandbox.cluster.actions import Action, Create, Delete, Obj, Patch, Ref, meta, owned_by
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.job_pods import (
    TRACKING_FINALIZER,
    backoff_limit,
    build_pod,
    completions,
    format_indexes,
    indexed,
    job_spec,
    parallelism,
    parse_indexes,
    pod_index,
    tracked,
)
from kq.sandbox.cluster.job_tracking import JobPass, count_finished, release_orphans, total
from kq.sandbox.cluster.names import suffix
from kq.sandbox.cluster.podinfo import condition, is_terminal, phase

# The Job controller's interface for the driver and tests, wherever each name is defined.
__all__ = [
    "TRACKING_FINALIZER",
    "deadline",
    "format_indexes",
    "parse_indexes",
    "reconcile_job",
    "release_orphans",
]

_REACHED = "Reached expected number of succeeded pods"


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


def _name(p: JobPass, index: int | None, taken: set[str], serial: int) -> str:
    job_name, uid = str(meta(p.job)["name"]), str(meta(p.job)["uid"])
    prefix = f"{job_name}-{index}-" if index is not None else f"{job_name}-"
    while True:
        name = prefix + suffix(f"{uid}/{index}/{serial}")
        if name not in taken:
            taken.add(name)
            return name
        serial += 1


def _create(p: JobPass, indexes: Sequence[int | None]) -> None:
    taken = {str(meta(pod)["name"]) for pod in p.pods}
    serial = int(p.status.get("succeeded", 0)) + int(p.status.get("failed", 0)) + len(p.pods)
    for index in indexes:
        name = _name(p, index, taken, serial)
        p.actions.append(Create(build_pod(p.job, name, index)))
        p.event("SuccessfulCreate", f"Created pod: {name}")


def _manage(p: JobPass, active: list[Obj]) -> None:
    """Create or delete pods so the active ones match what the Job still needs."""
    wanted_parallel, wanted_total = parallelism(p.job), completions(p.job)
    succeeded = total(p.status, "succeeded")
    if indexed(p.job) and wanted_total is not None:
        done = parse_indexes(str(p.status.get("completedIndexes", "")))
        running = {pod_index(pod) for pod in active}
        extra = [pod for pod in active if pod_index(pod) in done]
        for pod in extra:
            p.remove(pod)
        want = [i for i in range(wanted_total) if i not in done and i not in running]
        room = wanted_parallel - (len(active) - len(extra))
        _create(p, want[: max(room, 0)])
        return
    if wanted_total is None:
        wanted = 0 if succeeded else wanted_parallel
    else:
        wanted = max(min(wanted_parallel, wanted_total - succeeded), 0)
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
    wanted = completions(job)
    if indexed(job) and wanted is not None:
        return parse_indexes(str(status.get("completedIndexes", ""))) >= set(range(wanted))
    if wanted is None:
        return total(status, "succeeded") > 0 and active == 0
    return total(status, "succeeded") >= wanted


def _restarts_exceed_limit(job: Mapping[str, Any], pods: Sequence[Obj]) -> bool:
    """With ``restartPolicy: OnFailure`` container restarts of live pods spend the backoff."""
    template = (job_spec(job).get("template") or {}).get("spec") or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(
        int(c.get("restartCount") or 0)
        for pod in pods
        if phase(pod) in ("Pending", "Running")
        for key in ("initContainerStatuses", "containerStatuses")
        for c in (pod.get("status") or {}).get(key) or ()
    )
    limit = backoff_limit(job)
    return restarts > 0 if limit == 0 else restarts >= limit


def deadline(job: Mapping[str, Any]) -> datetime | None:
    """When ``activeDeadlineSeconds`` runs out for a started, unsuspended Job."""
    seconds = job_spec(job).get("activeDeadlineSeconds")
    start = (job.get("status") or {}).get("startTime")
    if seconds is None or not start or job_spec(job).get("suspend"):
        return None
    return parse_rfc3339(str(start)) + timedelta(seconds=int(seconds))


def _past_deadline(job: Mapping[str, Any], now: datetime) -> bool:
    end = deadline(job)
    return end is not None and now >= end


def _drained(p: JobPass) -> bool:
    """No pod left running or terminating and every finished one counted: the API rejects a
    finished condition while uncountedTerminatedPods is non-empty."""
    return not p.active and not p.terminating and not p.status["uncountedTerminatedPods"]


# The phases, as tests over the pass and steps that act on it; the first test that holds wins.


def _has_finished(p: JobPass) -> bool:
    return "Complete" in p.true_before or "Failed" in p.true_before


def _finished(p: JobPass) -> None:
    for pod in p.active:
        p.actions.append(Delete(Ref.of(pod)))
    p.active = []


def _is_succeeding(p: JobPass) -> bool:
    return "SuccessCriteriaMet" in p.true_before or _succeeded(p.job, p.status, len(p.active))


def _succeed(p: JobPass) -> None:
    if "SuccessCriteriaMet" not in p.true_before:
        p.conditions.append(_condition("SuccessCriteriaMet", "CompletionsReached", _REACHED, p.now))
    for pod in p.active:
        p.remove(pod)
    if _drained(p):
        p.conditions.append(_condition("Complete", "CompletionsReached", _REACHED, p.now))
        p.status["completionTime"] = rfc3339(p.now)
        p.event("Completed", "Job completed")
    p.active = []


def _is_failing(p: JobPass) -> bool:
    return (
        "FailureTarget" in p.true_before
        or bool(p.fail_job)
        or _past_deadline(p.job, p.now)
        or _restarts_exceed_limit(p.job, p.pods)
        or total(p.status, "failed") > backoff_limit(p.job)
    )


def _failure_target(p: JobPass) -> Obj:
    """The FailureTarget condition, added with the reason that failed the Job if new."""
    target = p.true_before.get("FailureTarget")
    if target is not None:
        return target
    reason, message = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    if p.fail_job:
        reason, message = "PodFailurePolicy", p.fail_job
    elif _past_deadline(p.job, p.now):
        reason, message = "DeadlineExceeded", "Job was active longer than its deadline"
    target = _condition("FailureTarget", reason, message, p.now)
    p.conditions.append(target)
    return target


def _fail(p: JobPass) -> None:
    target = _failure_target(p)
    for pod in p.active:  # terminated with their finalizers kept: they count as failed
        p.actions.append(Delete(Ref.of(pod)))
    if _drained(p):
        p.conditions.append(_condition("Failed", target["reason"], target["message"], p.now))
        p.event(target["reason"], target["message"], "Warning")
    p.active = []


def _is_suspended(p: JobPass) -> bool:
    return bool(job_spec(p.job).get("suspend"))


def _suspend(p: JobPass) -> None:
    for pod in p.active:
        p.remove(pod)
    p.active = []
    p.status["startTime"] = None
    if "Suspended" not in p.true_before:
        p.conditions = [c for c in p.conditions if c["type"] != "Suspended"]
        p.conditions.append(_condition("Suspended", "JobSuspended", "Job suspended", p.now))
        p.event("Suspended", "Job suspended")


def _run(p: JobPass) -> None:
    resumed = "Suspended" in p.true_before
    if resumed:
        p.conditions = [c for c in p.conditions if c["type"] != "Suspended"]
        p.conditions.append(
            _condition("Suspended", "JobResumed", "Job resumed", p.now, status="False")
        )
        p.status["startTime"] = rfc3339(p.now)
    if not p.status["startTime"]:
        p.status["startTime"] = rfc3339(p.now)
    _manage(p, p.active)
    if resumed:  # after the pods, as kube's job controller: SuccessfulCreate, then Resumed
        p.event("Resumed", "Job resumed")
    deleted = {x.ref.name for x in p.actions if isinstance(x, Delete)}
    p.active = [pod for pod in p.active if meta(pod)["name"] not in deleted]


_PHASES: tuple[tuple[Callable[[JobPass], bool], Callable[[JobPass], None]], ...] = (
    (_has_finished, _finished),
    (_is_succeeding, _succeed),
    (_is_failing, _fail),
    (_is_suspended, _suspend),
    (lambda p: True, _run),
)


def _release_pods(p: JobPass) -> list[Action]:
    """A Job being deleted lets go of its pods so the garbage collector can remove them."""
    for pod in p.pods:
        if tracked(pod):
            p.drop_finalizer(pod)
    return p.actions


def _observe(p: JobPass, old: Mapping[str, Any]) -> None:
    """Read the conditions and the live pods into the pass (after the pods are counted)."""
    p.conditions = [dict(c) for c in old.get("conditions") or ()]
    p.true_before = {c["type"]: c for c in p.conditions if c.get("status") == "True"}
    p.active = [
        pod for pod in p.pods if not is_terminal(pod) and not meta(pod).get("deletionTimestamp")
    ]
    p.terminating = [pod for pod in p.pods if meta(pod).get("deletionTimestamp")
                     and not is_terminal(pod)]  # fmt: skip
    p.status["startTime"] = old.get("startTime")
    p.status["completionTime"] = old.get("completionTime")


def reconcile_job(job: Obj, pods: Sequence[Obj], now: datetime) -> list[Action]:
    """One level-triggered pass over a Job and the pods it controls."""
    uid = str(meta(job)["uid"])
    p = JobPass(job, now, [pod for pod in pods if owned_by(pod, uid)])
    if meta(job).get("deletionTimestamp"):
        return _release_pods(p)
    count_finished(p)
    old = job.get("status") or {}
    _observe(p, old)
    step = next(step for applies, step in _PHASES if applies(p))
    step(p)
    ready = [pod for pod in p.active if (condition(pod, "Ready") or {}).get("status") == "True"]
    p.status.update(active=len(p.active), ready=len(ready), terminating=len(p.terminating))
    p.status["conditions"] = p.conditions or None
    _write_status(p, old)
    return p.actions


def _write_status(p: JobPass, old: Mapping[str, Any]) -> None:
    """Prepend one status patch with only the fields that changed (and omit empty defaults)."""
    patch: Obj = {}
    for key, value in p.status.items():
        empty = value in (None, {}, "", 0) and key not in ("ready", "terminating")
        normalized = None if empty else value
        if old.get(key) != normalized and not (normalized is None and key not in old):
            patch[key] = normalized
    if patch:
        p.actions.insert(0, Patch(p.ref, {"status": patch}, "status"))
