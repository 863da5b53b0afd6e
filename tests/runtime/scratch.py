"""A namespace of its own for one test, on the test's backend, with a client to it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from kq.runtime.client import KubeClient
from kq.runtime.resources import NAMESPACES
from tests.harness import Cluster


@asynccontextmanager
async def namespace(cluster: Cluster, prefix: str) -> AsyncIterator[tuple[KubeClient, str]]:
    """A client and a fresh namespace ``PREFIX-xxxxxxxx``, deleted when the block ends."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        await client.create(NAMESPACES, {"metadata": {"name": name}})
        try:
            yield client, name
        finally:
            await client.delete(NAMESPACES, name)
