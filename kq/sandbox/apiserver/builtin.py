"""Behaviour of built-in kinds: defaults set on create, validation, immutability."""

from __future__ import annotations

import copy
import re
from typing import Any

from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.schema import FieldError, structural_errors
from kq.sandbox.apiserver.store import Obj

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
# Kinds whose names must be DNS labels rather than subdomains.
_LABEL_NAMED = frozenset({("", "Namespace"), ("", "Service"), ("batch", "Job")})


def _err(field: str, reason: str, message: str) -> FieldError:
    return FieldError(field, reason, message)


def validate_name(rt: ResourceType, name: str) -> list[FieldError]:
    if not name:
        return [
            _err(
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        ]
    if rt.group == "rbac.authorization.k8s.io":
        return _path_segment_errors(name)
    if (rt.group, rt.kind) in _LABEL_NAMED:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return [
                _err("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {_LABEL_MSG}')
            ]
        return []
    # Custom resources too: the apiextensions server holds every name to a DNS subdomain.
    problems = ["must be no more than 253 characters"] if len(name) > 253 else []
    if not _DNS_SUBDOMAIN.match(name):
        problems.append(_SUBDOMAIN_MSG)
    return [
        _err("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {problem}')
        for problem in problems
    ]


def _path_segment_errors(name: str) -> list[FieldError]:
    """RBAC names need only be usable in a URL path (``system:discovery`` is one)."""
    problems = [f"may not be '{name}'"] if name in (".", "..") else []
    problems += [f"may not contain '{c}'" for c in "/%" if c in name]
    return [
        _err("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {problem}')
        for problem in problems
    ]


def keeps_status_on_create(rt: ResourceType) -> bool:
    """Nodes are registered with their status; other kinds start from an empty one."""
    return (rt.group, rt.kind) == ("", "Node")


def _set_default(obj: dict[str, Any], key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def prepare_create(rt: ResourceType, obj: Obj) -> None:
    """Server-set defaults of a new built-in object (in place)."""
    key = (rt.group, rt.kind)
    if key == ("", "Namespace"):
        _namespace(obj)
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
    elif key == ("", "Pod"):
        _pod(obj)
    elif key == ("batch", "Job"):
        _job(obj)
    elif key == ("", "Secret"):
        _set_default(obj, "type", "Opaque")
    elif key == ("scheduling.k8s.io", "PriorityClass"):
        _set_default(obj, "preemptionPolicy", "PreemptLowerPriority")
    elif key == ("apps", "Deployment"):
        spec = obj.setdefault("spec", {})
        _set_default(spec, "replicas", 1)
        _set_default(spec, "revisionHistoryLimit", 10)
    elif key == ("", "LimitRange"):
        _limit_range(obj)
    elif key == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        crd_status(obj)


def prepare_update(rt: ResourceType, obj: Obj) -> None:
    """Defaults re-applied on every write."""
    if (rt.group, rt.kind) == ("", "Namespace"):
        _namespace(obj)
    elif (rt.group, rt.kind) == ("", "LimitRange"):
        _limit_range(obj)
    elif (rt.group, rt.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        crd_status(obj)


def _namespace(obj: Obj) -> None:
    labels = obj["metadata"].setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def _limit_range(obj: Obj) -> None:
    """A Container item's default limit falls back to its max, and its default request to
    the default limit, then to its min (core/v1 ``SetDefaults_LimitRangeItem``)."""
    for item in (obj.get("spec") or {}).get("limits") or ():
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = {**(item.get("max") or {}), **(item.get("default") or {})}
        request = {
            **(item.get("min") or {}),
            **default,
            **(item.get("defaultRequest") or {}),
        }
        for key, value in (("default", default), ("defaultRequest", request)):
            if value:
                item[key] = value


def _pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    for key, value in (
        ("restartPolicy", "Always"),
        ("schedulerName", "default-scheduler"),
        ("terminationGracePeriodSeconds", 30),
        ("dnsPolicy", "ClusterFirst"),
        ("securityContext", {}),
        ("enableServiceLinks", True),
        ("preemptionPolicy", "PreemptLowerPriority"),
        ("priority", 0),
    ):
        _set_default(spec, key, value)
    for container in spec.get("containers") or []:
        _set_default(container, "terminationMessagePath", "/dev/termination-log")
        _set_default(container, "terminationMessagePolicy", "File")
        _set_default(container, "imagePullPolicy", "IfNotPresent")
        _set_default(container, "resources", {})
    status = obj.setdefault("status", {})
    _set_default(status, "phase", "Pending")
    _set_default(status, "qosClass", "BestEffort")


def _job(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    _set_default(spec, "parallelism", 1)
    if spec.get("completions") is None and spec["parallelism"] == 1:
        spec["completions"] = 1
    for key, value in (
        ("backoffLimit", 6),
        ("completionMode", "NonIndexed"),
        ("suspend", False),
        ("manualSelector", None),
        ("podReplacementPolicy", "TerminatingOrFailed"),
    ):
        if value is not None:
            _set_default(spec, key, value)
    uid = obj["metadata"]["uid"]
    name = obj["metadata"]["name"]
    if not spec.get("manualSelector"):
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        template = spec.setdefault("template", {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": name,
                "controller-uid": uid,
                "job-name": name,
            }
        )
    pod_spec = spec.get("template", {}).get("spec")
    if isinstance(pod_spec, dict):
        _pod({"spec": pod_spec, "status": {}})
        pod_spec["restartPolicy"] = (
            (spec.get("template") or {}).get("spec", {}).get("restartPolicy", "Never")
        )


# Upstream's cap on the total size of an object's annotations (why big CRDs need --server-side).
ANNOTATIONS_LIMIT = 256 * 1024


def _validate_annotations(obj: Obj) -> list[FieldError]:
    annotations = obj.get("metadata", {}).get("annotations") or {}
    size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if size > ANNOTATIONS_LIMIT:
        return [
            _err(
                "metadata.annotations",
                "FieldValueTooLong",
                f"Too long: may not be more than {ANNOTATIONS_LIMIT} bytes",
            )
        ]
    return []


def validate(rt: ResourceType, obj: Obj, old: Obj | None) -> list[FieldError]:
    """Validation of metadata and of the built-in kinds the controller relies on."""
    errors = _validate_annotations(obj)
    return errors + _validate_kind(rt, obj, old)


def _validate_kind(rt: ResourceType, obj: Obj, old: Obj | None) -> list[FieldError]:
    key = (rt.group, rt.kind)
    if key == ("batch", "Job"):
        return _validate_job(obj, old)
    if key == ("", "Pod"):
        return _validate_pod(obj, old)
    if key == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        return validate_crd(obj)
    return []


def _fixed_part(spec: Obj, skipped: set[str]) -> Obj:
    """The part of a pod spec an update may not change: a shallow view, as it is only compared."""
    view = {k: v for k, v in spec.items() if k not in skipped}
    if view.get("containers"):
        view["containers"] = [
            {k: v for k, v in c.items() if k != "image"} for c in view["containers"]
        ]
    return view


def _validate_pod(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    if not spec.get("containers"):
        return [_err("spec.containers", "FieldValueRequired", "Required value")]
    if old is None:
        return []
    previous = old.get("spec") or {}
    skipped = {"activeDeadlineSeconds", "tolerations", "schedulingGates"}
    if previous.get("schedulingGates"):
        skipped |= {"nodeSelector", "affinity"}
    if not previous.get("nodeName"):
        skipped.add("nodeName")
    if _fixed_part(previous, skipped) != _fixed_part(spec, skipped):
        return [
            _err(
                "spec",
                "FieldValueForbidden",
                "Forbidden: pod updates may not change fields other than "
                "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                "`spec.activeDeadlineSeconds`,`spec.tolerations` "
                "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)",
            )
        ]
    return []


_MUTABLE_SCHEDULING = ("nodeSelector", "tolerations", "affinity", "schedulingGates")


def _validate_job(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors = []
    template_spec = (spec.get("template") or {}).get("spec") or {}
    if not template_spec.get("containers"):
        errors.append(_err("spec.template.spec.containers", "FieldValueRequired", "Required value"))
    policy = template_spec.get("restartPolicy")
    if policy not in ("Never", "OnFailure"):
        errors.append(
            _err(
                "spec.template.spec.restartPolicy",
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
            )
        )
    if old is None:
        return errors
    before = old.get("spec") or {}
    if before.get("selector") != spec.get("selector"):
        errors.append(
            _err("spec.selector", "FieldValueInvalid", "Invalid value: field is immutable")
        )
    if before.get("completions") != spec.get("completions") and before.get(
        "parallelism"
    ) == spec.get("parallelism"):
        errors.append(
            _err("spec.completions", "FieldValueInvalid", "Invalid value: field is immutable")
        )
    old_t = copy.deepcopy(before.get("template") or {})
    new_t = copy.deepcopy(spec.get("template") or {})
    mutable = before.get("suspend") and not (old.get("status") or {}).get("startTime")
    if mutable:
        for t in (old_t, new_t):
            t.get("metadata", {}).pop("labels", None)
            t.get("metadata", {}).pop("annotations", None)
            for key in _MUTABLE_SCHEDULING:
                t.get("spec", {}).pop(key, None)
    if old_t != new_t:
        errors.append(
            _err("spec.template", "FieldValueInvalid", "Invalid value: field is immutable")
        )
    return errors


def validate_crd(crd: Obj) -> list[FieldError]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    errors = []
    group, plural = spec.get("group", ""), names.get("plural", "")
    if not group:
        errors.append(_err("spec.group", "FieldValueRequired", "Required value"))
    if not plural:
        errors.append(_err("spec.names.plural", "FieldValueRequired", "Required value"))
    if not names.get("kind"):
        errors.append(_err("spec.names.kind", "FieldValueRequired", "Required value"))
    if group and plural and crd["metadata"]["name"] != f"{plural}.{group}":
        errors.append(
            _err(
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{crd["metadata"]["name"]}": '
                'must be spec.names.plural+"."+spec.group',
            )
        )
    versions = spec.get("versions") or []
    if not versions:
        errors.append(_err("spec.versions", "FieldValueRequired", "Required value"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errors.append(
            _err(
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    for i, version in enumerate(versions):
        openapi = (version.get("schema") or {}).get("openAPIV3Schema")
        if openapi is None:
            errors.append(
                _err(
                    f"spec.versions[{i}].schema.openAPIV3Schema",
                    "FieldValueRequired",
                    "Required value: schemas are required",
                )
            )
            continue
        errors.extend(structural_errors(openapi, f"spec.versions[{i}].schema.openAPIV3Schema"))
    return errors


def crd_status(crd: Obj) -> None:
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    spec["names"] = names
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    previous = (crd.get("status") or {}).get("storedVersions") or []
    when = crd["metadata"].get("creationTimestamp")
    crd["status"] = {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": when,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": when,
            },
        ],
        "storedVersions": sorted(set(previous) | set(stored)),
    }
