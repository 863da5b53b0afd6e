"""JobSet child Jobs: the jobset.sigs.k8s.io/* keys they carry, the Job built for an index, and
the patch that resumes a suspended one with the JobSet's current scheduling edits."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from kq.sandbox.cluster.actions import Obj, controller_ref, meta
from kq.sandbox.cluster.exclusive import EXCLUSIVE_KEY, JOB_KEY

PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = PREFIX + "jobset-name"
REPLICATED_JOB_NAME = PREFIX + "replicatedjob-name"
RESTART_ATTEMPT = PREFIX + "restart-attempt"
_TEMPLATE_MAPS = ("labels", "annotations")
_SPEC_MAPS = ("nodeSelector",)
_SPEC_LISTS = ("tolerations", "schedulingGates")


def job_key(namespace: str, job_name: str) -> str:
    """The ``job-key`` label: SHA-1 of ``<namespace>/<jobName>`` (upstream's code uses SHA-1)."""
    return hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()


def replicas(rjob: Mapping[str, Any]) -> int:
    value = rjob.get("replicas")
    return 1 if value is None else int(value)


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
        PREFIX + "replicatedjob-replicas": str(replicas(rjob)),
        PREFIX + "global-replicas": str(sum(replicas(r) for r in rjobs)),
        PREFIX + "job-index": str(index),
        PREFIX + "job-global-index": str(sum(replicas(r) for r in rjobs[:position]) + index),
        PREFIX + "group-name": group,
        PREFIX + "group-replicas": str(sum(replicas(r) for r in in_group)),
        PREFIX + "job-group-index": str(sum(replicas(r) for r in in_group[:before_group]) + index),
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


def resume_patch(job: Mapping[str, Any], rjob: Mapping[str, Any]) -> Obj:
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
