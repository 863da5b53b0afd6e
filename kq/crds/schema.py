"""A small DSL for structural OpenAPI v3 schemas and the CustomResourceDefinitions that carry them.

Every builder returns a plain dict, so the result is exactly what goes into the CRD; every node
gets a `type` (or is int-or-string) so a real kube-apiserver accepts the schema as structural.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Schema = dict[str, Any]

# Kubernetes' resource.Quantity grammar, as the apiserver validates int-or-string quantities.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

ListType = Literal["atomic", "set", "map"]


def _common(schema: Schema, description: str | None, default: Any) -> Schema:
    if description is not None:
        schema["description"] = description
    if default is not None:
        schema["default"] = default
    return schema


def string(
    *,
    enum: Sequence[str] | None = None,
    default: str | None = None,
    pattern: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    fmt: str | None = None,
    description: str | None = None,
) -> Schema:
    """A string, optionally an enum, pattern-checked or length-bounded."""
    schema: Schema = {"type": "string"}
    if enum is not None:
        schema["enum"] = list(enum)
    if pattern is not None:
        schema["pattern"] = pattern
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if fmt is not None:
        schema["format"] = fmt
    return _common(schema, description, default)


def dns_subdomain(*, description: str | None = None, default: str | None = None) -> Schema:
    """An object name (RFC 1123 subdomain, at most 253 characters)."""
    return string(
        pattern=DNS_SUBDOMAIN_PATTERN, max_length=253, description=description, default=default
    )


def dns_label(*, description: str | None = None, default: str | None = None) -> Schema:
    """An RFC 1123 label (at most 63 characters), e.g. a podSet name."""
    return string(
        pattern=DNS_LABEL_PATTERN, max_length=63, description=description, default=default
    )


def date_time(*, description: str | None = None) -> Schema:
    """An RFC 3339 timestamp."""
    return string(fmt="date-time", description=description)


def integer(
    *,
    fmt: Literal["int32", "int64"] | None = "int32",
    minimum: int | None = None,
    default: int | None = None,
    description: str | None = None,
) -> Schema:
    """An integer, int32 unless told otherwise."""
    schema: Schema = {"type": "integer"}
    if fmt is not None:
        schema["format"] = fmt
    if minimum is not None:
        schema["minimum"] = minimum
    return _common(schema, description, default)


def number(*, description: str | None = None) -> Schema:
    """A floating-point number."""
    return _common({"type": "number"}, description, None)


def boolean(*, default: bool | None = None, description: str | None = None) -> Schema:
    """A boolean."""
    return _common({"type": "boolean"}, description, default)


def quantity(*, default: int | str | None = None, description: str | None = None) -> Schema:
    """A resource quantity: an integer or a string in Kubernetes' quantity grammar."""
    schema: Schema = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }
    return _common(schema, description, default)


def array(
    items: Schema,
    *,
    list_type: ListType | None = None,
    map_keys: Sequence[str] | None = None,
    min_items: int | None = None,
    max_items: int | None = None,
    description: str | None = None,
) -> Schema:
    """A list; `map_keys` makes it a list-map (and implies list_type "map")."""
    schema: Schema = {"type": "array", "items": items}
    if map_keys is not None:
        if list_type not in (None, "map"):
            raise ValueError(f"map_keys need list_type 'map', not {list_type!r}")
        list_type = "map"
        schema["x-kubernetes-list-map-keys"] = list(map_keys)
    elif list_type == "map":
        raise ValueError("list_type 'map' needs map_keys")
    if list_type is not None:
        schema["x-kubernetes-list-type"] = list_type
    if min_items is not None:
        schema["minItems"] = min_items
    if max_items is not None:
        schema["maxItems"] = max_items
    return _common(schema, description, None)


def map_of(
    values: Schema,
    *,
    max_properties: int | None = None,
    atomic: bool = False,
    description: str | None = None,
) -> Schema:
    """An object with arbitrary keys whose values all follow `values`."""
    schema: Schema = {"type": "object", "additionalProperties": values}
    if max_properties is not None:
        schema["maxProperties"] = max_properties
    if atomic:
        schema["x-kubernetes-map-type"] = "atomic"
    return _common(schema, description, None)


def string_map(
    *, max_properties: int | None = None, atomic: bool = False, description: str | None = None
) -> Schema:
    """A string-to-string map (labels, node selectors, parameters)."""
    return map_of(string(), max_properties=max_properties, atomic=atomic, description=description)


def obj(
    properties: Mapping[str, Schema] | None = None,
    *,
    required: Sequence[str] = (),
    default: Mapping[str, Any] | None = None,
    preserve_unknown: bool = False,
    description: str | None = None,
) -> Schema:
    """An object with the given properties; `preserve_unknown` keeps undeclared fields."""
    schema: Schema = {"type": "object"}
    if properties:
        schema["properties"] = dict(properties)
    missing = [name for name in required if name not in (properties or {})]
    if missing:
        raise ValueError(f"required fields {missing} are not declared properties")
    if required:
        schema["required"] = list(required)
    if preserve_unknown:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return _common(schema, description, None if default is None else dict(default))


def preserve_unknown(*, description: str | None = None) -> Schema:
    """An object kept as given: any fields, not pruned, not validated further."""
    return obj(preserve_unknown=True, description=description)


@dataclass(frozen=True)
class PrinterColumn:
    """A `kubectl get` column: header, OpenAPI type, JSONPath and priority (1 = only -o wide)."""

    name: str
    type: str
    json_path: str
    description: str | None = None
    priority: int = 0

    def render(self) -> dict[str, Any]:
        """The additionalPrinterColumns entry."""
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description is not None:
            column["description"] = self.description
        if self.priority:
            column["priority"] = self.priority
        return column


AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True)
class Version:
    """One served version of a kind: its spec/status schemas and how kubectl prints it."""

    name: str
    spec: Schema | None
    status: Schema | None = None
    storage: bool = True
    printer_columns: Sequence[PrinterColumn] = ()
    required: Sequence[str] = ()
    top_level: Mapping[str, Schema] = field(default_factory=dict)

    def render(self) -> dict[str, Any]:
        """The `spec.versions[]` entry of the CRD."""
        properties: dict[str, Schema] = {
            "apiVersion": string(description="Versioned schema of this object."),
            "kind": string(description="REST resource this object represents."),
            "metadata": obj(),
        }
        properties.update(self.top_level)
        if self.spec is not None:
            properties["spec"] = self.spec
        if self.status is not None:
            properties["status"] = self.status
        version: dict[str, Any] = {
            "name": self.name,
            "served": True,
            "storage": self.storage,
            "schema": {"openAPIV3Schema": obj(properties, required=self.required)},
        }
        if self.status is not None:
            version["subresources"] = {"status": {}}
        if self.printer_columns:
            version["additionalPrinterColumns"] = [c.render() for c in self.printer_columns]
        return version


def crd(
    *,
    group: str,
    kind: str,
    plural: str,
    namespaced: bool,
    versions: Sequence[Version],
    short_names: Sequence[str] = (),
    categories: Sequence[str] = (),
) -> dict[str, Any]:
    """An apiextensions.k8s.io/v1 CustomResourceDefinition with exactly one storage version."""
    if sum(1 for v in versions if v.storage) != 1:
        raise ValueError(f"{kind}: exactly one version must be the storage version")
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    # Versions may share schema dicts; copying keeps one version's later edits from leaking.
    return copy.deepcopy(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {
                "group": group,
                "names": names,
                "scope": "Namespaced" if namespaced else "Cluster",
                "versions": [v.render() for v in versions],
            },
        }
    )
