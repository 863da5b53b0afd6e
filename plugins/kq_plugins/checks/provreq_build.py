"""What the ProvisioningRequest check creates, as pure functions over API-shaped dicts.

The config a check points at, object names, which pod sets need capacity, the PodTemplates and
the ProvisioningRequest body, and which existing request is the current one. No I/O.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kq.admissionchecks import Obj

KUEUE_GROUP = "kueue.x-k8s.io"
CONFIG_KIND = "ProvisioningRequestConfig"
WORKLOAD_API_VERSION = "kueue.x-k8s.io/v1beta1"
REQUEST_API_VERSION = "autoscaling.x-k8s.io/v1"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
IDENTICAL_POD_TEMPLATES = "IdenticalPodTemplates"
IDENTICAL_SCHEDULING = "IdenticalWorkloadSchedulingRequirements"

_HASH_LENGTH = 5
# An object name has at most 253 characters: the kept prefix, "-" and the hash.
_MAX_PREFIX = 252 - _HASH_LENGTH
# A shortened request name no longer ends in its attempt; attempts are searched up to here.
_MAX_SEARCHED_ATTEMPT = 100
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class InconsistentAssignments(ValueError):
    """A pod set that needs capacity has no pod set assignment in ``status.admission``."""


class TemplateError(ValueError):
    """A PodTemplate cannot be built: a flavor is missing or its node labels conflict."""


@dataclass(frozen=True, slots=True)
class Config:
    """The parts of a ProvisioningRequestConfig's spec the check uses, defaults applied."""

    class_name: str
    parameters: Mapping[str, str]
    managed_resources: frozenset[str] = frozenset()
    backoff_limit: int = 3
    backoff_base: int = 60
    backoff_max: int = 1800
    node_selector: tuple[tuple[str, str], ...] = ()
    """``(node label key, provisioningClassDetails key)`` for ``podSetUpdates``."""
    merge_policy: str | None = None


def parse_config(obj: Mapping[str, Any]) -> Config:
    spec = obj.get("spec") or {}
    retry = spec.get("retryStrategy") or {}
    selectors = (spec.get("podSetUpdates") or {}).get("nodeSelector") or ()
    return Config(
        class_name=str(spec.get("provisioningClassName") or ""),
        parameters={str(k): str(v) for k, v in (spec.get("parameters") or {}).items()},
        managed_resources=frozenset(spec.get("managedResources") or ()),
        backoff_limit=_int(retry.get("backoffLimitCount"), 3),
        backoff_base=_int(retry.get("backoffBaseSeconds"), 60),
        backoff_max=_int(retry.get("backoffMaxSeconds"), 1800),
        node_selector=tuple(
            (str(s.get("key")), str(s.get("valueFromProvisioningClassDetail"))) for s in selectors
        ),
        merge_policy=spec.get("podSetMergePolicy"),
    )


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def resolve_config(check: Obj, lookup: Callable[[str], Obj | None]) -> Config | str:
    """The config ``check.spec.parameters`` names, or why the check cannot use it."""
    ref = (check.get("spec") or {}).get("parameters")
    if not ref:
        return "missing parameters reference"
    name = ref.get("name") or ""
    if not name:
        return "empty name: bad parameters reference"
    if ref.get("apiGroup") != KUEUE_GROUP:
        group = ref.get("apiGroup") or ""
        return f'wrong group "{group}", expecting "{KUEUE_GROUP}": bad parameters reference'
    if ref.get("kind") != CONFIG_KIND:
        kind = ref.get("kind") or ""
        return f'wrong kind "{kind}", expecting "{CONFIG_KIND}": bad parameters reference'
    obj = lookup(name)
    if obj is None:
        return f'provisioningrequestconfigs.{KUEUE_GROUP} "{name}" not found'
    config = parse_config(obj)
    # The CRD validates the class, but a server without CRD validation lets anything through.
    if not config.class_name:
        return f'{CONFIG_KIND} "{name}": spec.provisioningClassName must be set'
    if len(config.class_name) > 253 or not _DNS_SUBDOMAIN.fullmatch(config.class_name):
        return (
            f'{CONFIG_KIND} "{name}": spec.provisioningClassName "{config.class_name}" '
            "is not a DNS subdomain"
        )
    return config


# -- names ------------------------------------------------------------------------------------


def limit_name(full: str) -> str:
    """``full``, or when too long its first 247 characters, ``-`` and 5 hex of its SHA-1."""
    if len(full) <= _MAX_PREFIX:
        return full
    digest = hashlib.sha1(full.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{full[:_MAX_PREFIX]}-{digest}"


def request_name(workload: str, check: str, attempt: int) -> str:
    return limit_name(f"{workload}-{check}-{attempt}")


def template_name(request: str, pod_set: str) -> str:
    return limit_name(f"ppt-{request}-{pod_set}")


def attempt_of(name: str, workload: str, check: str) -> int | None:
    """The attempt a request of ``check`` for ``workload`` is, or ``None`` if it is not one."""
    prefix = limit_name(f"{workload}-{check}-")
    match = re.fullmatch(re.escape(prefix) + "([0-9]+)", name)
    if match and request_name(workload, check, int(match[1])) == name:
        return int(match[1])
    if len(prefix) < _MAX_PREFIX:
        return None
    # The name was shortened: find the attempt whose full name it came from.
    found = range(1, _MAX_SEARCHED_ATTEMPT + 1)
    return next((n for n in found if request_name(workload, check, n) == name), None)


# -- objects ----------------------------------------------------------------------------------


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def controller_ref(obj: Mapping[str, Any], api_version: str, kind: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta(obj).get("name"),
        "uid": meta(obj).get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


# -- pod sets ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MergedPodSet:
    """One entry of the request: a pod set, or pod sets merged by ``podSetMergePolicy``."""

    name: str
    pod_set: Obj
    assignment: Obj
    count: int
    members: tuple[str, ...]


def _containers(template: Mapping[str, Any]) -> list[Obj]:
    spec = template.get("spec") or {}
    return [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]


def _uses(pod_set: Mapping[str, Any], resources: frozenset[str]) -> bool:
    for container in _containers(pod_set.get("template") or {}):
        res = container.get("resources") or {}
        if resources & {*(res.get("requests") or {}), *(res.get("limits") or {})}:
            return True
    return False


def _candidates(workload: Obj, managed: frozenset[str]) -> list[Obj]:
    """Pod sets with pods that use a managed resource (any resource when none are named)."""
    pod_sets = (workload.get("spec") or {}).get("podSets") or ()
    return [
        ps
        for ps in pod_sets
        if int(ps.get("count") or 0) > 0 and (not managed or _uses(ps, managed))
    ]


def _assignments(workload: Obj) -> dict[str, Obj]:
    admission = (workload.get("status") or {}).get("admission") or {}
    return {a.get("name"): a for a in admission.get("podSetAssignments") or ()}


def _count(pod_set: Mapping[str, Any], assignment: Mapping[str, Any]) -> int:
    count = assignment.get("count")
    return int((pod_set.get("count") or 0) if count is None else count)


def request_needed(workload: Obj, config: Config) -> bool:
    """Whether some pod set with admitted pods uses a managed resource."""
    assignments = _assignments(workload)
    for pod_set in _candidates(workload, config.managed_resources):
        name = str(pod_set.get("name"))
        assignment = assignments.get(name)
        if assignment is None:
            raise InconsistentAssignments(f'missing assignment for PodSet "{name}"')
        if _count(pod_set, assignment) > 0:
            return True
    return False


def merge_pod_sets(workload: Obj, config: Config) -> list[MergedPodSet]:
    """The request's entries, in pod set order; merged ones sum their counts."""
    assignments = _assignments(workload)
    merged: list[MergedPodSet] = []
    for pod_set in _candidates(workload, config.managed_resources):
        name = str(pod_set.get("name"))
        if name not in assignments:
            raise InconsistentAssignments(f'missing assignment for PodSet "{name}"')
        count = _count(pod_set, assignments[name])
        if count <= 0:
            continue
        for i, group in enumerate(merged):
            if config.merge_policy and _mergeable(group.pod_set, pod_set, config.merge_policy):
                members = (*group.members, name)
                merged[i] = MergedPodSet(
                    group.name, group.pod_set, group.assignment, group.count + count, members
                )
                break
        else:
            merged.append(MergedPodSet(name, pod_set, assignments[name], count, (name,)))
    return merged


def _mergeable(first: Obj, second: Obj, policy: str) -> bool:
    if policy == IDENTICAL_POD_TEMPLATES:
        return bool(_plain(first.get("template")) == _plain(second.get("template")))
    if policy == IDENTICAL_SCHEDULING:
        return bool(_scheduling(first) == _scheduling(second))
    return False


def _scheduling(pod_set: Obj) -> Any:
    """What decides where pods fit: container requests, pod resources, placement."""
    spec = (pod_set.get("template") or {}).get("spec") or {}
    keys = ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")
    requests = [
        [(c.get("resources") or {}).get("requests") for c in spec.get(kind) or ()]
        for kind in ("containers", "initContainers")
    ]
    return _plain([requests, [spec.get(k) for k in keys]])


def _plain(value: Any) -> Any:
    """``value`` with empty maps and lists dropped, so absent and empty compare equal."""
    if isinstance(value, Mapping):
        pairs = ((k, _plain(v)) for k, v in value.items())
        return {k: v for k, v in pairs if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# -- PodTemplates and requests -----------------------------------------------------------------


def pod_template(
    workload: Obj, group: MergedPodSet, name: str, flavors: Callable[[str], Obj | None]
) -> Obj:
    """The PodTemplate of one entry: its pod set's template placed on the assigned flavors,
    with limits standing in for missing requests; owned by the Workload until the request
    exists."""
    template = copy.deepcopy(group.pod_set.get("template") or {})
    spec = template.setdefault("spec", {})
    selector, tolerations = _flavor_placement(group.assignment, flavors)
    spec["nodeSelector"] = _merge_selector(spec.get("nodeSelector") or {}, selector)
    if not spec["nodeSelector"]:
        del spec["nodeSelector"]
    present = list(spec.get("tolerations") or ())
    present += [t for t in tolerations if t not in present]
    if present:
        spec["tolerations"] = present
    _limits_as_requests(spec)
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": name,
            "namespace": meta(workload).get("namespace"),
            "labels": {MANAGED_LABEL: "true"},
            "ownerReferences": [controller_ref(workload, WORKLOAD_API_VERSION, "Workload")],
        },
        "template": template,
    }


def _flavor_placement(
    assignment: Obj, flavors: Callable[[str], Obj | None]
) -> tuple[dict[str, str], list[Obj]]:
    selector: dict[str, str] = {}
    tolerations: list[Obj] = []
    for flavor_name in dict.fromkeys((assignment.get("flavors") or {}).values()):
        flavor = flavors(str(flavor_name))
        if flavor is None:
            raise TemplateError(f'resourceflavors.{KUEUE_GROUP} "{flavor_name}" not found')
        spec = flavor.get("spec") or {}
        selector.update(spec.get("nodeLabels") or {})
        tolerations += [t for t in spec.get("tolerations") or () if t not in tolerations]
    return selector, tolerations


def _merge_selector(current: Mapping[str, str], added: Mapping[str, str]) -> dict[str, str]:
    for key, value in added.items():
        if key in current and current[key] != value:
            raise TemplateError(
                f"conflict for nodeSelector: key={key}, value1={current[key]}, value2={value}"
            )
    return {**current, **added}


def _limits_as_requests(spec: Obj) -> None:
    # Each container's resources, then the pod-level ones (KEP-2837) when set.
    for holder in [*_containers({"spec": spec}), spec]:
        res = holder.get("resources")
        if isinstance(res, dict) and res.get("limits"):
            res["requests"] = {**res["limits"], **(res.get("requests") or {})}


def request_parameters(workload: Obj, config: Config) -> dict[str, str]:
    """The config's parameters, overridden by the Workload's ``provreq.kueue.x-k8s.io/*``."""
    annotations = meta(workload).get("annotations") or {}
    return {
        **config.parameters,
        **{
            k.removeprefix(PROVREQ_ANNOTATION_PREFIX): str(v)
            for k, v in annotations.items()
            if k.startswith(PROVREQ_ANNOTATION_PREFIX)
        },
    }


def request_body(
    workload: Obj, name: str, config: Config, entries: Iterable[tuple[str, int]]
) -> Obj:
    """The ProvisioningRequest; ``entries`` are ``(PodTemplate name, count)``."""
    spec: Obj = {"provisioningClassName": config.class_name}
    parameters = request_parameters(workload, config)
    if parameters:
        spec["parameters"] = parameters
    spec["podSets"] = [{"podTemplateRef": {"name": t}, "count": n} for t, n in entries]
    return {
        "apiVersion": REQUEST_API_VERSION,
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": name,
            "namespace": meta(workload).get("namespace"),
            "labels": {MANAGED_LABEL: "true"},
            "ownerReferences": [controller_ref(workload, WORKLOAD_API_VERSION, "Workload")],
        },
        "spec": spec,
    }


def in_sync(request: Obj, config: Config) -> bool:
    """Same class and every config parameter unchanged; extra parameters are the Workload's."""
    spec = request.get("spec") or {}
    if spec.get("provisioningClassName") != config.class_name:
        return False
    parameters = spec.get("parameters") or {}
    return all(parameters.get(k) == v for k, v in config.parameters.items())


def current_request(
    workload: str, check: str, config: Config, requests: Sequence[Obj]
) -> Obj | None:
    """The check's latest request that still matches the config."""
    best: tuple[int, Obj] | None = None
    for request in requests:
        attempt = attempt_of(str(meta(request).get("name")), workload, check)
        if attempt is None or not in_sync(request, config):
            continue
        if best is None or attempt > best[0]:
            best = (attempt, request)
    return best[1] if best else None
