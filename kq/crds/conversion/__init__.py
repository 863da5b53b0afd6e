"""Conversion of kueue.x-k8s.io objects between v1beta1 and v1beta2, losing nothing.

``convert(obj, "kueue.x-k8s.io/v1beta2")`` is what the embedded API server runs between served
versions and what ``kq run``'s conversion webhook answers: a pure function of the object.
and what kq's own client runs at its edge (``kq.runtime.storage_version``), since the server
stores v1beta2 and kq's model is v1beta1-shaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.crds.conversion import kinds, lossless

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"
VERSIONS = (V1BETA1, V1BETA2)
ANNOTATION = lossless.ANNOTATION

Obj = dict[str, Any]


class ConversionError(ValueError):
    """An object kq cannot convert: not a kueue.x-k8s.io kind, or an unknown version."""


def convertible(group: str, kind: str) -> bool:
    """Whether ``convert`` handles this kind."""
    return group == GROUP and kind in kinds.MAPPINGS


def convert(obj: Mapping[str, Any], api_version: str) -> Obj:
    """``obj`` (never mutated) in ``api_version``; an object in that version already comes
    back as a shallow copy."""
    source = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    mappings = kinds.MAPPINGS.get(kind)
    if mappings is None or source not in VERSIONS or api_version not in VERSIONS:
        what = kind or "an object"
        raise ConversionError(f"kq cannot convert {what} from {source!r} to {api_version!r}")
    if source == api_version:
        return dict(obj)
    forward, backward = mappings if source == V1BETA1 else mappings[::-1]
    stripped, record_version, entries = lossless.take_record(dict(obj))
    defaulted = kinds.V1BETA1_DEFAULTS.get(kind) if source == V1BETA1 else None
    if defaulted is not None:
        stripped = defaulted(stripped)
    converted = {**forward(stripped), "apiVersion": api_version}
    if record_version == api_version:
        # Put back only what a client of this version cannot have changed since.
        converted = lossless.restore(converted, entries, backward)
    back = {**backward(converted), "apiVersion": source}
    lost = lossless.differences(stripped, back)
    if lost:
        converted = lossless.with_record(converted, source, lost)
    return converted
