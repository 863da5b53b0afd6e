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

import copy
import hashlib
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
    controller_ref,
    meta,
    owned_by,
)
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.exclusive import EXCLUSIVE_KEY, JOB_KEY
from kq.sandbox.cluster.podinfo import condition, labels_of

PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = PREFIX + "jobset-name"
REPLICATED_JOB_NAME = PREFIX + "replicatedjob-name"
RESTART_ATTEMPT = PREFIX + "restart-attempt"
SOURCE = "jobset"
_TEMPLATE_MAPS = ("labels", "annotations")
_SPEC_MAPS = ("nodeSelector",)
_SPEC_LISTS = ("tolerations", "schedulingGates")


def job_key(namespace: str, job_name: str) -> str:
    """The ``job-key`` label: SHA-1 of ``<namespace>/<jobName>`` (upstream's code uses SHA-1)."""
    return hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()


def _true(obj: Mapping[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def _replicas(rjob: Mapping[str, Any]) -> int:
    value = rjob.get("replicas")
    return 1 if value is None else int(value)


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


def _keys(
    jobset: Mapping[str, Any], rjob: Mapping[str, Any], index: int, attempt: int
) -> dict[str, str]:
    """The jobset.sigs.k8s.io/* keys one child Job (and its pods) carries."""
    m = meta(jobset)
    rjobs = (jobset.get("spec") or {}).get("replicatedJobs") or []
    position = next(i for i, r in enumerate(rjobs) if r["name"] == rjob["name"])
    group = str(rjob.get("groupName") or "default")
    in_group = [r for r in rjobs if str(r.get("groupName") or "default") == group]
    name = f"{m['name']}-{rjob['name']}-{index}"
    before_group = next(i for i, r in enumerate(in_group) if r["name"] == rjob["name"])
    return {
        JOBSET_NAME: str(m["name"]),
        PREFIX + "jobset-uid": str(m.get("uid", "")),
        REPLICATED_JOB_NAME: str(rjob["name"]),
        PREFIX + "replicatedjob-replicas": str(_replicas(rjob)),
        PREFIX + "global-replicas": str(sum(_replicas(r) for r in rjobs)),
        PREFIX + "job-index": str(index),
        PREFIX + "job-global-index": str(sum(_replicas(r) for r in rjobs[:position]) + index),
        PREFIX + "group-name": group,
        PREFIX + "group-replicas": str(sum(_replicas(r) for r in in_group)),
        PREFIX + "job-group-index": str(sum(_replicas(r) for r in in_group[:before_group]) + index),
        JOB_KEY: job_key(str(m.get("namespace", "default")), name),
        RESTART_ATTEMPT: str(attempt),
    }


def build_job(jobset: Mapping[str, Any], rjob: Mapping[str, Any], index: int) -> Obj:
    """Child Job ``index`` of ``rjob`` for the JobSet's current restart attempt."""
    m = meta(jobset)
    status = jobset.get("status") or {}
    template = copy.deepcopy(rjob.get("template") or {})
    tmeta = template.get("metadata") or {}
    spec: Obj = template.get("spec") or {}
    spec.setdefault("completionMode", "Indexed")
    spec["suspend"] = bool((jobset.get("spec") or {}).get("suspend"))
    keys = _keys(jobset, rjob, index, int(status.get("restarts") or 0))
    exclusive = (m.get("annotations") or {}).get(EXCLUSIVE_KEY) or (
        tmeta.get("annotations") or {}
    ).get(EXCLUSIVE_KEY)
    extra_notes = {EXCLUSIVE_KEY: exclusive} if exclusive else {}
    pod_template = spec.setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **keys}
    pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **keys, **extra_notes}
    pod_spec = pod_template.setdefault("spec", {})
    pod_spec.setdefault("restartPolicy", "OnFailure")
    network = (jobset.get("spec") or {}).get("network") or {}
    if network.get("enableDNSHostnames", True):
        pod_spec.setdefault("subdomain", network.get("subdomain") or m["name"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{m['name']}-{rjob['name']}-{index}",
            "namespace": m.get("namespace", "default"),
            "labels": {**(tmeta.get("labels") or {}), **keys},
            "annotations": {**(tmeta.get("annotations") or {}), **keys, **extra_notes},
            "ownerReferences": [controller_ref(jobset)],
        },
        "spec": spec,
    }


def _resume_patch(job: Mapping[str, Any], rjob: Mapping[str, Any]) -> Obj:
    """Carry the JobSet's current pod-template scheduling edits into a suspended Job, then run."""
    source = (rjob.get("template") or {}).get("spec", {}).get("template") or {}
    have = ((job.get("spec") or {}).get("template")) or {}
    tmeta: Obj = {k: dict((source.get("metadata") or {}).get(k) or {}) for k in _TEMPLATE_MAPS}
    tspec: Obj = {k: dict((source.get("spec") or {}).get(k) or {}) for k in _SPEC_MAPS}
    for key in _SPEC_LISTS:
        merged = list((have.get("spec") or {}).get(key) or [])
        merged += [x for x in (source.get("spec") or {}).get(key) or [] if x not in merged]
        tspec[key] = merged or None
    template = {"metadata": {k: v for k, v in tmeta.items() if v},
                "spec": {k: v for k, v in tspec.items() if v}}  # fmt: skip
    return {"spec": {"suspend": False, "template": template}}


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
    wanted = {r["name"]: _replicas(r) for r in rjobs if r["name"] in targets}
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
        _replicas(r) for r in rjobs
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
        for index in range(_replicas(rjob)):
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
                p.actions.append(Patch(Ref.of(job), _resume_patch(job, rjob)))


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
