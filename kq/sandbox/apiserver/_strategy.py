"""Patch strategies of built-in kinds, from the upstream ``patchStrategy``/``patchMergeKey`` tags.

A *type* maps field names to a ``FieldStrategy``.  Fields not listed behave like plain
JSON: maps merge recursively (with no list strategies below them) and lists are atomic
(replaced whole).  Kinds are keyed ``"<group>/<version>/<Kind>"`` with the core group
empty, e.g. ``"/v1/Pod"`` or ``"batch/v1/Job"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["FieldStrategy", "TypeStrategy", "kind_strategy", "lookup"]


@dataclass(frozen=True)
class FieldStrategy:
    """How one field merges: ``merge`` lists (by ``merge_key`` for lists of maps, as a set
    for primitives), ``replace`` for maps replaced whole; ``type`` describes the value
    (for lists, each item)."""

    strategy: str = ""
    merge_key: str = ""
    type: TypeStrategy | None = None


@dataclass(frozen=True)
class TypeStrategy:
    """Strategies of the fields of one struct type."""

    name: str
    fields: dict[str, FieldStrategy] = field(default_factory=dict)


def _merge(key: str = "", t: TypeStrategy | None = None) -> FieldStrategy:
    return FieldStrategy("merge", key, t)


def _nested(t: TypeStrategy) -> FieldStrategy:
    return FieldStrategy("", "", t)


def _conditions_status(name: str) -> TypeStrategy:
    return TypeStrategy(name, {"conditions": _merge("type")})


OBJECT_META = TypeStrategy(
    "ObjectMeta",
    {"ownerReferences": _merge("uid"), "finalizers": _merge()},
)
CONTAINER = TypeStrategy(
    "Container",
    {
        "ports": _merge("containerPort"),
        "env": _merge("name"),
        "volumeMounts": _merge("mountPath"),
        "volumeDevices": _merge("devicePath"),
    },
)
POD_SPEC = TypeStrategy(
    "PodSpec",
    {
        "volumes": _merge("name"),
        "initContainers": _merge("name", CONTAINER),
        "containers": _merge("name", CONTAINER),
        "ephemeralContainers": _merge("name", CONTAINER),
        "imagePullSecrets": _merge("name"),
        "hostAliases": _merge("ip"),
        "topologySpreadConstraints": _merge("topologyKey"),
        "schedulingGates": _merge("name"),
        "resourceClaims": _merge("name"),
    },
)
POD_STATUS = TypeStrategy(
    "PodStatus",
    {
        "conditions": _merge("type"),
        "hostIPs": _merge("ip"),
        "podIPs": _merge("ip"),
        "resourceClaimStatuses": _merge("name"),
    },
)
POD_TEMPLATE_SPEC = TypeStrategy(
    "PodTemplateSpec", {"metadata": _nested(OBJECT_META), "spec": _nested(POD_SPEC)}
)
JOB_SPEC = TypeStrategy("JobSpec", {"template": _nested(POD_TEMPLATE_SPEC)})
WORKLOAD_SPEC = TypeStrategy("WorkloadSpec", {"template": _nested(POD_TEMPLATE_SPEC)})


def _kind(spec: TypeStrategy | None = None, status: TypeStrategy | None = None) -> TypeStrategy:
    fields = {"metadata": _nested(OBJECT_META)}
    if spec is not None:
        fields["spec"] = _nested(spec)
    if status is not None:
        fields["status"] = _nested(status)
    return TypeStrategy("Object", fields)


_KINDS: dict[str, TypeStrategy] = {
    "/v1/Pod": _kind(POD_SPEC, POD_STATUS),
    "/v1/PodTemplate": TypeStrategy(
        "PodTemplate", {"metadata": _nested(OBJECT_META), "template": _nested(POD_TEMPLATE_SPEC)}
    ),
    "/v1/ReplicationController": _kind(WORKLOAD_SPEC, _conditions_status("RCStatus")),
    "/v1/Service": _kind(
        TypeStrategy("ServiceSpec", {"ports": _merge("port")}), _conditions_status("SvcStatus")
    ),
    "/v1/Node": _kind(
        TypeStrategy("NodeSpec", {"podCIDRs": _merge()}),
        TypeStrategy("NodeStatus", {"conditions": _merge("type"), "addresses": _merge("type")}),
    ),
    "/v1/Namespace": _kind(None, _conditions_status("NamespaceStatus")),
    "/v1/PersistentVolumeClaim": _kind(None, _conditions_status("PVCStatus")),
    "/v1/ServiceAccount": TypeStrategy(
        "ServiceAccount", {"metadata": _nested(OBJECT_META), "secrets": _merge("name")}
    ),
    "batch/v1/Job": _kind(JOB_SPEC, _conditions_status("JobStatus")),
    "batch/v1/CronJob": _kind(
        TypeStrategy(
            "CronJobSpec",
            {
                "jobTemplate": _nested(
                    TypeStrategy(
                        "JobTemplateSpec",
                        {"metadata": _nested(OBJECT_META), "spec": _nested(JOB_SPEC)},
                    )
                )
            },
        )
    ),
    "apps/v1/Deployment": _kind(WORKLOAD_SPEC, _conditions_status("DeploymentStatus")),
    "apps/v1/StatefulSet": _kind(WORKLOAD_SPEC, _conditions_status("StatefulSetStatus")),
    "apps/v1/DaemonSet": _kind(WORKLOAD_SPEC, _conditions_status("DaemonSetStatus")),
    "apps/v1/ReplicaSet": _kind(WORKLOAD_SPEC, _conditions_status("ReplicaSetStatus")),
    "policy/v1/PodDisruptionBudget": _kind(
        TypeStrategy("PDBSpec", {"selector": FieldStrategy("replace")}),
        _conditions_status("PDBStatus"),
    ),
}

# Kinds whose only list strategies come from ObjectMeta.
_META_ONLY = (
    "/v1/ConfigMap",
    "/v1/Secret",
    "/v1/Event",
    "/v1/Endpoints",
    "/v1/LimitRange",
    "/v1/ResourceQuota",
    "/v1/PersistentVolume",
    "coordination.k8s.io/v1/Lease",
    "scheduling.k8s.io/v1/PriorityClass",
    "events.k8s.io/v1/Event",
    "rbac.authorization.k8s.io/v1/Role",
    "rbac.authorization.k8s.io/v1/ClusterRole",
    "rbac.authorization.k8s.io/v1/RoleBinding",
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
)
for _name in _META_ONLY:
    _KINDS[_name] = _kind()

_UNKNOWN = _kind()


def kind_strategy(kind: str) -> TypeStrategy:
    """Root strategy for ``kind``; unknown kinds get only the ObjectMeta strategies."""
    return _KINDS.get(kind, _UNKNOWN)


def lookup(t: TypeStrategy | None, name: str) -> FieldStrategy:
    """Strategy of field ``name`` in type ``t`` (plain JSON when unknown)."""
    if t is None:
        return _PLAIN
    return t.fields.get(name, _PLAIN)


_PLAIN = FieldStrategy()
