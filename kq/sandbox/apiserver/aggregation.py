"""APIService aggregation: requests for an APIService's group/version go to its server.

As kube-apiserver without endpoint routing, the backend is the APIService's Service: the
sandbox has no cluster network, so only a Service of type ExternalName can be reached (its
``externalName`` at the APIService's port, 443 by default), which is how ``kq dev`` points at
``kq run``'s visibility server on loopback. The request is forwarded as it came (method,
path, query, body); the answer is passed back. Discovery lists the aggregated groups, and
aggregated discovery asks each backend for its resources, as the real aggregator does.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.registry import version_priority
from kq.sandbox.apiserver.store import Obj, Store
from kq.sandbox.apiserver.tls_clients import client_context

API_SERVICES = "apiregistration.k8s.io/apiservices"
SERVICES = "/services"
TIMEOUT = aiohttp.ClientTimeout(total=30, sock_connect=5)
_FORWARDED = ("Accept", "Content-Type")


@dataclass(frozen=True)
class Backend:
    url: str
    tls: ssl.SSLContext | bool
    server_name: str | None


class Aggregator:
    def __init__(self, store: Store) -> None:
        self._store = store

    def _remote(self) -> list[Obj]:
        """APIServices served elsewhere (without ``spec.service`` a group is served here)."""
        return [a for a in self._store.select(API_SERVICES) if (a.get("spec") or {}).get("service")]

    def groups(self) -> dict[str, list[str]]:
        """Aggregated versions per group, preferred first."""
        found: dict[str, list[tuple[int, str]]] = {}
        for api in self._remote():
            spec = api["spec"]
            priority = int(spec.get("versionPriority") or 0)
            found.setdefault(spec.get("group", ""), []).append((priority, spec.get("version", "")))
        return {
            group: [v for _, v in sorted(vs, key=lambda pv: (-pv[0], version_priority(pv[1])))]
            for group, vs in found.items()
        }

    def backend(self, group: str, version: str) -> Backend | None:
        """Where ``group/version`` is served; None when it is served here."""
        api = self._store.get(API_SERVICES, "", f"{version}.{group}")
        service = ((api or {}).get("spec") or {}).get("service")
        if not service:
            return None
        namespace, name = service.get("namespace", ""), service.get("name", "")
        svc = self._store.get(SERVICES, namespace, name)
        spec = (svc or {}).get("spec") or {}
        if spec.get("type") != "ExternalName" or not spec.get("externalName"):
            raise ApiError(
                503,
                "ServiceUnavailable",
                f"service {namespace}/{name} is not reachable: the embedded API server "
                "aggregates only through Services of type ExternalName",
            )
        port = int(service.get("port") or 443)
        assert api is not None
        return Backend(
            f"https://{spec['externalName']}:{port}", _tls(api["spec"]), f"{name}.{namespace}.svc"
        )

    async def forward(self, request: web.Request, backend: Backend) -> web.Response:
        headers = {h: request.headers[h] for h in _FORWARDED if h in request.headers}
        body = await request.read()
        url = backend.url + request.path_qs
        try:
            async with (
                aiohttp.ClientSession(timeout=TIMEOUT) as session,
                session.request(
                    request.method,
                    url,
                    data=body or None,
                    headers=headers,
                    ssl=backend.tls,
                    server_hostname=backend.server_name if backend.tls is not False else None,
                ) as answer,
            ):
                raw = await answer.read()
                kind = answer.headers.get("Content-Type", "application/json")
                return web.Response(body=raw, status=answer.status, headers={"Content-Type": kind})
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            message = f"error trying to reach service: {exc}"
            raise ApiError(503, "ServiceUnavailable", message) from exc

    async def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """The backend's APIResourceList; None when it does not answer (the group is then
        listed without resources, as the real aggregator marks it stale)."""
        try:
            backend = self.backend(group, version)
        except ApiError:
            return None
        if backend is None:
            return None
        try:
            async with (
                aiohttp.ClientSession(timeout=TIMEOUT) as session,
                session.get(
                    f"{backend.url}/apis/{group}/{version}",
                    ssl=backend.tls,
                    server_hostname=backend.server_name if backend.tls is not False else None,
                ) as answer,
            ):
                if answer.status != 200:
                    return None
                found: dict[str, Any] = await answer.json(content_type=None)
                return found
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError):
            return None


def _tls(spec: dict[str, Any]) -> ssl.SSLContext | bool:
    if spec.get("insecureSkipTLSVerify"):
        return False
    return client_context(str(spec.get("caBundle") or ""))


def legacy_group(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def aggregated_group(group: str, lists: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """One ``APIGroupDiscovery`` from each version's APIResourceList (None: stale)."""
    versions = []
    for version, listing in lists.items():
        entry: dict[str, Any] = {"version": version, "freshness": "Current", "resources": []}
        if listing is None:
            entry["freshness"] = "Stale"
        else:
            entry["resources"] = _aggregated_resources(listing)
        versions.append(entry)
    return {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}


def _aggregated_resources(listing: dict[str, Any]) -> list[dict[str, Any]]:
    """Legacy entries (``plural`` and ``plural/sub``) folded into resources with subresources."""
    gv = listing.get("groupVersion", "")
    group, _, version = gv.rpartition("/")
    out: dict[str, dict[str, Any]] = {}
    entries = listing.get("resources") or []
    for entry in entries:
        name = entry["name"]
        if "/" in name:
            continue
        out[name] = {
            "resource": name,
            "responseKind": {"group": group, "version": version, "kind": entry.get("kind", "")},
            "scope": "Namespaced" if entry.get("namespaced") else "Cluster",
            "singularResource": entry.get("singularName", ""),
            "verbs": entry.get("verbs") or [],
        }
    for entry in entries:
        parent, _, sub = entry["name"].partition("/")
        if sub and parent in out:
            out[parent].setdefault("subresources", []).append(
                {
                    "subresource": sub,
                    "responseKind": {"group": group, "version": version, "kind": entry["kind"]},
                    "verbs": entry.get("verbs") or [],
                }
            )
    return list(out.values())
