"""The ``Schema`` tree: one node per schema object, with what the walks need read once."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Mapping
from typing import Any

from kq.sandbox.apiserver.schema.validate import _validate
from kq.sandbox.apiserver.schema.values import _FORMATS, FieldError, compile_go_regex
from kq.sandbox.apiserver.schema.walks import _default, _prune

_NONE_TYPE: type = type(None)
# Python types whose every value a JSON type accepts; anything else (a float that is a whole
# number for ``integer``, a subclass) takes the exact path through ``_type_matches``.
_PY_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
}


class Schema:
    """One node of a structural schema (the root is the ``openAPIV3Schema``).

    Nodes are not changed once built: the walks rely on what each node precomputes.
    """

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.type: str | None = raw.get("type")
        self.nullable: bool = bool(raw.get("nullable", False))
        self.has_default = "default" in raw
        self.default_value: Any = raw.get("default")
        self.preserve_unknown: bool = bool(raw.get("x-kubernetes-preserve-unknown-fields"))
        self.embedded_resource: bool = bool(raw.get("x-kubernetes-embedded-resource"))
        self.int_or_string: bool = bool(raw.get("x-kubernetes-int-or-string"))
        self.list_type: str | None = raw.get("x-kubernetes-list-type")
        self.list_map_keys: tuple[str, ...] = tuple(raw.get("x-kubernetes-list-map-keys") or ())
        self.properties: dict[str, Schema] = {
            k: Schema(v) for k, v in (raw.get("properties") or {}).items()
        }
        items = raw.get("items")
        self.items: Schema | None = Schema(items) if isinstance(items, Mapping) else None
        extra = raw.get("additionalProperties")
        # ``additionalProperties: true`` accepts any value, like an empty preserving schema.
        self.additional: Schema | None = (
            Schema(extra)
            if isinstance(extra, Mapping)
            else Schema({"x-kubernetes-preserve-unknown-fields": True})
            if extra is True
            else None
        )
        self.all_of = tuple(Schema(s) for s in raw.get("allOf") or ())
        self.any_of = tuple(Schema(s) for s in raw.get("anyOf") or ())
        self.one_of = tuple(Schema(s) for s in raw.get("oneOf") or ())
        self.not_: Schema | None = (
            Schema(raw["not"]) if isinstance(raw.get("not"), Mapping) else None
        )
        pattern = raw.get("pattern")
        self.pattern: re.Pattern[str] | None = None
        if isinstance(pattern, str):
            try:
                self.pattern = compile_go_regex(pattern)
            except re.error:
                self.pattern = None
        children = [
            *self.properties.values(),
            *(c for c in (self.items, self.additional, self.not_) if c is not None),
            *self.all_of,
            *self.any_of,
            *self.one_of,
        ]
        #: ``x-kubernetes-validations`` rules in this subtree, skipped (no CEL evaluator).
        self.cel_rules: int = len(raw.get("x-kubernetes-validations") or ()) + sum(
            c.cel_rules for c in children
        )
        self._plan_validation()
        self._plan_walks()

    def _plan_validation(self) -> None:
        # What ``_validate`` needs from ``raw``, read once rather than per value.
        raw = self.raw
        fmt = raw.get("format")
        self._types = self.types
        self._type_ok = frozenset(
            t for name in self._types if isinstance(name, str) for t in _PY_TYPES.get(name, ())
        )
        self._enum: Any = raw.get("enum")
        self._junctors = bool(self.all_of or self.any_of or self.one_of or self.not_)
        self._format_check = _FORMATS.get(fmt) if isinstance(fmt, str) else None
        self._string_checks = (
            "maxLength" in raw
            or "minLength" in raw
            or self.pattern is not None
            or self._format_check is not None
        )
        self._number_checks = any(k in raw for k in ("maximum", "minimum", "multipleOf"))
        self._array_checks = "maxItems" in raw or "minItems" in raw or bool(raw.get("uniqueItems"))
        self._object_checks = (
            self.embedded_resource
            or bool(raw.get("required"))
            or "maxProperties" in raw
            or "minProperties" in raw
        )
        self._list_dups = self.list_type in ("set", "map")
        self._fast = _fast_types(self)
        self._plan_scalars()

    def _plan_scalars(self) -> None:
        # Bounds ``_scalar_passes`` tests a string or number against before any path is built.
        raw = self.raw
        enum = self._enum
        self._max_length: Any = raw.get("maxLength")
        self._min_length: Any = raw.get("minLength")
        self._enum_strings = (
            frozenset(e for e in enum if type(e) is str) if isinstance(enum, list) else None
        )
        self._maximum: Any = raw.get("maximum")
        self._minimum: Any = raw.get("minimum")
        self._exclusive_maximum = bool(raw.get("exclusiveMaximum"))
        self._exclusive_minimum = bool(raw.get("exclusiveMinimum"))
        self._quick = _quick_types(self)

    def _plan_walks(self) -> None:
        # Subtrees a walk cannot change are skipped whole; see the helpers for each walk.
        fields = [*self.properties.values(), *(c for c in (self.additional,) if c is not None)]
        nested = [*fields, *(c for c in (self.items,) if c is not None)]
        self._prop_defaults = tuple((k, p) for k, p in self.properties.items() if p.has_default)
        self._defaults_noop: bool = all(not c.has_default and c._defaults_noop for c in nested)
        self._default_noop: bool = (
            self._defaults_noop
            and all(c.nullable and c._default_noop for c in fields)
            and (self.items is None or self.items._default_noop)
        )
        self._skip_noop: bool = all(c._prune_noop for c in fields) and (
            self.items is None or self.items._skip_noop
        )
        self._prune_noop: bool = self.preserve_unknown and self._skip_noop

    @classmethod
    def from_openapi(cls, openapi_v3_schema: Mapping[str, Any]) -> Schema:
        """Schema of a CRD version from its ``schema.openAPIV3Schema``."""
        return cls(openapi_v3_schema)

    def child(self, key: str) -> Schema | None:
        """Schema of the map value at ``key`` (property, else additionalProperties)."""
        return self.properties.get(key, self.additional)

    @property
    def types(self) -> tuple[str, ...]:
        """Allowed JSON types; int-or-string without a type allows integer and string."""
        if self.type:
            return (self.type,)
        if self.int_or_string:
            return ("integer", "string")
        return ()

    # --- defaulting --------------------------------------------------------------

    def default(self, obj: Any) -> Any:
        """A copy of ``obj`` with schema defaults applied (see the module docstring)."""
        return self.default_in_place(copy.deepcopy(obj))

    def default_in_place(self, obj: Any, unchanged: Collection[str] = ()) -> Any:
        """``default`` on an object the caller owns: no copy. Top-level fields named in
        ``unchanged`` were defaulted when stored and are not walked again."""
        _default(obj, self, unchanged)
        return obj

    # --- pruning -----------------------------------------------------------------

    def prune(self, obj: Any) -> tuple[Any, list[str]]:
        """A copy of ``obj`` without unknown fields, and the sorted dropped paths."""
        return self.prune_in_place(copy.deepcopy(obj))

    def prune_in_place(self, obj: Any, unchanged: Collection[str] = ()) -> tuple[Any, list[str]]:
        """``prune`` on an object the caller owns: no copy; ``unchanged`` as for defaults."""
        dropped: list[str] = []
        _prune(obj, self, "", dropped, root=True, unchanged=unchanged)
        return obj, sorted(dropped)

    # --- validation --------------------------------------------------------------

    def validate(self, obj: Any, unchanged: Collection[str] = ()) -> list[FieldError]:
        """Schema violations of ``obj`` (CEL rules skipped).

        Top-level fields named in ``unchanged`` equal the stored object's and are not walked:
        upstream's validation ratcheting lets unchanged values pass anyway.
        """
        errs: list[FieldError] = []
        dups: list[FieldError] = []
        _validate(obj, self, "", errs, dups, unchanged)
        errs.extend(dups)
        return errs


def _fast_types(s: Schema) -> frozenset[type]:
    """Python types (exact) whose every value passes ``s`` without an error, list-type
    duplicates included: walks skip such values without building their paths."""
    fast: set[type] = set()
    # A null meets only the type and enum checks.
    if s.nullable or not (s._types or s._enum is not None):
        fast.add(_NONE_TYPE)
    if s._enum is not None:
        return frozenset(fast)
    checked = (
        (str, s._string_checks),
        (int, s._number_checks),
        (float, s._number_checks),
        (bool, False),
        (dict, s._object_checks or bool(s.properties) or s.additional is not None),
        (list, s._array_checks or s._list_dups or s.items is not None),
    )
    fast.update(t for t, has_checks in checked if not has_checks and _plain_for(s, t))
    return frozenset(fast)


def _plain_for(s: Schema, t: type) -> bool:
    """Values of type ``t`` pass the type check and junctors of ``s`` whatever they are."""
    return (
        (not s._types or t in s._type_ok)
        and not s.one_of
        and s.not_ is None
        and all(t in sub._fast for sub in s.all_of)
        and (not s.any_of or any(t in sub._fast for sub in s.any_of))
    )


def _quick_types(s: Schema) -> frozenset[type]:
    """Scalar types (exact) for which ``_scalar_passes`` tells whether ``s`` reports nothing."""
    bounds = (s._max_length, s._min_length, s._maximum, s._minimum)
    if any(b is not None and not isinstance(b, int | float) for b in bounds):
        return frozenset()
    quick: set[type] = set()
    if (s._enum is None or s._enum_strings is not None) and _plain_for(s, str):
        quick.add(str)
    if s._enum is None and "multipleOf" not in s.raw:
        quick.update(t for t in (int, float) if _plain_for(s, t))
    return frozenset(quick)
