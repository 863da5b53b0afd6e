"""The registry's index of versions by storage follows CRDs registered and removed."""

from __future__ import annotations

from typing import Any

from kq.sandbox.apiserver.registry import Registry


def _crd(versions: list[str]) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "versions": [
                {"name": v, "served": True, "storage": v == versions[0], "schema": schema}
                for v in versions
            ],
        },
    }


def _versions(registry: Registry) -> list[str]:
    any_version = registry.get("example.com", "v1", "gadgets")
    if any_version is None:
        return []
    return sorted(rt.version for rt in registry.stored_as(any_version.storage))


def test_the_index_follows_crd_changes() -> None:
    registry = Registry()
    pods = registry.get("", "v1", "pods")
    assert pods is not None
    assert registry.stored_as(pods.storage) == [pods]
    registry.register_crd(_crd(["v1"]))
    assert _versions(registry) == ["v1"]
    registry.register_crd(_crd(["v1", "v2"]))
    assert _versions(registry) == ["v1", "v2"]
    storage = registry.get("example.com", "v1", "gadgets")
    assert storage is not None
    registry.unregister_crd("gadgets.example.com")
    assert registry.stored_as(storage.storage) == []
