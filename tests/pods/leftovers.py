"""What a test of pods left running in its namespace, removed after it.

The session's API server, and the nodes on it, are shared by every test of the session; each
test's simulated cluster runs whatever it finds there. A Deployment, a set or a long pod left
behind keeps holding CPU on the flavor's pool after its test, so after enough of them the pool
has no room left for the next test's pods, which then stay Pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kq.runtime.errors import ApiError
from kq.runtime.resources import PODS, Resource
from kq.sandbox.cluster.podinfo import is_terminal, node_name_of
from tests.integrations_io.conftest import Stack, eventually


async def _delete_all(stack: Stack, resource: Resource) -> list[str]:
    """Delete every ``resource`` of the namespace; returns the names still there."""
    items = (await stack.client.list(resource, namespace=stack.ns)).get("items") or ()
    for item in items:
        path = resource.path(stack.ns, item["metadata"]["name"])
        try:
            # Background: a Job's default is to orphan its pods, through a finalizer that only
            # a garbage collector which knows it removes.
            await stack.client.request("DELETE", path, query=[("propagationPolicy", "Background")])
        except ApiError as error:
            if not error.not_found:
                raise
    return [item["metadata"]["name"] for item in items]


def _holds_room(pod: dict[str, Any]) -> bool:
    """Running on a node, or may still be bound to one: not terminal, and bound or not being
    deleted (a pod kept by a finalizer after its deletion is never scheduled)."""
    deleting = bool(pod["metadata"].get("deletionTimestamp"))
    return not is_terminal(pod) and (bool(node_name_of(pod)) or not deleting)


async def remove_leftovers(stack: Stack, owners: Sequence[Resource] = ()) -> None:
    """Delete ``owners`` (outermost first) and the pods of the test's namespace, while its
    simulated cluster and kq still run, until no pod there holds a node's resources."""
    for resource in owners:
        await _delete_all(stack, resource)

    async def released() -> None:
        for resource in owners:
            assert not await _delete_all(stack, resource), f"{resource.kind}s still there"
        await _delete_all(stack, PODS)
        live = [p["metadata"]["name"] for p in await stack.pods() if _holds_room(p)]
        assert not live, f"pods still holding resources: {live}"

    await eventually(released, f"the pods of {stack.ns} gone")
