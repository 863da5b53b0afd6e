"""Decoding of the protobuf bodies kubectl 1.32's ``create <generator>`` commands send.

Only the small envelope (``k8s\\0`` + ``runtime.Unknown``) and the fields those generators
set are decoded: ObjectMeta (name, generateName, namespace, labels, annotations) and the
top-level fields of Namespace, ConfigMap, Secret and PriorityClass, and the parts of a Job
that ``kubectl create job`` fills (template metadata, containers, restart policy).  Anything else is
reported as unsupported so that the server can answer 415.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a supported protobuf object."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _text(value: int | bytes) -> str:
    if isinstance(value, int):
        raise ProtobufError("expected a string")
    return value.decode()


def _bytes(value: int | bytes) -> bytes:
    if isinstance(value, int):
        raise ProtobufError("expected bytes")
    return value


def map_entry(value: int | bytes) -> tuple[str, bytes]:
    key, val = "", b""
    for number, item in fields(_bytes(value)):
        if number == 1:
            key = _text(item)
        elif number == 2:
            val = _bytes(item)
    return key, val


def metadata(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace"}
    for number, value in fields(data):
        if number in names:
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            key, val = map_entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = val.decode()
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _resources(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in fields(data):
        if number in (1, 2):
            key, quantity = map_entry(value)
            amount = next((_text(v) for n, v in fields(quantity) if n == 1), "")
            out.setdefault("limits" if number == 1 else "requests", {})[key] = amount
    return out


_CONTAINER_TEXT = {1: "name", 2: "image", 5: "workingDir", 13: "terminationMessagePath",
                   14: "imagePullPolicy", 20: "terminationMessagePolicy"}  # fmt: skip


def _container(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in fields(data):
        if number in _CONTAINER_TEXT:
            out[_CONTAINER_TEXT[number]] = _text(value)
        elif number in (3, 4):
            out.setdefault("command" if number == 3 else "args", []).append(_text(value))
        elif number == 8:
            out["resources"] = _resources(_bytes(value))
    return out


def _pod_spec(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in fields(data):
        if number == 2:
            out.setdefault("containers", []).append(_container(_bytes(value)))
        elif number == 3:
            out["restartPolicy"] = _text(value)
    return out


def _job_spec(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ints = {1: "parallelism", 2: "completions", 7: "backoffLimit"}
    for number, value in fields(data):
        if number in ints and isinstance(value, int):
            out[ints[number]] = value
        elif number == 6:
            template: dict[str, Any] = {}
            for n, v in fields(_bytes(value)):
                if n == 1:
                    template["metadata"] = metadata(_bytes(v))
                elif n == 2:
                    template["spec"] = _pod_spec(_bytes(v))
            out["template"] = template
    return out


_Value = int | bytes
_Setter = Callable[[dict[str, Any], _Value], None]


def _entry_into(key: str, encode: Callable[[bytes], str]) -> _Setter:
    """A map field: each occurrence is one entry of ``obj[key]``, its value ``encode``d."""

    def put(obj: dict[str, Any], value: _Value) -> None:
        name, raw = map_entry(value)
        obj.setdefault(key, {})[name] = encode(raw)

    return put


def _scalar(key: str, convert: Callable[[_Value], Any], *, varint: bool = False) -> _Setter:
    """A single field; a ``varint`` one that arrives with another wire type is skipped."""

    def put(obj: dict[str, Any], value: _Value) -> None:
        if not varint or isinstance(value, int):
            obj[key] = convert(value)

    return put


def _int32(value: _Value) -> int:
    # The varint read as an unsigned 32-bit number: from 2**31 up, it is a negative int32.
    number = int(value)
    return number - (1 << 32) if number >= 1 << 31 else number


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# (kind, field number) -> how the field goes into the object; field 1 is metadata in every kind.
_FIELDS: dict[tuple[str, int], _Setter] = {
    ("Job", 2): _scalar("spec", lambda v: _job_spec(_bytes(v))),
    ("ConfigMap", 2): _entry_into("data", bytes.decode),
    ("ConfigMap", 3): _entry_into("binaryData", _b64),
    ("ConfigMap", 4): _scalar("immutable", bool, varint=True),
    ("ConfigMap", 5): _scalar("immutable", bool, varint=True),
    ("Secret", 2): _entry_into("data", _b64),
    ("Secret", 3): _scalar("type", _text),
    ("Secret", 4): _scalar("immutable", bool, varint=True),
    ("Secret", 5): _scalar("immutable", bool, varint=True),
    ("PriorityClass", 2): _scalar("value", _int32, varint=True),
    ("PriorityClass", 3): _scalar("globalDefault", bool, varint=True),
    ("PriorityClass", 4): _scalar("description", _text),
    ("PriorityClass", 5): _scalar("preemptionPolicy", _text),
}
_METADATA = _scalar("metadata", lambda v: metadata(_bytes(v)))


def _body(kind: str, raw: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in fields(raw):
        put = _METADATA if number == 1 else _FIELDS.get((kind, number))
        if put is not None:
            put(obj, value)
    return obj


SUPPORTED = frozenset({"Namespace", "ConfigMap", "Secret", "PriorityClass", "Job"})


def envelope(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw object) of a ``k8s\\0`` + ``runtime.Unknown`` body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    api_version = kind = ""
    raw = b""
    for number, value in fields(body[len(MAGIC) :]):
        if number == 1:
            for n, v in fields(_bytes(value)):
                if n == 1:
                    api_version = _text(v)
                elif n == 2:
                    kind = _text(v)
        elif number == 2:
            raw = _bytes(value)
    return api_version, kind, raw


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object of a supported kind."""
    api_version, kind, raw = envelope(body)
    if kind not in SUPPORTED:
        raise ProtobufError(f"protobuf bodies of kind {kind!r} are not supported")
    return {"apiVersion": api_version, "kind": kind, **_body(kind, raw)}
