"""Who is calling: the front proxy's word, as an aggregated API server takes it.

The API server authenticates and authorizes a request before its aggregator forwards it, and
proves it is the one forwarding with a client certificate signed by its request-header CA,
naming the user in headers (``X-Remote-User``, ``X-Remote-Group``). The CA, the allowed
certificate names and the header names are what the API server publishes in the ConfigMap
``kube-system/extension-apiserver-authentication``. Nothing else may call: a caller without
that certificate could name any user in the headers.
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource

# Defined here, not in kq.runtime.resources: only this one ConfigMap is read, through the
# RoleBinding deploy/visibility.yaml makes to the built-in reader Role in kube-system.
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
AUTH_CONFIG_MAP = ("kube-system", "extension-apiserver-authentication")


@dataclass(frozen=True)
class FrontProxy:
    """The request-header settings of the API server."""

    ca_pem: str
    allowed_names: tuple[str, ...]
    """Certificate common names that may forward; empty means any the CA signed."""
    user_headers: tuple[str, ...]
    group_headers: tuple[str, ...]


def _names(data: dict[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = data.get(key)
    if not raw:
        return default
    parsed = json.loads(raw)
    return tuple(str(v) for v in parsed) if isinstance(parsed, list) else default


async def load_front_proxy(client: KubeClient) -> FrontProxy | None:
    """The published settings; None when the API server publishes none (the embedded one has
    no front proxy). Other errors (no permission to read, say) propagate."""
    namespace, name = AUTH_CONFIG_MAP
    try:
        config_map = await client.get(CONFIG_MAPS, name, namespace)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise
    data = config_map.get("data") or {}
    ca = data.get("requestheader-client-ca-file")
    if not ca:
        return None
    return FrontProxy(
        ca_pem=ca,
        allowed_names=_names(data, "requestheader-allowed-names", ()),
        user_headers=_names(data, "requestheader-username-headers", ("X-Remote-User",)),
        group_headers=_names(data, "requestheader-group-headers", ("X-Remote-Group",)),
    )


def trust_front_proxy(context: ssl.SSLContext, proxy: FrontProxy) -> None:
    """Ask every caller for a certificate and check it against the request-header CA; a
    caller without one still connects, and ``caller`` refuses it."""
    context.load_verify_locations(cadata=proxy.ca_pem)
    context.verify_mode = ssl.CERT_OPTIONAL


@dataclass(frozen=True)
class Caller:
    user: str
    groups: tuple[str, ...]


def caller(proxy: FrontProxy, peer_cert: dict[str, Any] | None, headers: Any) -> Caller | str:
    """The user the front proxy vouches for, or why the request is refused."""
    if not peer_cert:
        return "no client certificate signed by the request-header CA"
    names = [
        value for rdn in peer_cert.get("subject", ()) for key, value in rdn if key == "commonName"
    ]
    if proxy.allowed_names and not set(names) & set(proxy.allowed_names):
        return f"client certificate {names} is not among the allowed front proxies"
    user = next((headers[h] for h in proxy.user_headers if headers.get(h)), "")
    if not user:
        return "the front proxy named no user"
    groups = tuple(g for h in proxy.group_headers for g in headers.getall(h, ()))
    return Caller(user, groups)
