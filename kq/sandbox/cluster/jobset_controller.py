"""JobSet (jobset.x-k8s.io/v1alpha2) controller: child Jobs, suspend/resume, failure policy, status.

Child Jobs are ``<jobset>-<replicatedJob>-<index>`` and carry the ``jobset.sigs.k8s.io/*`` keys as
labels and annotations, on the Job and on its pod template. A restart bumps ``status.restarts``;
Jobs whose ``restart-attempt`` label is older are deleted (foreground) and recreated, right away
per name under ``Recreate``, only once every old Job is gone under ``BlockingRecreate``.
Failure policy rules are tried in order; the first rule some failed Job matches (reason, message
pattern, replicatedJob) decides, blaming the earliest failed Job it matches. Every condition
change is also recorded as an Event whose reason and message are the condition's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

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
from kq.sandbox.cluster.jobset_objects import (
    REPLICATED_JOB_NAME,
    RESTART_ATTEMPT,
    build_job,
    replicas,
    resume_patch,
)
from kq.sandbox.cluster.podinfo import condition, labels_of

SOURCE = "jobset"


def _true(obj: Mapping[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def _attempt(job: Mapping[str, Any]) -> int:
    try:
        return int(labels_of(job).get(RESTART_ATTEMPT, "0"))
    except ValueError:
        return 0


def _pods_per_job(rjob: Mapping[str, Any]) -> int:
    spec = (rjob.get("template") or {}).get("spec") or {}
    parallelism = 1 if spec.get("parallelism") is None else int(spec["parallelism"])
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


@dataclass(slots=True)
class _Pass:
    jobset: Obj
    now: datetime
    actions: list[Action] = field(default_factory=list)
    conditions: list[Obj] = field(default_factory=list)

    @property
    def ref(self) -> Ref:
        return Ref.of(self.jobset)

    def set_condition(self, type_: str, status: str, reason: str, message: str) -> None:
        """Set a condition; a change of status is also announced with an Event, as upstream's
        setCondition does (the same status again, whatever its reason, changes nothing)."""
        current = next((c for c in self.conditions if c["type"] == type_), None)
        if current and current.get("status") == status:
            return
        stamp = rfc3339(self.now)
        new = {"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": stamp}  # fmt: skip
        self.conditions = [c for c in self.conditions if c["type"] != type_] + [new]
        kind: Literal["Normal", "Warning"] = "Warning" if type_ == "Failed" else "Normal"
        self.actions.append(Event(self.ref, reason, message, kind, SOURCE))

    def end_restart(self, reason: str, message: str) -> None:
        """A restart in progress ends: the JobSet finished or was suspended first."""
        current = next((c for c in self.conditions if c["type"] == "RestartingJobSet"), None)
        if current is not None and current.get("status") == "True":
            self.set_condition("RestartingJobSet", "False", reason, message)


def _rule_applies(rule: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    failed = condition(job, "Failed") or {}
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and failed.get("reason") not in reasons:
        return False
    patterns = rule.get("onJobFailureMessagePatterns") or []
    message = str(failed.get("message") or "")
    if patterns and not any(_search(str(p), message) for p in patterns):
        return False
    rjob = labels_of(job).get(REPLICATED_JOB_NAME, "")
    targets = rule.get("targetReplicatedJobs") or []
    return bool(rjob) and (not targets or rjob in targets)


def _search(pattern: str, text: str) -> bool:
    """An RE2 pattern matched anywhere in ``text`` (Python's syntax covers what RE2 accepts)."""
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False  # upstream's webhook refuses it; here it just never matches


def _earliest(jobs: Sequence[Obj]) -> Obj:
    return min(jobs, key=lambda j: (str((condition(j, "Failed") or {}).get(
        "lastTransitionTime", "")), str(meta(j)["name"])))  # fmt: skip


def _policy_action(policy: Mapping[str, Any], failed: Sequence[Obj]) -> tuple[str, str, Obj]:
    """(action, rule name, blamed Job): the first rule any failed Job matches, else the default
    RestartJobSet blaming the earliest failure."""
    for i, rule in enumerate(policy.get("rules") or ()):
        matching = [j for j in failed if _rule_applies(rule, j)]
        if matching:
            name = str(rule.get("name") or f"failurePolicyRule{i}")
            return str(rule["action"]), name, _earliest(matching)
    return "RestartJobSet", "", _earliest(failed)


def _handle_failure(p: _Pass, failed: Sequence[Obj], status: Obj) -> None:
    """Apply the failure policy to the Jobs of the current attempt that failed."""
    policy = (p.jobset.get("spec") or {}).get("failurePolicy")
    if policy is None:
        blame = f"(first failed job: {meta(_earliest(failed))['name']})"
        _fail(p, status, "FailedJobs", f"jobset failed due to one or more job failures {blame}")
        return
    action, rule, first = _policy_action(policy, failed)
    blame = f"(first failed job: {meta(first)['name']})"
    if action == "FailJobSet":
        message = f"applying FailJobSet failure policy action {blame}"
        _fail(p, status, "FailJobSetFailurePolicyAction", message)
        return
    # RestartJob* (per-Job restarts) are not simulated: they restart the whole JobSet here.
    counts = not action.endswith("AndIgnoreMaxRestarts")
    towards = int(status.get("restartsCountTowardsMax") or 0)
    if counts and towards >= int(policy.get("maxRestarts") or 0):
        message = f"jobset failed due to reaching max number of restarts {blame}"
        _fail(p, status, "ReachedMaxRestarts", message)
        return
    status["restarts"] = int(status.get("restarts") or 0) + 1
    if counts:
        status["restartsCountTowardsMax"] = towards + 1
    word = "RestartJobSet" if counts else "RestartJobSetAndIgnoreMaxRestarts"
    p.actions.append(
        Event(
            p.ref,
            f"{word}FailurePolicyAction",
            f"applying {word} failure policy action {blame}",
            "Warning",
            SOURCE,
        )
    )
    reason = f"FailurePolicy_{rule}" if rule else "DefaultFailurePolicy"
    p.set_condition("RestartingJobSet", "True", reason,
                    f"restarting jobset, attempt {status['restarts']}")  # fmt: skip


def _fail(p: _Pass, status: Obj, reason: str, message: str) -> None:
    status["terminalState"] = "Failed"
    p.set_condition("Failed", "True", reason, message)
    p.end_restart("JobSetFailed", "jobset failed")


def _replicated_status(rjobs: Sequence[Mapping[str, Any]], jobs: Sequence[Obj]) -> list[Obj]:
    out = []
    for rjob in rjobs:
        mine = [j for j in jobs if labels_of(j).get(REPLICATED_JOB_NAME) == rjob["name"]]
        need = _pods_per_job(rjob)
        running = [j for j in mine if not _done(j)]

        def ready(job: Mapping[str, Any], need: int = need) -> bool:
            st = job.get("status") or {}
            return int(st.get("ready") or 0) + int(st.get("succeeded") or 0) >= need

        out.append({
            "name": rjob["name"],
            "ready": sum(1 for j in running if ready(j)),
            "succeeded": sum(1 for j in mine if _true(j, "Complete")),
            "failed": sum(1 for j in mine if _true(j, "Failed")),
            "active": sum(1 for j in running if int((j.get("status") or {}).get("active") or 0)),
            "suspended": sum(1 for j in mine if (j.get("spec") or {}).get("suspend")),
        })  # fmt: skip
    return out


def _succeeded(spec: Mapping[str, Any], rstatus: Sequence[Obj]) -> bool:
    policy = spec.get("successPolicy") or {}
    rjobs = spec.get("replicatedJobs") or []
    targets = set(policy.get("targetReplicatedJobs") or [r["name"] for r in rjobs])
    wanted = {r["name"]: replicas(r) for r in rjobs if r["name"] in targets}
    done = {s["name"]: int(s["succeeded"]) for s in rstatus if s["name"] in targets}
    if policy.get("operator") == "Any":
        return any(done.get(name, 0) > 0 for name in wanted)
    return all(done.get(name, 0) >= count for name, count in wanted.items())


def reconcile_jobset(jobset: Obj, jobs: Sequence[Obj], now: datetime) -> list[Action]:
    """One level-triggered pass over a JobSet and the Jobs it controls."""
    if meta(jobset).get("deletionTimestamp"):
        return []
    old = jobset.get("status") or {}
    status: Obj = {k: old.get(k) for k in ("restarts", "restartsCountTowardsMax", "terminalState")}
    p = _Pass(jobset, now, conditions=[dict(c) for c in old.get("conditions") or ()])
    current, previous = _by_attempt(jobset, jobs, int(old.get("restarts") or 0))
    rstatus = _replicated_status((jobset.get("spec") or {}).get("replicatedJobs") or [], current)
    if status["terminalState"] or _true(jobset, "Completed") or _true(jobset, "Failed"):
        # A finished JobSet only stops the Jobs still running.
        _delete(p, [j for j in current if not _done(j)])
    else:
        _delete(p, [j for j in previous if not meta(j).get("deletionTimestamp")])
        _advance(p, status, current, previous, rstatus)
    return _finish(p, old, status, rstatus)


def _by_attempt(jobset: Obj, jobs: Sequence[Obj], attempt: int) -> tuple[list[Obj], list[Obj]]:
    """The owned Jobs of the current restart attempt (not being deleted), and the others."""
    owned = [j for j in jobs if owned_by(j, str(meta(jobset)["uid"]))]
    current = [j for j in owned if _attempt(j) >= attempt and not meta(j).get("deletionTimestamp")]
    return current, [j for j in owned if j not in current]


def _done(job: Mapping[str, Any]) -> bool:
    return _true(job, "Complete") or _true(job, "Failed")


def _delete(p: _Pass, jobs: Sequence[Obj]) -> None:
    # Foreground, as upstream: the Job is gone only once its pods are.
    p.actions.extend(Delete(Ref.of(job), "Foreground") for job in jobs)


def _advance(
    p: _Pass, status: Obj, current: Sequence[Obj], previous: Sequence[Obj], rstatus: list[Obj]
) -> None:
    """The first phase that applies: a failed Job (failure policy), success, else keeping the
    child Jobs and the Suspended / RestartingJobSet conditions in step with the spec."""
    spec = p.jobset.get("spec") or {}
    rjobs = spec.get("replicatedJobs") or []
    failed = [j for j in current if _true(j, "Failed")]
    if failed:
        _handle_failure(p, failed, status)
    elif _succeeded(spec, rstatus):
        status["terminalState"] = "Completed"
        p.set_condition("Completed", "True", "AllJobsCompleted", "jobset completed successfully")
        p.end_restart("JobSetCompleted", "jobset completed successfully")
    else:
        _sync_jobs(p, rjobs, current, previous)
        _sync_conditions(p, rjobs, rstatus)


def _sync_conditions(p: _Pass, rjobs: Sequence[Obj], rstatus: Sequence[Obj]) -> None:
    """Suspended follows the spec; a restart ends once every Job of the new attempt is ready."""
    if (p.jobset.get("spec") or {}).get("suspend"):
        p.set_condition("Suspended", "True", "SuspendedJobs", "jobset is suspended")
        p.end_restart("JobSetSuspended", "jobset is suspended")
    elif condition(p.jobset, "Suspended") is not None:
        p.set_condition("Suspended", "False", "ResumeJobs", "jobset is resumed")
    restarting = condition(p.jobset, "RestartingJobSet") or {}
    if restarting.get("status") == "True" and sum(s["ready"] for s in rstatus) >= sum(
        replicas(r) for r in rjobs
    ):
        p.set_condition("RestartingJobSet", "False", "JobsReady", "all jobs are ready")


def _sync_jobs(
    p: _Pass, rjobs: Sequence[Obj], current: Sequence[Obj], previous: Sequence[Obj]
) -> None:
    """Create missing child Jobs and propagate suspend / resume to existing ones."""
    suspend = bool((p.jobset.get("spec") or {}).get("suspend"))
    blocking = ((p.jobset.get("spec") or {}).get("failurePolicy") or {}).get(
        "restartStrategy"
    ) == "BlockingRecreate"
    by_name = {str(meta(j)["name"]): j for j in current}
    old_names = {str(meta(j)["name"]) for j in previous}
    for rjob in rjobs:
        for index in range(replicas(rjob)):
            name = f"{meta(p.jobset)['name']}-{rjob['name']}-{index}"
            job = by_name.get(name)
            if job is None:
                if name not in old_names and not (blocking and previous):
                    p.actions.append(Create(build_job(p.jobset, rjob, index)))
                continue
            if _done(job):
                continue
            job_suspended = bool((job.get("spec") or {}).get("suspend"))
            if suspend and not job_suspended:
                p.actions.append(Patch(Ref.of(job), {"spec": {"suspend": True}}))
            elif not suspend and job_suspended:
                if (job.get("status") or {}).get("startTime"):
                    # A started Job's template is immutable: clear startTime before editing it.
                    p.actions.append(Patch(Ref.of(job), {"status": {"startTime": None}}, "status"))
                p.actions.append(Patch(Ref.of(job), resume_patch(job, rjob)))


def _finish(p: _Pass, old: Mapping[str, Any], status: Obj, rstatus: list[Obj]) -> list[Action]:
    """Prepend the status patch (only changed fields) to the pass's actions."""
    status["replicatedJobsStatus"] = rstatus
    status["conditions"] = p.conditions or None
    patch: Obj = {}
    for key, value in status.items():
        if old.get(key) != value and not (value in (None, 0) and old.get(key) is None):
            patch[key] = value
    if patch:
        p.actions.insert(0, Patch(p.ref, {"status": patch}, "status"))
    return p.actions
