"""Test helpers: the structural-schema rules kube-apiserver enforces on CRDs, checked node by
node, and what applying an object through the embedded API server's schema code would change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kq.sandbox.apiserver.schema import Schema as ServerSchema

Schema = dict[str, Any]

TYPES = {"object", "array", "string", "integer", "number", "boolean"}
# Keys allowed inside anyOf/allOf/oneOf/not branches of a structural schema (value validations).
VALUE_VALIDATION_KEYS = {
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "format",
    "type",
}


def _children(schema: Schema, path: str) -> Iterator[tuple[str, Schema]]:
    for name, child in schema.get("properties", {}).items():
        yield f"{path}.{name}", child
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        yield f"{path}{{}}", additional
    if "items" in schema:
        yield f"{path}[]", schema["items"]


def structural_errors(schema: Schema, path: str = "") -> list[str]:
    """Violations of the structural-schema rules (plus list-map key rules) under `schema`."""
    errors: list[str] = []
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    kind = schema.get("type")
    if kind is None and not (int_or_string or preserve):
        errors.append(f"{path or '<root>'}: no type")
    if kind is not None and kind not in TYPES:
        errors.append(f"{path}: unknown type {kind!r}")
    if int_or_string:
        if kind is not None:
            errors.append(f"{path}: int-or-string must not set type")
        if schema.get("anyOf") not in (None, [{"type": "integer"}, {"type": "string"}]):
            errors.append(f"{path}: int-or-string anyOf must be integer|string")
    elif "anyOf" in schema:
        errors.append(f"{path}: anyOf outside int-or-string")
    for key in ("allOf", "oneOf", "not"):
        if key in schema:
            errors.append(f"{path}: {key} is not used by kq schemas")
    for branch in schema.get("anyOf", []):
        extra = set(branch) - VALUE_VALIDATION_KEYS
        if extra:
            errors.append(f"{path}: anyOf branch has non-validation keys {sorted(extra)}")
    if "properties" in schema and isinstance(schema.get("additionalProperties"), dict):
        errors.append(f"{path}: properties and additionalProperties are exclusive")
    if ("properties" in schema or "additionalProperties" in schema) and kind != "object":
        errors.append(f"{path}: properties on a non-object")
    if "items" in schema and kind != "array":
        errors.append(f"{path}: items on a non-array")
    if kind == "array" and "items" not in schema:
        errors.append(f"{path}: array without items")
    missing_required = set(schema.get("required", [])) - set(schema.get("properties", {}))
    if missing_required:
        errors.append(f"{path}: required fields not declared: {sorted(missing_required)}")
    if "enum" in schema:
        plain = ServerSchema({k: v for k, v in schema.items() if k not in ("enum", "default")})
        for value in schema["enum"]:
            errors.extend(f"{path}: enum value {e}" for e in plain.validate(value))
    if "default" in schema:
        errors.extend(
            f"{path}: default {e}" for e in ServerSchema(schema).validate(schema["default"])
        )
    errors.extend(_list_type_errors(schema, path))
    for child_path, child in _children(schema, path):
        errors.extend(structural_errors(child, child_path))
    return errors


def _list_type_errors(schema: Schema, path: str) -> list[str]:
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys")
    if list_type is None:
        return [f"{path}: list-map keys without list-type map"] if keys else []
    if schema.get("type") != "array":
        return [f"{path}: list-type on a non-array"]
    items = schema["items"]
    if list_type == "set" and items.get("type") == "object":
        return [f"{path}: list-type set needs scalar items"]
    if list_type != "map":
        return []
    if not keys:
        return [f"{path}: list-type map without keys"]
    errors = []
    for key in keys:
        field = items.get("properties", {}).get(key)
        if field is None:
            errors.append(f"{path}: map key {key} is not a property")
        elif key not in items.get("required", []) and "default" not in field:
            errors.append(f"{path}: map key {key} must be required or defaulted")
    return errors


@dataclass(frozen=True)
class Applied:
    """An object after defaulting and pruning, the fields pruning dropped and what fails."""

    obj: Any
    pruned: list[str]
    errors: list[str]


def apply(obj: Any, openapi_v3_schema: Schema) -> Applied:
    """Default, prune and validate `obj` the way the API server does on create."""
    schema = ServerSchema.from_openapi(openapi_v3_schema)
    pruned, dropped = schema.prune(schema.default(obj))
    return Applied(pruned, dropped, [str(e) for e in schema.validate(pruned)])
