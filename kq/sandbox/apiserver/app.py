"""The aiohttp application: routing, content negotiation, Status errors, watch streams."""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from kq.sandbox.apiserver import (
    aggregation,
    arguments,
    discovery,
    discovery_routes,
    errors,
    limits,
    lists,
    reviews,
    subresources,
)
from kq.sandbox.apiserver.access import Gate
from kq.sandbox.apiserver.api import Api
from kq.sandbox.apiserver.arguments import Target
from kq.sandbox.apiserver.authn import ADMIN, Authenticator, Signer
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.faults import Faults
from kq.sandbox.apiserver.patching import APPLY, PATCH_TYPES
from kq.sandbox.apiserver.rbac import Authorizer, User
from kq.sandbox.apiserver.registry import Registry, ResourceType
from kq.sandbox.apiserver.responses import JSON, dump, respond, respond_json
from kq.sandbox.apiserver.store import Obj, Store
from kq.sandbox.apiserver.stream import EncodingCache, WatchStream
from kq.sandbox.apiserver.tables import table
from kq.sandbox.apiserver.watch import Filter, Hub

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Settings:
    bookmark_interval: float = 15.0
    fault_injection: bool = False


class Server:
    """Request handling around one store, registry and watch hub."""

    def __init__(self, store: Store, registry: Registry, api: Api, hub: Hub) -> None:
        self.store = store
        self.registry = registry
        self.api = api
        self.hub = hub
        self.faults = Faults()
        self.settings = Settings()
        self._encoded = EncodingCache()
        self.address = "127.0.0.1:0"
        self.aggregator = aggregation.Aggregator(store)
        # ServiceAccount tokens are signed with this key; ``start`` keeps one per data directory.
        self.signer = Signer(secrets.token_bytes(32))
        self.authorizer = Authorizer(store)

    # --- entry point ---------------------------------------------------------------

    def application(self, token: str | None = None) -> web.Application:
        """The aiohttp app; ``token`` is the admin's (None: every caller is admin)."""
        authenticator = Authenticator(token, self.store, self.signer)
        gate = Gate(authenticator, self.authorizer)
        self.reviews = reviews.Reviews(self.store, authenticator, self.authorizer)
        app = web.Application(client_max_size=limits.MAX_BODY, middlewares=[self._middleware(gate)])
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def _middleware(self, gate: Gate) -> Any:
        @web.middleware
        async def middleware(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            try:
                user = gate.user(request.method, request.path, request.query, request.headers)
            except ApiError as exc:
                return respond(exc.status(), exc.code)
            request[arguments.USER] = user
            watch = request.query.get("watch", "") in arguments.TRUE
            if self.faults.applies(request.path, watch):
                if self.faults.delay:
                    await asyncio.sleep(self.faults.delay)
                if self.faults.should_fail():
                    code = self.faults.error_code
                    reason = "TooManyRequests" if code == 429 else "InternalError"
                    response = respond(ApiError(code, reason, "injected fault").status(), code)
                    if code == 429:
                        response.headers["Retry-After"] = "1"
                    return response
            answer = await handler(request)
            await self.store.flushed()  # a write is answered once it is committed
            return answer

        return middleware

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._route(request)
        except ApiError as exc:
            return respond(exc.status(), exc.code, exc.warnings)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("%s %s failed", request.method, request.path)
            error = ApiError(500, "InternalError", f"Internal error occurred: {exc!r}")
            return respond(error.status(), 500)

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if not parts:
            return respond({"paths": ["/api", "/apis", "/healthz", "/openapi/v3", "/version"]})
        head = parts[0]
        if head in ("healthz", "readyz", "livez") and len(parts) == 1:
            return web.Response(text="ok")
        if head == "version" and len(parts) == 1:
            return respond(discovery.VERSION)
        if head == "openapi":
            return discovery_routes.openapi(parts[1:], self.registry)
        if head == "kq" and self.settings.fault_injection:
            return await self._internal(request, parts[1:])
        if head in ("api", "apis"):
            answered = await self._reviews(request, parts)
            if answered is not None:
                return answered
        if head == "apis":
            aggregated = await discovery_routes.aggregated(
                request, parts, self.registry, self.aggregator
            )
            if aggregated is not None:
                return aggregated
        if head == "api" or head == "apis":
            return await self._api(request, parts)
        raise errors.no_route()

    # --- reviews and TokenRequest ------------------------------------------------------

    async def _reviews(self, request: web.Request, parts: list[str]) -> web.Response | None:
        review, token = reviews.review_path(parts), reviews.token_path(parts)
        if review is None and token is None:
            return None
        if request.method != "POST":
            raise errors.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        body = await arguments.read_body(request)
        if review is not None:
            user: User = request.get(arguments.USER, ADMIN)
            return respond(self.reviews.answer(review[1], review[2], body, user), 201)
        assert token is not None
        return respond(self.reviews.token(token[0], token[1], body), 201)

    # --- resources -----------------------------------------------------------------

    async def _api(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        if request.method == "GET":
            found = discovery_routes.discovery_document(request, parts, self.registry, self.address)
            if found is not None:
                return found
        target = self._target(parts)
        if target is None:
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2:3])
            versions = self.registry.group_versions().get(group, [])
            if isinstance(version, list):
                version = version[0] if version else ""
            if version not in versions:
                # Like upstream: paths outside every served group-version are plain 404s.
                return web.Response(status=404, text="404 page not found\n")
            raise errors.no_route()
        if target.sub not in ("", "status"):
            return await self._subresource(request, target)
        if target.name is None:
            return await self._collection(request, target)
        return await self._item(request, target)

    def _target(self, parts: list[str]) -> Target | None:
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            rt = self.registry.get(group, version, rest[2])
            if rt is not None and rt.namespaced:
                namespace, rest = rest[1], rest[2:]
        rt = self.registry.get(group, version, rest[0])
        if rt is None or len(rest) > 3:
            return None
        if rt.namespaced != (namespace is not None) and len(rest) > 1:
            return None
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else ""
        if sub and not subresources.allowed(rt, sub):
            return None
        return Target(rt, namespace, name, sub)

    def _respond_object(
        self, rt: ResourceType, obj: Obj, status: int = 200, warnings: list[str] | None = None
    ) -> web.Response:
        """``respond`` for a served object, reusing its committed JSON when it is stored."""
        body = self.store.encoded(rt.storage, obj)
        if body is None:
            return respond(obj, status, warnings)
        return respond_json(body.encode(), status, warnings)

    def _warnings(self, target: Target, ctx: Ctx) -> list[str]:
        extra = [target.rt.deprecation] if target.rt.deprecation else []
        return extra + ctx.warnings

    async def _warned(self, target: Target, ctx: Ctx, write: Awaitable[T]) -> T:
        """``write``'s result; when it fails, kube-apiserver still sends the warnings."""
        try:
            return await write
        except ApiError as exc:
            exc.warnings = self._warnings(target, ctx)
            raise

    async def _collection(self, request: web.Request, target: Target) -> web.StreamResponse:
        rt = target.rt
        method = request.method
        if method == "GET":
            flt = arguments.list_filter(request, target)
            limits.parse_int(request.query, "limit")  # checked for watches too, as upstream
            if arguments.parse_bool(request.query.get("watch"), "watch"):
                return await self._watch(request, target, flt)
            await arguments.reach_version(self.store, request)
            return self._list(request, target, flt)
        if method == "POST":
            if rt.namespaced and target.namespace is None:
                raise errors.method_not_allowed("the server does not allow this method")
            ctx = arguments.write_ctx(request)
            body = await arguments.read_body(request, rt.kind)
            obj = await self._warned(
                target, ctx, self.api.create(rt, target.namespace or "", body, ctx, owned=True)
            )
            return self._respond_object(rt, obj, 201, self._warnings(target, ctx))
        if method == "DELETE":
            flt = arguments.list_filter(request, target)
            ctx = arguments.write_ctx(request)
            options = await arguments.delete_options(request)
            items = await self.api.delete_collection(rt, flt, options, ctx)
            return respond(lists.list_body(rt, items, str(self.store.rv)))
        raise errors.method_not_allowed(f"method {method} not allowed on a collection")

    def _list(self, request: web.Request, target: Target, flt: Filter) -> web.StreamResponse:
        items = self.api.list_objects(target.rt, flt)
        items, rv, token = lists.page(request.query, items, str(self.store.rv))
        if arguments.wants_table(request):
            body = table(target.rt, items, rv, arguments.table_include(request), True, token)
            return respond(body)
        return respond(lists.list_body(target.rt, items, rv, token))

    async def _item(self, request: web.Request, target: Target) -> web.StreamResponse:
        rt, name = target.rt, target.name or ""
        ns = target.namespace or ""
        method = request.method
        if method == "GET":
            await arguments.reach_version(self.store, request)
            obj = self.api.get(rt, ns, name)
            if arguments.wants_table(request):
                return respond(
                    table(
                        rt,
                        [obj],
                        obj["metadata"]["resourceVersion"],
                        arguments.table_include(request),
                    )
                )
            return self._respond_object(rt, obj)
        ctx = arguments.write_ctx(request)
        ctx.subresource = target.sub
        if method == "PUT":
            body = await arguments.read_body(request, rt.kind)
            obj = await self._warned(
                target, ctx, self.api.update(rt, ns, name, body, ctx, target.sub, owned=True)
            )
            return self._respond_object(rt, obj, 200, self._warnings(target, ctx))
        if method == "PATCH":
            content_type = request.content_type
            if content_type not in PATCH_TYPES:
                raise ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})
            raw = await limits.read_body(request)
            arguments.check_patch_depth(raw, content_type, rt.kind)
            if content_type != APPLY and ctx.force:
                raise errors.bad_request("force may only be specified with apply patches")
            patched = self.api.patch(rt, ns, name, content_type, raw, ctx, target.sub)
            obj, created = await self._warned(target, ctx, patched)
            return self._respond_object(
                rt, obj, 201 if created else 200, self._warnings(target, ctx)
            )
        if method == "DELETE" and not target.sub:
            options = await arguments.delete_options(request)
            obj, gone = await self.api.delete(rt, ns, name, options, ctx)
            if gone and not rt.builtin:
                meta = obj["metadata"]
                return respond(errors.success(rt.group, rt.plural, name, meta.get("uid", "")))
            return self._respond_object(rt, obj)
        raise errors.method_not_allowed(f"method {method} not allowed")

    async def _subresource(self, request: web.Request, target: Target) -> web.StreamResponse:
        rt, ns, name = target.rt, target.namespace or "", target.name or ""
        ctx = arguments.write_ctx(request)
        ctx.subresource = target.sub
        if target.sub == "scale":
            if request.method == "GET":
                return respond(await subresources.scale(self.api, rt, ns, name, None, ctx))
            if request.method in ("PUT", "PATCH"):
                body = await arguments.read_body(request, "Scale", limits.JSON_TYPES + PATCH_TYPES)
                return respond(await subresources.scale(self.api, rt, ns, name, body, ctx))
        elif request.method == "POST":
            body = await arguments.read_body(request)
            verb = subresources.bind if target.sub == "binding" else subresources.evict
            return respond(await verb(self.api, rt, ns, name, body, ctx), 201)
        raise errors.method_not_allowed(f"method {request.method} not allowed on {target.sub}")

    # --- watch ---------------------------------------------------------------------

    async def _watch(self, request: web.Request, target: Target, flt: Filter) -> web.StreamResponse:
        query = request.query
        rv_text = query.get("resourceVersion", "")
        send_initial = arguments.parse_bool(query.get("sendInitialEvents"), "sendInitialEvents")
        bookmarks = arguments.parse_bool(query.get("allowWatchBookmarks"), "allowWatchBookmarks")
        requested = limits.parse_resource_version(rv_text)
        since = None if send_initial else requested
        timeout = float(limits.parse_int(query, "timeoutSeconds") or random.uniform(1800, 3600))
        wants_table = arguments.wants_table(request)
        include = arguments.table_include(request) if wants_table else "Object"
        rt = target.rt
        sub = self.hub.subscribe(rt.storage, flt, since)
        response = web.StreamResponse(headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            if sub is None:
                expired = errors.expired(
                    f"too old resource version: {since} ({self.store.floor + 1})"
                )
                await response.write(dump({"type": "ERROR", "object": expired.status()}) + b"\n")
                return response
            stream = WatchStream(
                response,
                sub,
                rt,
                lambda obj: self.api.convert(rt, obj),
                lambda: self.hub.published_rv,
                self._encoded,
                include if wants_table else None,
                bookmarks,
                self.settings.bookmark_interval,
            )
            if send_initial and bookmarks:
                await stream.initial_events_end()
            await stream.run(time.monotonic() + timeout)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            if sub is not None:
                self.hub.unsubscribe(sub)
        return response

    # --- kq internals (fault injection, compaction) ----------------------------------

    async def _internal(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        if parts == ["compact"] and request.method == "POST":
            keep = int(request.query.get("keep", "0"))
            return respond({"floor": self.store.compact(keep), "resourceVersion": self.store.rv})
        if parts == ["faults"] and request.method == "PUT":
            self.faults = Faults.from_json(await request.json())
            return respond(self.faults.to_json())
        if parts == ["faults"] and request.method == "GET":
            return respond(self.faults.to_json())
        if parts == ["drop-watches"] and request.method == "POST":
            return respond({"dropped": self.hub.close_all()})
        raise errors.no_route()
