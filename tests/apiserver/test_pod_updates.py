"""What a pod update may change: images, tolerations added, the deadline; nothing else."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.


def _pod(name: str) -> dict[str, Any]:
    containers = [{"name": "c", "image": "busybox"}]
    return {"metadata": {"name": name}, "spec": {"containers": containers}}


async def test_a_pod_update_may_change_images_but_not_the_rest_of_the_spec(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_pod(namespace, _pod("fixed"))  # type: ignore[arg-type]
    images = {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}],
                       "activeDeadlineSeconds": 60}}  # fmt: skip
    await v1.patch_namespaced_pod("fixed", namespace, images)
    pod = await v1.read_namespaced_pod("fixed", namespace)
    assert pod.spec.containers[0].image == "busybox:1.36"
    assert pod.spec.active_deadline_seconds == 60
    command = {"spec": {"containers": [{"name": "c", "command": ["sleep", "1"]}]}}
    with pytest.raises(ApiException) as info:
        await v1.patch_namespaced_pod("fixed", namespace, command)
    assert info.value.status == 422
    assert (await v1.read_namespaced_pod("fixed", namespace)).spec.containers[0].command is None
