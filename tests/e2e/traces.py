"""Leave the shared real API server as a test found it: every object it created, deleted.

A bare kube-apiserver has no namespace controller and no garbage collector, and the test's
``kq dev`` (kq, and the simulated kubelets that finish a pod's deletion) has stopped by then, so
this does their part: it deletes each new object at once (pods with no grace period), clears
the finalizers left on it, and finalizes new namespaces once they are empty.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kq.runtime.client import MERGE_PATCH, KubeClient
from kq.runtime.errors import ApiError
from tests.harness import Cluster, wait_until

Key = tuple[str, str, str]  # (resource, namespace, name); resource as kubectl names it
Obj = dict[str, Any]
_SERVER_KEPT = ("apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io")
"""Groups the server maintains itself: it would create a deleted object again."""
_REMOVE_TIMEOUT_S = 60.0
_PARALLEL = 16


class _Kubectl:
    def __init__(self, cluster: Cluster, cache: Path) -> None:
        self.cluster = cluster
        self.cache = cache

    def __call__(self, *args: str, input: str | None = None) -> str:
        done = self.cluster.kubectl(*args, input=input, cache_dir=self.cache)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout


@dataclass(frozen=True)
class _Kinds:
    """Every kind that can be listed and deleted: kubectl's name for it by (group, kind), and
    its collection's path by that name (with ``{ns}`` for a namespaced kind's namespace)."""

    names: dict[tuple[str, str], str]
    paths: dict[str, str]

    def path(self, key: Key) -> str:
        resource, namespace, name = key
        return f"{self.paths[resource].format(ns=namespace)}/{name}"


def _kinds(kubectl: _Kubectl) -> _Kinds:
    names, paths = {}, {}
    for line in kubectl("api-resources", "--verbs=list,delete", "--no-headers").splitlines():
        words = line.split()
        plural, api_version, namespaced, kind = words[0], words[-3], words[-2], words[-1]
        group = api_version.rpartition("/")[0]
        if group in _SERVER_KEPT:
            continue
        name = names[(group, kind)] = f"{plural}.{group}" if group else plural
        prefix = f"/apis/{api_version}" if group else f"/api/{api_version}"
        scope = "/namespaces/{ns}" if namespaced == "true" else ""
        paths[name] = f"{prefix}{scope}/{plural}"
    return _Kinds(names, paths)


def _listing(kubectl: _Kubectl, kinds: _Kinds) -> dict[Key, Obj]:
    found = {}
    listed = kubectl("get", ",".join(sorted(set(kinds.names.values()))), "-A", "-o", "json")
    for item in json.loads(listed)["items"]:
        name = kinds.names.get((str(item["apiVersion"]).rpartition("/")[0], item["kind"]))
        if name is not None:
            meta = item["metadata"]
            found[(name, str(meta.get("namespace", "")), str(meta["name"]))] = item
    return found


async def _quietly(call: Awaitable[object], limit: asyncio.Semaphore) -> None:
    async with limit:
        try:
            await call
        except ApiError as exc:
            if not exc.not_found:
                raise


async def _remove(kubectl: _Kubectl, kinds: _Kinds, keys: set[Key]) -> None:
    """Over HTTP, many at a time: kubectl deletes one object per request, a few a second."""
    namespaces = sorted(name for resource, _, name in keys if resource == "namespaces")
    limit = asyncio.Semaphore(_PARALLEL)
    now = [("gracePeriodSeconds", "0")]  # no kubelet is left to confirm a pod's end
    async with await KubeClient.connect(kubectl.cluster.kubeconfig) as client:
        # A new namespace is emptied kind by kind, as the namespace controller does.
        paths = {kinds.paths[r].format(ns=n) for r, n, _ in keys if n in namespaces}
        paths |= {kinds.path(k) for k in keys if k[0] != "namespaces" and k[1] not in namespaces}
        await asyncio.gather(*(_quietly(client.request("DELETE", p, query=now), limit)
                               for p in sorted(paths)))  # fmt: skip
        # Whoever would remove the finalizers left (kq, the simulated collector) has stopped.
        unfinal = {"metadata": {"finalizers": None}}
        held = [k for k, item in _listing(kubectl, kinds).items()
                if k in keys and item["metadata"].get("finalizers")]  # fmt: skip
        await asyncio.gather(*(_quietly(client.request("PATCH", kinds.path(k), body=unfinal,
                                                       content_type=MERGE_PATCH), limit)
                               for k in held))  # fmt: skip
        for name in namespaces:
            await _quietly(_finalize(client, name), limit)


async def _finalize(client: KubeClient, name: str) -> None:
    """Delete a namespace and, where no namespace controller does it, take it out of
    Terminating; a server that has one may have removed it already (404)."""
    await client.request("DELETE", f"/api/v1/namespaces/{name}")
    namespace = await client.request("GET", f"/api/v1/namespaces/{name}")
    namespace["spec"]["finalizers"] = []  # what the namespace controller does once it is empty
    await client.request("PUT", f"/api/v1/namespaces/{name}/finalize", body=namespace)


@contextmanager
def no_trace(cluster: Cluster, cache: Path) -> Iterator[None]:
    """Until the block ends; then every object made meanwhile is removed and waited for."""
    kubectl = _Kubectl(cluster, cache)
    before = set(_listing(kubectl, _kinds(kubectl)))
    try:
        yield
    finally:
        # Kinds the block added (CRDs installed) are listed too, then go with their CRD.
        kinds = _kinds(kubectl)
        asyncio.run(_remove(kubectl, kinds, set(_listing(kubectl, kinds)) - before))
        wait_until(
            lambda: not (set(_listing(kubectl, _kinds(kubectl))) - before),
            "the objects the test created to be gone",
            within=_REMOVE_TIMEOUT_S,
        )
