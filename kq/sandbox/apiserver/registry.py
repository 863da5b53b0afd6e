"""The resource types the server knows: built-in kinds and kinds registered by CRDs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.crds import conversion
from kq.sandbox.apiserver.schema import Schema

# An object (a dict) in any served version, and the apiVersion wanted: the object in it.
Converter = Callable[[Mapping[str, Any], str], dict[str, Any]]


@dataclass(frozen=True)
class ResourceType:
    """One served group/version/resource and how objects of it behave."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False
    scale: Mapping[str, Any] | None = None
    generation: bool = False
    builtin: bool = True
    columns: tuple[Mapping[str, Any], ...] | None = None
    schema: Schema | None = None
    selectable: Mapping[str, str] = field(default_factory=dict)
    deprecation: str | None = None
    defaults: bool = False
    # The version objects are stored in ("" = this one), and how objects move between
    # versions (None: only apiVersion changes, as a CRD's conversion strategy None does).
    storage_version: str = ""
    converter: Converter | None = field(default=None, compare=False)
    # What discovery offers: () is every verb; the review kinds are create-only.
    verbs: tuple[str, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage(self) -> str:
        """Storage key shared by every version of the resource."""
        return f"{self.group}/{self.plural}"

    @property
    def storage_api_version(self) -> str:
        """The apiVersion of stored objects."""
        version = self.storage_version or self.version
        return f"{self.group}/{version}" if self.group else version

    @property
    def strategy_kind(self) -> str:
        """The ``group/version/Kind`` key of strategic-merge-patch tables."""
        return f"{self.group}/{self.version}/{self.kind}"


def _b(
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    status: bool = False,
    generation: bool = False,
    categories: tuple[str, ...] = (),
    scale: Mapping[str, Any] | None = None,
) -> ResourceType:
    return ResourceType(
        group,
        version,
        kind,
        plural,
        namespaced,
        short,
        categories,
        status,
        scale,
        generation,
    )


def _review(group: str, kind: str, plural: str, namespaced: bool = False) -> ResourceType:
    """A kind that is created and answered, never stored (``reviews.py`` serves it)."""
    return ResourceType(group, "v1", kind, plural, namespaced, verbs=("create",))


_REPLICAS_SCALE = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".status.selector",
}

BUILTINS: tuple[ResourceType, ...] = (
    _b("", "v1", "Namespace", "namespaces", False, ("ns",), status=True),
    _b("", "v1", "Node", "nodes", False, ("no",), status=True),
    _b("", "v1", "Pod", "pods", short=("po",), status=True, categories=("all",)),
    _b("", "v1", "Event", "events", short=("ev",)),
    _b("", "v1", "ConfigMap", "configmaps", short=("cm",)),
    _b("", "v1", "Secret", "secrets"),
    _b("", "v1", "ServiceAccount", "serviceaccounts", short=("sa",)),
    _b("", "v1", "Service", "services", short=("svc",), status=True, categories=("all",)),
    _b("", "v1", "PodTemplate", "podtemplates"),
    _b("", "v1", "LimitRange", "limitranges", short=("limits",)),
    _b("", "v1", "ResourceQuota", "resourcequotas", short=("quota",), status=True),
    _b("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short=("pvc",), status=True),
    _b("coordination.k8s.io", "v1", "Lease", "leases"),
    _b("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    _b("events.k8s.io", "v1", "Event", "events", short=("ev",)),
    _b("batch", "v1", "Job", "jobs", status=True, generation=True, categories=("all",)),
    _b("batch", "v1", "CronJob", "cronjobs", short=("cj",), status=True, generation=True),
    _b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        short=("deploy",),
        status=True,
        generation=True,
        categories=("all",),
        scale=_REPLICAS_SCALE,
    ),
    _b(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        short=("sts",),
        status=True,
        generation=True,
        scale=_REPLICAS_SCALE,
    ),
    _b(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        short=("rs",),
        status=True,
        generation=True,
        scale=_REPLICAS_SCALE,
    ),
    _b("apps", "v1", "DaemonSet", "daemonsets", short=("ds",), status=True, generation=True),
    _b("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", short=("pdb",), status=True),
    _review("authentication.k8s.io", "TokenReview", "tokenreviews"),
    _review("authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews"),
    _review("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews"),
    _review("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews", True),
    _review("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews"),
    _review("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews"),
    _b("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _b("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _b("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _b("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _b(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
        generation=True,
    ),
    _b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
        generation=True,
    ),
    _b("apiregistration.k8s.io", "v1", "APIService", "apiservices", False, status=True),
    _b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
        status=True,
        generation=True,
    ),
)

CRD = next(t for t in BUILTINS if t.kind == "CustomResourceDefinition")
NAMESPACE = BUILTINS[0]

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting GA before beta before alpha, higher numbers first."""
    match = _VERSION.match(version)
    if not match:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a CRD serves, one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    storage = next((v["name"] for v in spec.get("versions") or () if v.get("storage")), "")
    # kq's own conversion of Kueue's kinds runs in process, whatever the CRD's conversion
    # stanza says: this server is where `kq run`'s conversion webhook would send them.
    converter = conversion.convert if conversion.convertible(spec["group"], names["kind"]) else None
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        openapi = (version.get("schema") or {}).get("openAPIV3Schema")
        deprecation = None
        if version.get("deprecated"):
            deprecation = version.get("deprecationWarning") or (
                f"{spec['group']}/{version['name']} {names['kind']} is deprecated"
            )
        out.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in subresources,
                scale=subresources.get("scale"),
                generation=True,
                builtin=False,
                columns=tuple(version.get("additionalPrinterColumns") or ()),
                schema=Schema.from_openapi(openapi) if openapi else None,
                selectable={
                    f["jsonPath"].lstrip("."): f["jsonPath"]
                    for f in version.get("selectableFields") or ()
                },
                deprecation=deprecation,
                defaults=bool(openapi) and '"default"' in json.dumps(openapi),
                storage_version=storage,
                converter=converter,
            )
        )
    return out


class Registry:
    """Lookup of resource types by URL segments and by kind."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._by_crd: dict[str, list[ResourceType]] = {}
        self.generation = 0
        self._stored_as: dict[str, list[ResourceType]] = {}
        self._stored_as_generation = -1
        for rt in BUILTINS:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_storage(self, storage: str) -> ResourceType | None:
        """Any served version of the resource stored under ``storage``."""
        return next((rt for rt in self._types.values() if rt.storage == storage), None)

    def stored_as(self, storage: str) -> list[ResourceType]:
        """The served versions stored under ``storage``, in registration order; indexed once
        per registry generation, as admission asks for every webhook call."""
        if self._stored_as_generation != self.generation:
            index: dict[str, list[ResourceType]] = {}
            for rt in self._types.values():
                index.setdefault(rt.storage, []).append(rt)
            self._stored_as, self._stored_as_generation = index, self.generation
        return self._stored_as.get(storage, [])

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per group, preferred first."""
        groups: dict[str, set[str]] = {}
        for rt in self._types.values():
            groups.setdefault(rt.group, set()).add(rt.version)
        return {g: sorted(vs, key=version_priority) for g, vs in groups.items()}

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._types.values() if (rt.group, rt.version) == (group, version)]

    def register_crd(self, crd: Mapping[str, Any]) -> None:
        name = crd["metadata"]["name"]
        self.unregister_crd(name)
        types = types_from_crd(crd)
        for rt in types:
            self._types[(rt.group, rt.version, rt.plural)] = rt
        self._by_crd[name] = types
        self.generation += 1

    def unregister_crd(self, name: str) -> list[ResourceType]:
        types = self._by_crd.pop(name, [])
        for rt in types:
            self._types.pop((rt.group, rt.version, rt.plural), None)
        if types:
            self.generation += 1
        return types
