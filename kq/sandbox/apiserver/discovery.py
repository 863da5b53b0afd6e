"""Discovery documents (legacy and aggregated) and the OpenAPI v3 kubectl validates with."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kq.sandbox.apiserver.registry import Registry, ResourceType

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]

VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kq",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _gvk(rt: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": kind or rt.kind}


def _subresources(rt: ResourceType) -> list[tuple[str, str, str, str, list[str]]]:
    """(name, group, version, kind, verbs) of each subresource."""
    subs = []
    if rt.status:
        subs.append(("status", rt.group, rt.version, rt.kind, SUB_VERBS))
    if rt.scale is not None:
        subs.append(("scale", "autoscaling", "v1", "Scale", SUB_VERBS))
    if (rt.group, rt.kind) == ("", "Pod"):
        subs.append(("binding", "", "v1", "Binding", ["create"]))
        subs.append(("eviction", "policy", "v1", "Eviction", ["create"]))
    if (rt.group, rt.kind) == ("", "ServiceAccount"):
        subs.append(("token", "authentication.k8s.io", "v1", "TokenRequest", ["create"]))
    return subs


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": _gvk(rt),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs) or VERBS,
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    subs = _subresources(rt)
    if subs:
        out["subresources"] = [
            {
                "subresource": name,
                "responseKind": {"group": g, "version": v, "kind": k},
                "verbs": verbs,
            }
            for name, g, v, k, verbs in subs
        ]
    return out


def aggregated(registry: Registry, core: bool) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (core) or ``/apis`` (every other group)."""
    items = []
    for group, versions in sorted(registry.group_versions().items(), key=_group_order):
        if (group == "") != core:
            continue
        metadata: dict[str, Any] = {"creationTimestamp": None}
        if group:
            metadata["name"] = group
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": version,
                        "freshness": "Current",
                        "resources": [
                            _aggregated_resource(rt)
                            for rt in sorted(
                                registry.in_group_version(group, version), key=lambda r: r.plural
                            )
                        ],
                    }
                    for version in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def _group_order(item: tuple[str, list[str]]) -> tuple[int, str]:
    group = item[0]
    # Built-in groups first, like the real server; kubectl resolves short names in order.
    return (0 if group.endswith("k8s.io") or "." not in group else 1, group)


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [
        _group(g, vs) for g, vs in sorted(registry.group_versions().items(), key=_group_order) if g
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = sorted(registry.in_group_version(group, version), key=lambda r: r.plural)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for rt in types:
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs) or VERBS,
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for name, g, v, k, verbs in _subresources(rt):
            sub: dict[str, Any] = {
                "name": f"{rt.plural}/{name}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": k,
                "verbs": verbs,
            }
            if g != rt.group:
                sub.update({"group": g, "version": v})
            resources.append(sub)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def openapi_v3_doc(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """A per-group-version document: patch operations that accept ``fieldValidation``.

    Schemas are deliberately absent so that kubectl computes strategic merge patches of
    built-in kinds from its compiled-in types.
    """
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in sorted(types, key=lambda r: r.plural):
        ns = "/namespaces/{namespace}" if rt.namespaced else ""
        item = f"/{_gv_path(group, version)}{ns}/{rt.plural}/{{name}}"
        operation = {
            "x-kubernetes-group-version-kind": _gvk(rt),
            "x-kubernetes-action": "patch",
            "parameters": [
                {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                for p in ("dryRun", "fieldManager", "fieldValidation", "force")
            ],
            "responses": {"200": {"description": "OK"}},
        }
        paths[item] = {"patch": operation}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def openapi_v3_index(registry: Registry) -> dict[str, Any]:
    paths = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            doc = openapi_v3_doc(registry, group, version)
            digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]
            gv = _gv_path(group, version)
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest.upper()}"}
    return {"paths": paths}
