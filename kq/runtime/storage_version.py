"""kq's client edge of the v1beta2 storage version: kq's model stays v1beta1-shaped, its
requests for the kueue.x-k8s.io kinds whose versions differ go out in v1beta2.

v1beta2 is what the API server stores (``kq.crds.kueue_v1beta2``). Were kq to read and write
v1beta1, a real API server would call the conversion webhook for every object kq lists, watches
and writes: a TLS round trip per request on kq's hottest paths. Instead kq asks for v1beta2 and
converts here, in process, with the same functions the webhook runs (``kq.crds.conversion``),
so what kq sees and stores is what the server's conversion would have given it.

* Reads (get, list, watch events): the v1beta2 answer converted to v1beta1.
* Whole-object writes (create, update): the body converted to v1beta2, the answer back.
* Merge and apply patches, which are partial: converted field by field when that conversion
  is exact, which ``patch_in_v1beta2`` checks by converting back; a patch that is not (one
  that sets only one of ``priorityClassName``/``priorityClassSource``, or a field v1beta2
  does not have) goes out in v1beta1 as before, through the server's conversion.
"""

from __future__ import annotations

from typing import Any

from kq.crds.conversion import V1BETA1, V1BETA2, ConversionError, convert, kinds, lossless

Object = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

_V1BETA1_PREFIX = f"/apis/{V1BETA1}/"
_V1BETA2_PREFIX = f"/apis/{V1BETA2}/"
# The kinds whose v1beta1 and v1beta2 differ in more than apiVersion (the CRDs that call the
# conversion webhook); the others are rewritten by the API server itself at no cost.
_KIND_OF_PLURAL = {
    "admissionchecks": "AdmissionCheck",
    "clusterqueues": "ClusterQueue",
    "cohorts": "Cohort",
    "localqueues": "LocalQueue",
    "workloads": "Workload",
}


def converted_kind(path: str) -> str | None:
    """The kind of a v1beta1 path of a converted resource (collection, object or
    subresource), else None."""
    if not path.startswith(_V1BETA1_PREFIX):
        return None
    parts = path[len(_V1BETA1_PREFIX) :].split("/")
    plural = parts[2] if parts[0] == "namespaces" and len(parts) > 2 else parts[0]
    return _KIND_OF_PLURAL.get(plural)


def v1beta2_path(path: str) -> str:
    """``path`` (a v1beta1 path) in v1beta2."""
    return _V1BETA2_PREFIX + path[len(_V1BETA1_PREFIX) :]


def body_in_v1beta2(kind: str, method: str, body: Object, content_type: str) -> Object | None:
    """``body`` for the v1beta2 path, or None where it must go out in v1beta1."""
    if method in ("POST", "PUT"):
        whole = {"kind": kind, "apiVersion": V1BETA1, **body}
        try:
            return convert(whole, V1BETA2) if whole["apiVersion"] == V1BETA1 else None
        except ConversionError:
            return None
    if content_type in (MERGE_PATCH, APPLY_PATCH):
        return patch_in_v1beta2(kind, body)
    return None


def patch_in_v1beta2(kind: str, patch: Object) -> Object | None:
    """A partial object (merge or apply patch) in v1beta2, if the field mapping carries every
    field it sets back unchanged; converting back may add defaults, which the patch never
    sent and so never changes."""
    if patch.get("apiVersion", V1BETA1) != V1BETA1:
        return None
    up, down = kinds.MAPPINGS[kind]
    fields = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
    converted = up(fields)
    if any(len(entry) == 2 for entry in lossless.differences(fields, down(converted))):
        return None
    if "apiVersion" in patch:
        converted = {"apiVersion": V1BETA2, "kind": kind, **converted}
    return converted


def to_model(obj: Object) -> Object:
    """A v1beta2 object of a converted kind, or a list of them, in v1beta1; anything else
    (a Status, another kind) as it came."""
    kind = obj.get("kind")
    if obj.get("apiVersion") != V1BETA2 or not isinstance(kind, str):
        return obj
    if kind.endswith("List") and kind[:-4] in _KIND_OF_PLURAL.values():
        item_kind = kind[:-4]
        items = [
            to_model({"kind": item_kind, "apiVersion": V1BETA2, **item})
            for item in obj.get("items") or ()
        ]
        return {**obj, "apiVersion": V1BETA1, "items": items}
    if kind in _KIND_OF_PLURAL.values():
        return convert(obj, V1BETA1)
    return obj


def route(
    method: str, path: str, body: Object | None, content_type: str
) -> tuple[str, Object | None, bool]:
    """(path, body, whether the answer is converted) of one request kq makes."""
    kind = converted_kind(path)
    if kind is None:
        return path, body, False
    if body is None:
        return v1beta2_path(path), None, True
    wired = body_in_v1beta2(kind, method, body, content_type)
    if wired is None:
        return path, body, False
    return v1beta2_path(path), wired, True
