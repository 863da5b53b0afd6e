"""Pod groups: the pods labelled ``kueue.x-k8s.io/pod-group-name`` that make one Workload.

A group's Workload is named after the group and has one PodSet per *role*: pods whose shape
(requests, ports, node selector, affinity, tolerations, priority, ...) hashes alike, as
upstream's ``kueue.x-k8s.io/role-hash``. It is built only once every pod of
``kueue.x-k8s.io/pod-group-total-count`` exists, unless the group is annotated
``kueue.x-k8s.io/pod-group-fast-admission: "true"``: then it is built from its first runnable pod,
with one pod set of that pod's role counting the whole group, so quota for all of it is
reserved before the other pods exist and each is ungated as it comes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kq.jobframework import Job, PodSet
from kq.jobframework.objects import annotations_of, deep_copy, dig, labels, meta, name

GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
RETRIABLE_IN_GROUP_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
IS_GROUP_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/is-group-workload"
SERVING_ANNOTATION = "kueue.x-k8s.io/pod-group-serving"
FAST_ADMISSION_ANNOTATION = "kueue.x-k8s.io/pod-group-fast-admission"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
MAX_ROLES = 18
MEMBERS = "members"
"""Where a composed group keeps its pods (the group itself is never written)."""


def group_name(pod: Job) -> str:
    return str(labels(pod).get(GROUP_NAME_LABEL, ""))


def members(job: Job) -> list[Job]:
    return list(job.get(MEMBERS) or [job])


def is_group(job: Job) -> bool:
    return MEMBERS in job


def total_count(pod: Job) -> int:
    """The group's size; ``ValueError`` with upstream's message when it is not usable."""
    raw = annotations_of(pod).get(GROUP_TOTAL_COUNT_ANNOTATION)
    if raw is None:
        raise ValueError(f"failed to extract '{GROUP_TOTAL_COUNT_ANNOTATION}' annotation")
    try:
        count = int(raw)
    except ValueError:
        raise ValueError(f'strconv.Atoi: parsing "{raw}": invalid syntax') from None
    if count < 1:
        raise ValueError(
            f"incorrect annotation value '{GROUP_TOTAL_COUNT_ANNOTATION}={raw}': "
            "group total count should be greater than zero"
        )
    return count


def phase(pod: Job) -> str:
    return str(dig(pod, "status", "phase") or "")


def is_terminated(pod: Job) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def runnable_or_succeeded(pod: Job) -> bool:
    """Can still run, runs or succeeded: not Failed, nor deleted before it got a node."""
    if meta(pod).get("deletionTimestamp") and not dig(pod, "spec", "nodeName"):
        return False
    return phase(pod) != "Failed"


def role_hash(pod: Job) -> str:
    """The role of a pod: its annotation if the webhook set one, else the hash of its shape."""
    return annotations_of(pod).get(ROLE_HASH_ANNOTATION) or shape_hash(pod.get("spec") or {})


def shape_hash(spec: Mapping[str, Any]) -> str:
    """Eight hex digits of SHA-256 over the fields upstream's ``SpecShape`` keeps."""

    def containers(key: str) -> list[dict[str, Any]] | None:
        found = [
            {"resources": {"requests": dig(c, "resources", "requests")}, "ports": c.get("ports")}
            for c in spec.get(key) or ()
        ]
        return found or None

    shape: dict[str, Any] = {
        "initContainers": containers("initContainers"),
        "containers": containers("containers"),
        **{
            k: spec.get(k)
            for k in (
                "nodeSelector",
                "affinity",
                "tolerations",
                "runtimeClassName",
                "priority",
                "topologySpreadConstraints",
                "overhead",
                "resourceClaims",
            )
        },
    }
    if spec.get("resources") is not None:
        shape["resources"] = dig(spec, "resources", "requests")
    text = json.dumps({"spec": shape}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def fast_admission(pod: Job) -> bool:
    return annotations_of(pod).get(FAST_ADMISSION_ANNOTATION) == "true"


def pod_sets(group: Job) -> list[PodSet]:
    """The Workload's pod sets: per role (``roles``), or with fast admission one of the first
    runnable pod's role counting the whole group (upstream's ``constructGroupPodSetsFast``)."""
    first = members(group)[0]
    if not fast_admission(first):
        return roles(group)
    count = total_count(first)
    for pod in members(group):
        if runnable_or_succeeded(pod):
            return [PodSet(role_hash(pod), count, {"spec": deep_copy(pod.get("spec") or {})})]
    raise ValueError("failed to find a runnable pod in the group")


def roles(group: Job) -> list[PodSet]:
    """One PodSet per role among the pods that can still run, sorted by role."""
    by_role: dict[str, PodSet] = {}
    for pod in members(group):
        if not runnable_or_succeeded(pod):
            continue
        role = role_hash(pod)
        found = by_role.get(role)
        if found is None:
            by_role[role] = PodSet(role, 1, {"spec": deep_copy(pod.get("spec") or {})})
        else:
            by_role[role] = PodSet(role, found.count + 1, found.template)
    return [by_role[role] for role in sorted(by_role)]


def compose_error(group: Job) -> str | None:
    """Why the group's Workload cannot be built yet; upstream's messages."""
    first = members(group)[0]
    try:
        count = total_count(first)
    except ValueError as error:
        return str(error)
    active = [p for p in members(group) if runnable_or_succeeded(p)]
    if len(active) < count and not fast_admission(first):
        return f"'{group_name(first)}' group has fewer runnable pods than expected"
    if not active:
        return "failed to find a runnable pod in the group"
    queue = labels(first).get(QUEUE_NAME_LABEL, "")
    for pod in members(group):
        if phase(pod) == "Failed":
            continue
        other = labels(pod).get(QUEUE_NAME_LABEL, "")
        if other != queue:
            return (
                f"pods '{name(first)}' and '{name(pod)}' has different queue names: "
                f"{queue}!={other}"
            )
        theirs = annotations_of(pod).get(GROUP_TOTAL_COUNT_ANNOTATION, "")
        if theirs != str(count):
            return (
                f"pods '{name(first)}' and '{name(pod)}' has different "
                f"'{GROUP_TOTAL_COUNT_ANNOTATION}' values: {count}!={theirs}"
            )
    if len(roles(group)) > MAX_ROLES:
        return f"pod group can't include more than {MAX_ROLES} roles"
    return None


def finished_message(group: Job) -> str | None:
    """``Pods succeeded: n/total.`` once the group is done, as upstream (always a success)."""
    pods = members(group)
    if annotations_of(pods[0]).get(SERVING_ANNOTATION) == "true":
        return None  # a serving group never finishes
    try:
        count = total_count(pods[0])
    except ValueError:
        return None
    succeeded = sum(1 for p in pods if phase(p) == "Succeeded")
    active = any(not is_terminated(p) for p in pods)
    unretriable = any(annotations_of(p).get(RETRIABLE_IN_GROUP_ANNOTATION) == "false" for p in pods)
    if succeeded == count or (not active and unretriable):
        return f"Pods succeeded: {succeeded}/{count}."
    return None


def matches(group: Job, workload: Job) -> bool:
    """Upstream's ``equivalentToWorkload`` once excess pods are set aside: the Workload is
    the group's and every role of its runnable pods is one of its pod sets, in order (pods
    may be missing, e.g. failed ones waiting for replacements)."""
    if name(workload) != group_name(members(group)[0]):
        return False
    have = [ps.get("name") for ps in dig(workload, "spec", "podSets") or ()]
    index = 0
    for pod_set in roles(group):
        while index < len(have) and have[index] != pod_set.name:
            index += 1
        if index == len(have):
            return False
        index += 1
    return True


def owner_references(pods: Sequence[Job]) -> list[dict[str, Any]]:
    """Every pod owns its group's Workload; none controls it."""
    return [
        {"apiVersion": "v1", "kind": "Pod", "name": name(p), "uid": str(meta(p).get("uid", ""))}
        for p in pods
    ]
