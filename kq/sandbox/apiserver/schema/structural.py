"""Why kube-apiserver would refuse a CRD's schema: the walk over the schema's nodes."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kq.sandbox.apiserver.schema.node import Schema
from kq.sandbox.apiserver.schema.node_checks import (
    _check_embedded,
    _check_extensions,
    _check_list_and_map_types,
    _check_object_meta,
    _check_shape,
    _check_type,
    _check_unsupported,
    _check_value_validation,
    _forbidden,
    _required,
)
from kq.sandbox.apiserver.schema.values import FieldError, _invalid
from kq.sandbox.apiserver.schema.walks import _prune

_JUNCTOR_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def structural_errors(
    openapi_v3_schema: Mapping[str, Any], path: str = "spec.validation.openAPIV3Schema"
) -> list[FieldError]:
    """Reasons the CRD schema is not structural or not allowed (empty when it is fine),
    sorted like upstream."""
    if not isinstance(openapi_v3_schema, Mapping):
        return [_required(path, "must be an object")]
    errs: list[FieldError] = []
    if openapi_v3_schema.get("nullable"):
        errs.append(_forbidden(f"{path}.nullable", "nullable cannot be true at the root"))
    _check_node(openapi_v3_schema, path, errs, level="root")
    if not errs:
        # Like upstream, defaults are only checked once the schema is structural.
        _check_defaults(openapi_v3_schema, path, errs, in_meta=False, resource=True)
    return sorted(errs, key=str)


def _check_defaults(
    s: Mapping[str, Any], path: str, errs: list[FieldError], *, in_meta: bool, resource: bool
) -> None:
    """Defaults must survive pruning and validate against their own schema (defaults
    inside resource metadata are left to the metadata rules)."""
    if "default" in s and not in_meta:
        node = Schema(s)
        value = s["default"]
        pruned = copy.deepcopy(value)
        _prune(pruned, node, "", [], root=node.embedded_resource)
        if pruned != value:
            errs.append(_invalid(f"{path}.default", value, "must not have unknown fields"))
        for err in node.validate(value):
            where = f"{path}.default" if err.field == "<nil>" else f"{path}.default.{err.field}"
            errs.append(FieldError(where, err.reason, err.message))
    resource = resource or bool(s.get("x-kubernetes-embedded-resource"))
    for k, prop in (s.get("properties") or {}).items():
        if isinstance(prop, Mapping):
            meta = in_meta or (resource and k == "metadata")
            _check_defaults(prop, f"{path}.properties[{k}]", errs, in_meta=meta, resource=False)
    children = (("items", s.get("items")), ("additionalProperties", s.get("additionalProperties")))
    for key, child in children:
        if isinstance(child, Mapping):
            _check_defaults(child, f"{path}.{key}", errs, in_meta=in_meta, resource=False)


def _check_children(
    s: Mapping[str, Any], path: str, errs: list[FieldError], in_meta: bool, check_meta: bool
) -> None:
    """Recurse into properties, items and additionalProperties."""
    for k, prop in (s.get("properties") or {}).items():
        if isinstance(prop, Mapping):
            child_meta = in_meta or (check_meta and k == "metadata")
            _check_node(prop, f"{path}.properties[{k}]", errs, "property", child_meta)
    items = s.get("items")
    if isinstance(items, Mapping):
        _check_node(items, f"{path}.items", errs, "items", in_meta)
    extra = s.get("additionalProperties")
    if isinstance(extra, Mapping):
        _check_node(extra, f"{path}.additionalProperties", errs, "property", in_meta)


def _check_junctors(s: Mapping[str, Any], path: str, errs: list[FieldError]) -> None:
    """allOf, anyOf, oneOf and not: value validation only, within the node's structure."""
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    # int-or-string may spell its two types as anyOf (optionally inside allOf[0]).
    skip_any_of = int_or_string and _is_int_or_string_any_of(s.get("anyOf"))
    for junctor in ("allOf", "anyOf", "oneOf"):
        if junctor == "anyOf" and skip_any_of:
            continue
        for i, sub in enumerate(s.get(junctor) or ()):
            if isinstance(sub, Mapping):
                skip = (
                    junctor == "allOf"
                    and i == 0
                    and int_or_string
                    and _is_int_or_string_any_of(sub.get("anyOf"))
                )
                _check_junctor(
                    sub, f"{path}.{junctor}[{i}]", errs, skip_any_of=skip, cel=junctor == "allOf"
                )
                _check_completeness(s, sub, path, f"{path}.{junctor}[{i}]", errs)
    if isinstance(s.get("not"), Mapping):
        _check_junctor(s["not"], f"{path}.not", errs)
        _check_completeness(s, s["not"], path, f"{path}.not", errs)


def _check_node(
    s: Mapping[str, Any], path: str, errs: list[FieldError], level: str, in_meta: bool = False
) -> None:
    """One node of a structural schema, then its children; errors in kube-apiserver's order."""
    check_meta = level == "root" or bool(s.get("x-kubernetes-embedded-resource"))
    _check_shape(s, path, errs, level)
    _check_extensions(s, path, errs)
    _check_type(s, path, errs, level)
    _check_embedded(s, path, errs, in_meta)
    _check_object_meta(s, path, errs, check_meta, level == "root")
    _check_unsupported(s, path, errs)
    _check_value_validation(s, path, errs)
    _check_list_and_map_types(s, path, errs)
    _check_children(s, path, errs, in_meta, check_meta)
    _check_junctors(s, path, errs)


def _check_completeness(
    s: Mapping[str, Any], sub: Mapping[str, Any], path: str, sub_path: str, errs: list[FieldError]
) -> None:
    """Everything a junctor constrains must also be specified outside of it."""
    props: Mapping[str, Any] = s.get("properties") or {}
    for k, sub_prop in (sub.get("properties") or {}).items():
        if k not in props:
            errs.append(
                _required(
                    f"{path}.properties[{k}]",
                    f"because it is defined in {sub_path}.properties[{k}]",
                )
            )
        elif isinstance(sub_prop, Mapping) and isinstance(props[k], Mapping):
            _check_completeness(
                props[k], sub_prop, f"{path}.properties[{k}]", f"{sub_path}.properties[{k}]", errs
            )
    sub_items = sub.get("items")
    if isinstance(sub_items, Mapping):
        items = s.get("items")
        if not isinstance(items, Mapping):
            errs.append(_required(f"{path}.items", f"because it is defined in {sub_path}.items"))
        else:
            _check_completeness(items, sub_items, f"{path}.items", f"{sub_path}.items", errs)
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, nested in enumerate(sub.get(junctor) or ()):
            if isinstance(nested, Mapping):
                _check_completeness(s, nested, path, f"{sub_path}.{junctor}[{i}]", errs)
    if isinstance(sub.get("not"), Mapping):
        _check_completeness(s, sub["not"], path, f"{sub_path}.not", errs)


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and [dict(a) for a in any_of if isinstance(a, Mapping)] == [
        {"type": "integer"},
        {"type": "string"},
    ]


def _check_junctor(
    s: Mapping[str, Any],
    path: str,
    errs: list[FieldError],
    *,
    skip_any_of: bool = False,
    cel: bool = False,
) -> None:
    """Value validations only; CEL rules are allowed under allOf alone, as upstream."""
    for key, detail in _JUNCTOR_FORBIDDEN:
        value = s.get(key)
        if value not in (None, False, "", [], {}) and not (
            cel and key == "x-kubernetes-validations"
        ):
            errs.append(_forbidden(f"{path}.{key}", detail))
    if "metadata" in (s.get("properties") or {}):
        errs.append(
            _forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context")
        )
    _check_value_validation(s, path, errs)
    for k, prop in (s.get("properties") or {}).items():
        if isinstance(prop, Mapping):
            _check_junctor(prop, f"{path}.properties[{k}]", errs, cel=cel)
    if isinstance(s.get("items"), Mapping):
        _check_junctor(s["items"], f"{path}.items", errs, cel=cel)
    for junctor in ("allOf", "anyOf", "oneOf"):
        if junctor == "anyOf" and skip_any_of:
            continue
        for i, sub in enumerate(s.get(junctor) or ()):
            if isinstance(sub, Mapping):
                _check_junctor(sub, f"{path}.{junctor}[{i}]", errs, cel=cel and junctor == "allOf")
    if isinstance(s.get("not"), Mapping):
        _check_junctor(s["not"], f"{path}.not", errs)
