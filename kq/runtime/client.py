"""One API client per process: timeouts, QPS/burst limiting, retries, dict bodies.

kubernetes_asyncio supplies configuration loading and authentication (token refresh included).
Bodies are dicts: ``json.loads`` of a body is an order of magnitude cheaper than the generated
models, and one path serves built-in kinds and CRDs alike. Calls go over kq's own keep-alive
connections (``kq.runtime.http``); watches, and everything behind a proxy, over
kubernetes_asyncio's aiohttp session.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
import structlog
import yarl
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from kq import __version__
from kq.runtime.backoff import Backoff
from kq.runtime.errors import ApiError, Fenced
from kq.runtime.http import connection_pool
from kq.runtime.ratelimit import TokenBucket
from kq.runtime.resources import Resource
from kq.runtime.storage_version import route, to_model
from kq.runtime.wire import PATH_SAFE, UNSAFE_IN_PATH, decode, encode, kind_key, watch_lines

log = structlog.get_logger("kq.runtime.client")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
FIELD_MANAGER = "kq"

T = TypeVar("T")
Query = Sequence[tuple[str, str]]
Object = dict[str, Any]


@dataclass(frozen=True)
class ClientSettings:
    """Limits per API kind, as controller-runtime gives each kind its own client-go limiter.

    Kueue's defaults are 50/100 in its perf test and 300/500 otherwise.
    """

    qps: float = 300.0
    burst: int = 500
    request_timeout: float = 30.0
    max_attempts: int = 5
    user_agent: str = f"kq/{__version__}"


async def load_configuration(kubeconfig: Path | None) -> k8s_client.Configuration:
    """A fresh Configuration from a kubeconfig file, or the pod's service account."""
    configuration = k8s_client.Configuration()
    if kubeconfig is not None:
        await k8s_config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
    else:
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return configuration


class KubeClient:
    """Requests to one API server; build it inside the running loop with ``connect``."""

    def __init__(self, api: k8s_client.ApiClient, settings: ClientSettings) -> None:
        api.user_agent = settings.user_agent
        _read_environment_once(api)
        self._api = api
        self.settings = settings
        self._limiters: dict[str, TokenBucket] = {}
        self.requests: Counter[tuple[str, str]] = Counter()
        """Requests sent, by (method, kind key as ``kind_key``): what benchmarks report."""
        self._pool, self._base_path = connection_pool(api)
        self._guard: Callable[[], bool] | None = None

    @classmethod
    async def connect(
        cls, kubeconfig: Path | None, settings: ClientSettings | None = None
    ) -> KubeClient:
        configuration = await load_configuration(kubeconfig)
        return cls(k8s_client.ApiClient(configuration), settings or ClientSettings())

    def fenced(self, guard: Callable[[], bool]) -> KubeClient:
        """This client (its connections, limits and counts) for work that may write only while
        ``guard()`` holds. It is asked right before each write goes out, every retry included:
        a write decided under a lease must not be sent once the lease may be someone else's.
        A refused write raises ``Fenced``; reads and watches are not guarded. Close the
        original, not this view."""
        view = copy.copy(self)
        view._guard = guard
        return view

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        await self._api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # -- transport ----------------------------------------------------------------------

    async def _send(
        self,
        method: str,
        path: str,
        query: Query,
        body: Object | None,
        content_type: str,
        limits: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Over aiohttp: watches, and calls when a proxy is configured."""
        await self._take_token(method, path)
        api = self._api
        rest = api.rest_client
        headers, params = await self._headers(content_type, query)
        self._check_guard(method, path)
        url = f"{api.configuration.host}{path}"
        if params:
            url += "?" + urlencode(params)
        options: dict[str, Any] = {"timeout": limits, "headers": headers}
        if body is not None:
            options["data"] = encode(body)
        if rest.proxy:
            options["proxy"] = rest.proxy
            options["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            options["server_hostname"] = rest.server_hostname
        try:
            response: aiohttp.ClientResponse = await rest.pool_manager.request(
                method, url, **options
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, f"{method} {path}: {exc!r}") from exc
        return response

    async def _take_token(self, method: str, path: str) -> None:
        kind = kind_key(path)
        limiter = self._limiters.get(kind)
        if limiter is None:
            limiter = self._limiters[kind] = TokenBucket(self.settings.qps, self.settings.burst)
        await limiter.acquire()
        self.requests[method, kind] += 1

    def _check_guard(self, method: str, path: str) -> None:
        if self._guard is not None and method != "GET" and not self._guard():
            raise Fenced(method, path)

    async def _headers(self, content_type: str, query: Query) -> tuple[dict[str, str], Query]:
        """Headers (auth refreshed as its configuration says) and query for one request."""
        api = self._api
        headers = {**api.default_headers, "Accept": JSON, "Content-Type": content_type}
        params = list(query)
        await api.update_params_for_auth(headers, params, ["BearerToken"])
        return headers, params

    async def _call(
        self, method: str, path: str, query: Query, body: Object | None, content_type: str
    ) -> tuple[int, dict[str, str], bytes]:
        """One exchange: status, lower-cased headers and the raw body."""
        pool = self._pool
        if pool is None:
            timeout = aiohttp.ClientTimeout(total=self.settings.request_timeout)
            response = await self._send(method, path, query, body, content_type, timeout)
            async with response:
                try:
                    raw = await response.read()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise ApiError(0, f"{method} {path}: {exc!r}") from exc
                headers = {k.lower(): v for k, v in response.headers.items()}
                return response.status, headers, raw
        await self._take_token(method, path)
        headers, params = await self._headers(content_type, query)
        self._check_guard(method, path)  # after the waits above, just before it goes out
        target = self._base_path + path
        if UNSAFE_IN_PATH(target):
            target = quote(target, safe=PATH_SAFE)
        if params:
            target += "?" + urlencode(params)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {pool.host_header}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        try:
            async with asyncio.timeout(self.settings.request_timeout):
                answer = await pool.request(head, None if body is None else encode(body), method)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ApiError(0, f"{method} {path}: {exc!r}") from exc
        return answer.status, answer.headers, answer.body

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Object | None = None,
        content_type: str = JSON,
    ) -> Object:
        """One call with retries of 429, 5xx and broken connections; the body as a dict.
        Kueue's kinds go out in their storage version, v1beta2
        (``kq.runtime.storage_version``)."""
        path, body, converted = route(method, path, body, content_type)
        backoff = Backoff(initial=0.2, cap=10.0)
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                status, headers, raw = await self._call(method, path, query, body, content_type)
                answer = decode(status, headers, raw, method, path)
                return to_model(answer) if converted else answer
            except ApiError as exc:
                if not exc.retriable or attempt == self.settings.max_attempts:
                    raise
                delay = backoff.next(exc.retry_after)
                log.info("retrying", method=method, path=path, status=exc.status, delay=delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    @asynccontextmanager
    async def stream(self, path: str, query: Query) -> AsyncIterator[AsyncIterator[bytes]]:
        """An open watch: its lines, undecoded. No total timeout; the caller's watchdog rules."""
        timeout = aiohttp.ClientTimeout(sock_connect=10, sock_read=None)
        path = route("GET", path, None, JSON)[0]  # events convert in the informer
        response = await self._send("GET", path, query, None, JSON, timeout)
        async with response:
            if response.status >= 300:
                try:
                    raw = await response.read()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise ApiError(0, f"GET {path}: {exc!r}") from exc
                headers = {k.lower(): v for k, v in response.headers.items()}
                decode(response.status, headers, raw, "GET", path)
            yield watch_lines(response.content, path)

    # -- verbs --------------------------------------------------------------------------

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return await self.request("GET", resource.path(namespace, name))

    async def list(
        self, resource: Resource, *, namespace: str | None = None, query: Query = ()
    ) -> Object:
        """One LIST call (a page when ``query`` has ``limit``); see the informer for all pages."""
        return await self.request("GET", resource.path(namespace), query=query)

    async def create(self, resource: Resource, obj: Object) -> Object:
        namespace = obj.get("metadata", {}).get("namespace")
        return await self.request("POST", resource.path(namespace), body=obj)

    async def replace(self, resource: Resource, obj: Object, subresource: str = "") -> Object:
        meta = obj["metadata"]
        path = resource.path(meta.get("namespace"), meta["name"])
        return await self.request("PUT", _sub(path, subresource), body=obj)

    async def merge_patch(
        self,
        resource: Resource,
        name: str,
        patch: Object,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        subresource: str = "",
    ) -> Object:
        """JSON merge patch; with ``resource_version`` a stale view fails with 409."""
        if resource_version is not None:
            metadata = {**patch.get("metadata", {}), "resourceVersion": resource_version}
            patch = {**patch, "metadata": metadata}
        path = _sub(resource.path(namespace, name), subresource)
        return await self.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

    async def apply(
        self, resource: Resource, obj: Object, *, subresource: str = "", force: bool = False
    ) -> Object:
        """Server-side apply of the fields kq owns, as field manager ``kq``."""
        meta = obj["metadata"]
        path = _sub(resource.path(meta.get("namespace"), meta["name"]), subresource)
        query = [("fieldManager", FIELD_MANAGER)] + ([("force", "true")] if force else [])
        return await self.request("PATCH", path, query=query, body=obj, content_type=APPLY_PATCH)

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return await self.request("DELETE", resource.path(namespace, name))


async def retry_on_conflict(
    attempt: Callable[[], Awaitable[T]], *, attempts: int = 5, delay: float = 0.01
) -> T:
    """Re-run a read-modify-write while the server answers 409, as client-go's RetryOnConflict.

    ``attempt`` must re-read the object each time, or it fails the same way again.
    """
    backoff = Backoff(initial=delay, cap=1.0)
    for remaining in range(attempts - 1, -1, -1):
        try:
            return await attempt()
        except ApiError as exc:
            if not exc.conflict or remaining == 0:
                raise
            await asyncio.sleep(backoff.next())
    raise AssertionError("unreachable: the last attempt returns or raises")


def _read_environment_once(api: k8s_client.ApiClient) -> None:
    """Resolve the proxy from the environment now, not on every request.

    kubernetes_asyncio's session has ``trust_env=True``, so aiohttp looks up ``~/.netrc`` and
    the proxy variables in a worker thread for each request: two thread hops that cost more
    than a local API call. The server is fixed per client, so one lookup gives the same answer.
    """
    rest = api.rest_client
    host = api.configuration.host
    if not rest.proxy and host:
        with suppress(LookupError):
            proxy, auth = get_env_proxy_for_url(yarl.URL(host))
            rest.proxy = str(proxy)
            if auth is not None:
                rest.proxy_headers = {
                    **(rest.proxy_headers or {}),
                    "Proxy-Authorization": auth.encode(),
                }
    # No public switch exists after construction; aiohttp reads this flag per request.
    rest.pool_manager._trust_env = False


def _sub(path: str, subresource: str) -> str:
    return f"{path}/{subresource}" if subresource else path
