"""The paths that describe the API rather than serve its objects: discovery documents
(legacy and aggregated, APIServices' groups among them), OpenAPI, and requests for an
APIService's group forwarded to its backend."""

from __future__ import annotations

from aiohttp import web

from kq.sandbox.apiserver import discovery, errors
from kq.sandbox.apiserver.aggregation import Aggregator, aggregated_group, legacy_group
from kq.sandbox.apiserver.registry import Registry
from kq.sandbox.apiserver.responses import respond

OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


async def aggregated(
    request: web.Request, parts: list[str], registry: Registry, aggregator: Aggregator
) -> web.Response | None:
    """A request for an APIService's group/version, forwarded; or ``/apis`` (and an
    aggregated group's own document) listing those groups too."""
    groups = aggregator.groups()
    if len(parts) >= 3 and parts[1] in groups:
        backend = aggregator.backend(parts[1], parts[2])
        if backend is not None:
            return await aggregator.forward(request, backend)
    if request.method != "GET" or not groups:
        return None
    if len(parts) == 2 and parts[1] in groups:
        doc = legacy_group(parts[1], groups[parts[1]])
        return respond({"kind": "APIGroup", "apiVersion": "v1", **doc})
    if parts != ["apis"]:
        return None
    if _aggregated_wanted(request):
        body = discovery.aggregated(registry, core=False)
        for group, versions in sorted(groups.items()):
            lists = {v: await aggregator.resource_list(group, v) for v in versions}
            body["items"].append(aggregated_group(group, lists))
        response = respond(body)
        response.content_type = discovery.AGGREGATED
        return response
    body = discovery.api_group_list(registry)
    body["groups"] += [legacy_group(g, vs) for g, vs in sorted(groups.items())]
    return respond(body)


def _aggregated_wanted(request: web.Request) -> bool:
    return "as=APIGroupDiscoveryList" in request.headers.get("Accept", "")


def discovery_document(
    request: web.Request, parts: list[str], registry: Registry, address: str
) -> web.StreamResponse | None:
    """A discovery document (legacy or aggregated, as the Accept header asks); None if the
    path names none."""
    if parts == ["api"] or parts == ["apis"]:
        if _aggregated_wanted(request):
            body = discovery.aggregated(registry, core=parts == ["api"])
            response = respond(body)
            response.content_type = discovery.AGGREGATED
            return response
        if parts == ["api"]:
            return respond(discovery.api_versions(address))
        return respond(discovery.api_group_list(registry))
    if parts[0] == "api" and len(parts) == 2:
        doc = discovery.resource_list(registry, "", parts[1])
        return respond(doc) if doc else None
    if parts[0] == "apis" and len(parts) == 2:
        group_doc = discovery.api_group(registry, parts[1])
        return respond(group_doc) if group_doc else None
    if parts[0] == "apis" and len(parts) == 3:
        doc = discovery.resource_list(registry, parts[1], parts[2])
        return respond(doc) if doc else None
    return None


def openapi(parts: list[str], registry: Registry) -> web.StreamResponse:
    if parts == ["v2"]:
        # An empty (all-defaults) protobuf Document: no client-side schemas, so kubectl
        # validates nothing itself and leaves it to fieldValidation on the server.
        return web.Response(body=b"", content_type=OPENAPI_V2_PROTOBUF)
    if parts == ["v3"]:
        return respond(discovery.openapi_v3_index(registry))
    if len(parts) >= 3 and parts[0] == "v3":
        if parts[1] == "api" and len(parts) == 3:
            doc = discovery.openapi_v3_doc(registry, "", parts[2])
        elif parts[1] == "apis" and len(parts) == 4:
            doc = discovery.openapi_v3_doc(registry, parts[2], parts[3])
        else:
            doc = None
        if doc is not None:
            return respond(doc)
    raise errors.no_route()
