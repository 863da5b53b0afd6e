"""The checks of one CRD schema node: shape, extensions, type, metadata, list and map types."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kq.sandbox.apiserver.schema.values import (
    FieldError,
    _invalid,
    compile_go_regex,
    format_value,
)

_UNSUPPORTED = (
    ("id", "id is not supported"),
    ("additionalItems", "additionalItems is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("$ref", "$ref is not supported"),
)
_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def _forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, "FieldValueForbidden", f"Forbidden: {detail}")


def _required(field: str, detail: str) -> FieldError:
    return FieldError(field, "FieldValueRequired", f"Required value: {detail}")


def _not_supported(field: str, value: Any, allowed: tuple[str, ...]) -> FieldError:
    listed = ", ".join(json.dumps(a) for a in allowed)
    return FieldError(
        field,
        "FieldValueNotSupported",
        f"Unsupported value: {format_value(value)}: supported values: {listed}",
    )


def _check_shape(s: Mapping[str, Any], path: str, errs: list[FieldError], level: str) -> None:
    """``items`` and ``additionalProperties``: where they are needed and where they clash."""
    extra = s.get("additionalProperties")
    if s.get("type") == "array" and s.get("items") is None:
        errs.append(_required(f"{path}.items", "must be specified"))
    if isinstance(s.get("items"), list):
        errs.append(_forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if extra is None:
        return
    if level == "root":
        errs.append(_forbidden(f"{path}.additionalProperties", "must not be used at the root"))
    if s.get("properties") and extra is not True:
        errs.append(
            _forbidden(
                f"{path}.additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if s.get("x-kubernetes-embedded-resource"):
        errs.append(
            _forbidden(
                f"{path}.additionalProperties",
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )


def _check_extensions(s: Mapping[str, Any], path: str, errs: list[FieldError]) -> None:
    """The ``x-kubernetes-*`` flags that exclude each other."""
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    if int_or_string and preserve:
        errs.append(
            _invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and s.get("x-kubernetes-embedded-resource"):
        errs.append(
            _invalid(
                f"{path}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if preserve is False:
        errs.append(
            _invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"
            )
        )


_EMPTY_TYPE_WHERE = {
    "root": "at the root",
    "items": "for specified array items",
    "property": "for specified object fields",
}


def _check_type(s: Mapping[str, Any], path: str, errs: list[FieldError], level: str) -> None:
    """``type``: needed unless int-or-string or preserved, object at the root and when
    embedded, one of the structural types."""
    t = s.get("type")
    int_or_string = s.get("x-kubernetes-int-or-string")
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    if s.get("x-kubernetes-embedded-resource") and t != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        errs.append(_invalid(f"{path}.type", t, detail) if t else _required(f"{path}.type", detail))
    elif not t and not int_or_string and not preserve:
        errs.append(_required(f"{path}.type", f"must not be empty {_EMPTY_TYPE_WHERE[level]}"))
    if level == "root" and t and t != "object":
        errs.append(_invalid(f"{path}.type", t, "must be object at the root"))
    if t == "null":
        errs.append(
            _forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative")
        )
    elif t and t not in _TYPES:
        errs.append(_not_supported(f"{path}.type", t, _TYPES))


def _check_embedded(s: Mapping[str, Any], path: str, errs: list[FieldError], in_meta: bool) -> None:
    """An embedded resource declares its fields and never sits inside another's metadata."""
    if not s.get("x-kubernetes-embedded-resource"):
        return
    if not s.get("x-kubernetes-preserve-unknown-fields") and not s.get("properties"):
        errs.append(
            _required(
                f"{path}.properties",
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    if in_meta:
        errs.append(
            _forbidden(
                f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"
            )
        )


def _check_object_meta(
    s: Mapping[str, Any], path: str, errs: list[FieldError], check_meta: bool, root: bool
) -> None:
    """``kind``, ``apiVersion`` and ``metadata`` of a resource (the root or an embedded one)."""
    props: Mapping[str, Any] = s.get("properties") or {}
    for key in ("kind", "apiVersion"):
        sub = props.get(key)
        if check_meta and isinstance(sub, Mapping) and sub.get("type") != "string":
            errs.append(
                _invalid(f"{path}.properties[{key}].type", sub.get("type", ""), "must be string")
            )
    meta = props.get("metadata")
    if isinstance(meta, Mapping):
        _check_metadata(meta, f"{path}.properties[metadata]", errs, check_meta, root)


def _check_unsupported(s: Mapping[str, Any], path: str, errs: list[FieldError]) -> None:
    """OpenAPI keywords structural schemas forbid."""
    if s.get("uniqueItems"):
        errs.append(
            _forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    for key, detail in _UNSUPPORTED:
        if s.get(key) not in (None, "", {}, []):
            errs.append(_forbidden(f"{path}.{key}", detail))


def _check_metadata(
    meta: Mapping[str, Any], path: str, errs: list[FieldError], check_type: bool, root: bool
) -> None:
    if check_type and meta.get("type") != "object":
        errs.append(_invalid(f"{path}.type", meta.get("type", ""), "must be object"))
    if not root:
        return
    names = set((meta.get("properties") or {}).keys())
    props_ok = "properties" not in meta or (names and names <= {"name", "generateName"})
    if set(meta) - {"type", "default", "properties"} or not props_ok:
        errs.append(
            _forbidden(
                path,
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified",
            )
        )


def _check_value_validation(s: Mapping[str, Any], path: str, errs: list[FieldError]) -> None:
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        try:
            compile_go_regex(pattern)
        except re.error as exc:
            errs.append(
                _invalid(
                    f"{path}.pattern",
                    pattern,
                    f"must be a valid regular expression, but isn't: {exc}",
                )
            )


def _check_list_and_map_types(s: Mapping[str, Any], path: str, errs: list[FieldError]) -> None:
    t = s.get("type")
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None:
        if t != "object":
            detail = "must be object if x-kubernetes-map-type is specified"
            errs.append(
                _invalid(f"{path}.type", t, detail) if t else _required(f"{path}.type", detail)
            )
        if map_type not in ("atomic", "granular"):
            errs.append(
                _not_supported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular"))
            )
    list_type = s.get("x-kubernetes-list-type")
    if list_type is not None:
        if t != "array":
            detail = "must be array if x-kubernetes-list-type is specified"
            errs.append(
                _invalid(f"{path}.type", t, detail) if t else _required(f"{path}.type", detail)
            )
        if list_type not in ("atomic", "set", "map"):
            errs.append(
                _not_supported(
                    f"{path}.x-kubernetes-list-type", list_type, ("atomic", "set", "map")
                )
            )
    keys = s.get("x-kubernetes-list-map-keys") or []
    if keys and list_type is None:
        errs.append(
            _required(
                f"{path}.x-kubernetes-list-type",
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )
        )
    elif keys and list_type != "map":
        errs.append(
            _invalid(
                f"{path}.x-kubernetes-list-type",
                list_type,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )
        )
    if list_type != "map":
        return
    if not keys:
        errs.append(
            _required(
                f"{path}.x-kubernetes-list-map-keys",
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    items = s.get("items")
    if not isinstance(items, Mapping):
        return
    if items.get("type") != "object":
        errs.append(
            _invalid(
                f"{path}.items.type",
                items.get("type", ""),
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
        return
    item_props = items.get("properties") or {}
    for i, key in enumerate(keys):
        prop = item_props.get(key)
        if not isinstance(prop, Mapping):
            errs.append(
                _invalid(
                    f"{path}.x-kubernetes-list-map-keys",
                    list(keys),
                    "entries must all be names of item properties",
                )
            )
        elif prop.get("type") in ("array", "object"):
            errs.append(
                _invalid(
                    f"{path}.items.properties[{key}].type",
                    "object",
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                )
            )
        if key in keys[:i]:
            errs.append(
                _invalid(
                    f"{path}.x-kubernetes-list-map-keys",
                    list(keys),
                    "must not contain duplicate entries",
                )
            )
