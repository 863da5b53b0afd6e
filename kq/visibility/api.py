"""The routes of ``visibility.kueue.x-k8s.io``: discovery and the two pendingworkloads reads.

``queues`` gives the pending queues to read (the leader's, or a follower's own: see
``kq.controllers.visible``); ``raw`` the stored Workload of a key, for its owners and
creation time. Errors are ``metav1.Status`` objects as upstream's generic API server writes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kq import jsoncodec
from kq.queue.manager import QueueManager
from kq.scheduler.scheduler import Scheduler
from kq.visibility import summary
from kq.visibility.explain import explain
from kq.visibility.summary import GROUP, VERSIONS, BadRequest, RawLookup

QueueSource = Callable[[], QueueManager | None]
SchedulerSource = Callable[[], Scheduler | None]
"""The leading admission controller's scheduler, whose last decisions explain workloads."""
Gate = Callable[[web.Request], Awaitable[web.Response | None]]
"""Refuses a request with a response, or lets it through with None."""


def status(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> web.Response:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return _json(body, code)


def _json(body: Any, code: int = 200) -> web.Response:
    return web.Response(body=jsoncodec.dumps(body), status=code, content_type="application/json")


def not_found(kind: str, name: str) -> web.Response:
    """Upstream names the singular resource as the kind (``clusterqueue``, ``localqueue``)."""
    details = {"name": name, "group": GROUP, "kind": kind}
    return status(404, "NotFound", f'{kind}.{GROUP} "{name}" not found', details)


def _group() -> dict[str, Any]:
    listed = [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in VERSIONS]
    return {"name": GROUP, "versions": listed, "preferredVersion": listed[0]}


def resource_list(version: str) -> dict[str, Any]:
    """What upstream's server lists: each queue kind (no verbs of its own) and its
    ``pendingworkloads`` subresource, readable with ``get``."""
    resources = []
    for plural, singular, namespaced in (
        ("clusterqueues", "clusterqueue", False),
        ("localqueues", "localqueue", True),
    ):
        for name, verbs in ((plural, []), (f"{plural}/pendingworkloads", ["get"])):
            resources.append(
                {
                    "name": name,
                    "singularName": singular if name == plural else "",
                    "namespaced": namespaced,
                    "kind": "PendingWorkloadsSummary",
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{version}",
        "resources": resources,
    }


def build_app(
    queues: QueueSource,
    raw: RawLookup,
    gate: Gate | None = None,
    scheduler: SchedulerSource | None = None,
) -> web.Application:
    async def apis(_: web.Request) -> web.Response:
        return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]})

    async def group(_: web.Request) -> web.Response:
        return _json({"kind": "APIGroup", "apiVersion": "v1", **_group()})

    async def version(request: web.Request) -> web.Response:
        return _json(resource_list(request.match_info["version"]))

    async def cluster_queue(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        manager = queues()
        queue = None if manager is None else manager.queues.get(name)
        if queue is None:
            return not_found("clusterqueue", name)
        page = summary.parse_page(request.query)
        items = summary.cluster_queue_items(summary.in_order(queue), page, raw)
        return _json(summary.summary(request.match_info["version"], items))

    async def local_queue(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        manager = queues()
        lq = None if manager is None else manager.local_queues.get(f"{namespace}/{name}")
        if manager is None or lq is None:
            return not_found("localqueue", name)
        page = summary.parse_page(request.query)
        queue = manager.queues.get(lq.cluster_queue)
        pending = [] if queue is None else summary.in_order(queue)
        items = summary.local_queue_items(pending, namespace, name, page, raw)
        return _json(summary.summary(request.match_info["version"], items))

    async def explanation(request: web.Request) -> web.Response:
        """kq's own: why a workload waits (``kubectl kq explain workload``)."""
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        obj = raw(f"{namespace}/{name}")
        if obj is None:
            return not_found("workload", name)
        leader = None if scheduler is None else scheduler()
        if leader is None:
            return status(503, "ServiceUnavailable", "this replica does not lead: ask again")
        return _json(explain(leader, obj, time.time()))

    async def healthy(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(middlewares=[_errors(gate)])
    version_re = "{version:" + "|".join(VERSIONS) + "}"
    base = f"/apis/{GROUP}/{version_re}"
    app.router.add_get("/apis", apis)
    app.router.add_get(f"/apis/{GROUP}", group)
    app.router.add_get(base, version)
    app.router.add_get(base + "/clusterqueues/{name}/pendingworkloads", cluster_queue)
    app.router.add_get(
        base + "/namespaces/{namespace}/localqueues/{name}/pendingworkloads", local_queue
    )
    app.router.add_get(base + "/namespaces/{namespace}/workloads/{name}/explanation", explanation)
    for path in ("/healthz", "/readyz", "/livez"):
        app.router.add_get(path, healthy)
    return app


def _errors(gate: Gate | None) -> Any:
    """The gate first (probes excepted); bad query parameters and unknown paths as Status."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if gate is not None and request.path not in ("/healthz", "/readyz", "/livez"):
            refused = await gate(request)
            if refused is not None:
                return refused
        try:
            return await handler(request)
        except BadRequest as exc:
            return status(400, "BadRequest", str(exc))
        except web.HTTPNotFound:
            return status(404, "NotFound", "the server could not find the requested resource")
        except web.HTTPMethodNotAllowed:
            return status(405, "MethodNotAllowed", "the server does not allow this method")

    return middleware
