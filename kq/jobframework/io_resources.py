"""Which API resources the job controllers watch, and whether the API server serves a job kind.

``kq.runtime.resources`` has a static table of the kinds kq always needs; job kinds come from
plugins, so their plural and scope are found through discovery, which also tells whether the
CRD is installed at all.
"""

from __future__ import annotations

from kq.jobframework.interface import GroupVersionKind
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource


async def discover(client: KubeClient, gvk: GroupVersionKind) -> Resource | None:
    """The resource serving ``gvk``, or ``None`` when the group/version or kind is not served."""
    path = f"/apis/{gvk.group}/{gvk.version}" if gvk.group else f"/api/{gvk.version}"
    try:
        listing = await client.request("GET", path)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise
    for item in listing.get("resources") or ():
        plural = str(item.get("name", ""))
        # Subresources ("jobs/status") share the kind of their parent.
        if item.get("kind") == gvk.kind and "/" not in plural:
            return Resource(gvk.group, gvk.version, plural, gvk.kind, bool(item.get("namespaced")))
    return None
