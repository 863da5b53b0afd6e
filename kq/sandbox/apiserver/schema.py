"""Structural-schema handling of custom resources: defaulting, pruning and validation.

Contract:

* ``Schema.from_openapi(openAPIV3Schema)`` builds the schema of one CRD version.
* ``schema.default(obj)`` returns a new object with ``default:`` values applied like the
  apiextensions server: first nulls of non-nullable fields without a default are dropped,
  then missing fields (and nulls of non-nullable fields) get their default, recursively,
  inside ``items`` and ``additionalProperties`` too; a default such as ``{}`` is itself
  defaulted afterwards.
* ``schema.prune(obj)`` returns ``(new_obj, dropped_paths)``: fields absent from the
  schema are dropped unless under ``x-kubernetes-preserve-unknown-fields``; at the root
  and in ``x-kubernetes-embedded-resource`` objects ``apiVersion``/``kind``/``metadata``
  are kept and metadata is not pruned.  Paths read ``spec.foo`` / ``spec.items[0].bar``,
  sorted.
* ``schema.validate(obj)`` returns ``FieldError``s with the reasons and message bodies of
  the real server (kube-openapi errors converted by apiextensions); ``str(error)`` is
  ``"<field>: <message>"``.  ``x-kubernetes-validations`` (CEL) rules are **not**
  evaluated: ``schema.cel_rules`` counts how many were skipped.  Like upstream, numeric
  ``format``s (``int32``...) only type-check, string formats checked are ``date-time``,
  ``date``, ``uuid`` and ``byte``, embedded resources need ``apiVersion`` and ``kind``,
  and anyOf/oneOf/allOf/not summary errors carry the field ``<nil>``.  Patterns are Go
  (RE2) regexes, translated for Python's ``re`` by ``compile_go_regex``.
* ``structural_errors(openAPIV3Schema, path)`` returns why kube-apiserver would reject
  the CRD schema with 422 (not structural: missing types, junctors with types/defaults,
  incomplete junctors, metadata beyond name/generateName; or not allowed: ``uniqueItems``,
  ``$ref``, bad list/map types and list-map keys...), with fields under ``path`` (e.g.
  ``spec.versions[0].schema.openAPIV3Schema``), sorted like upstream.  Not checked:
  that defaults validate and survive pruning, and CEL compilation/cost.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REASONS",
    "FieldError",
    "Schema",
    "compile_go_regex",
    "format_value",
    "structural_errors",
]

REASONS = frozenset(
    {
        "FieldValueRequired",
        "FieldValueInvalid",
        "FieldValueNotSupported",
        "FieldValueTypeInvalid",
        "FieldValueDuplicate",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueForbidden",
    }
)


@dataclass(frozen=True)
class FieldError:
    """One validation failure; ``message`` is the body without the field name."""

    field: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _go_float(value: float) -> str:
    # Go's %v prints floats in shortest form with an exponent only from 1e21 on.
    if math.isinf(value) or math.isnan(value):
        return {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, "NaN")
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        text = f"{mantissa}e{sign}{digits}"
    return text


def format_value(value: Any) -> str:
    """A value as Go's field errors print it (``%q`` strings, ``%v`` scalars, else JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "FieldValueInvalid", f"Invalid value: {format_value(value)}: {detail}")


def _type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(
        field, "FieldValueTypeInvalid", f"Invalid value: {format_value(value)}: {detail}"
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_matches(value: Any, types: tuple[str, ...]) -> bool:
    actual = _json_type(value)
    if actual in types:
        return True
    if actual == "integer" and "number" in types:
        return True
    return actual == "number" and "integer" in types and float(value).is_integer()


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def _valid_byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# String formats checked; others (numeric ones included) only type-check, like upstream.
_FORMATS = {
    "date-time": lambda s: bool(_DATE_TIME.match(s)),
    "datetime": lambda s: bool(_DATE_TIME.match(s)),
    "date": lambda s: bool(_DATE.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "byte": _valid_byte,
}

_META_FIELDS = ("apiVersion", "kind", "metadata")

_GO_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def compile_go_regex(pattern: str) -> re.Pattern[str]:
    """Compile an RE2 (Go) pattern with Python's ``re``.

    RE2 allows flag groups such as ``(?i)`` anywhere, scoped to the enclosing group;
    Python wants them first, so each becomes a scoped group ``(?i:...)`` closed where its
    enclosing group closes.  ``\\z`` (end of text) becomes ``\\Z``.
    """
    out: list[str] = []
    pending = [0]  # scoped groups to close, per nesting level
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append("\\Z" if pattern[i + 1] == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                skip = 2 if pattern[i + 1] == "]" else 3
                out.append(pattern[i + 1 : i + skip])
                i += skip
                continue
        elif (m := _GO_FLAGS.match(pattern, i)) is not None:
            flags = m.group(1).replace("U", "")
            if flags:
                out.append(f"(?{flags}:")
                pending[-1] += 1
            i = m.end()
            continue
        elif c == "(":
            pending.append(0)
            out.append(c)
        elif c == ")" and len(pending) > 1:
            out.append(")" * pending.pop())
            out.append(c)
        else:
            out.append(c)
        i += 1
    out.append(")" * pending[0])
    return re.compile("".join(out))


_NONE_TYPE: type = type(None)
_CONTAINERS = (dict, list)
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


def _scalar_passes(x: str | float, s: Schema) -> bool:
    """Whether ``x``, of a type in ``s._quick``, meets every check of ``s``."""
    if isinstance(x, str):
        return (
            (s._max_length is None or len(x) <= s._max_length)
            and (s._min_length is None or len(x) >= s._min_length)
            and (s.pattern is None or s.pattern.search(x) is not None)
            and (s._format_check is None or s._format_check(x))
            and (s._enum_strings is None or x in s._enum_strings)
        )
    maximum, minimum = s._maximum, s._minimum
    return (maximum is None or (x < maximum if s._exclusive_maximum else x <= maximum)) and (
        minimum is None or (x > minimum if s._exclusive_minimum else x >= minimum)
    )


def _default(x: Any, s: Schema, unchanged: Collection[str] = ()) -> None:
    """Drop nulls of non-nullable fields without a default, then apply defaults.

    Upstream runs the two as whole-object passes; doing both per subtree gives the same
    result since subtrees are independent and inserted defaults are only defaulted.
    """
    if isinstance(x, dict):
        _default_object(x, s, unchanged)
    elif isinstance(x, list) and s.items is not None:
        items = s.items
        for i, item in enumerate(x):
            if item is None:
                if not items.nullable:
                    x[i] = copy.deepcopy(items.default_value)
                    _apply_defaults(x[i], items)
            elif not items._default_noop and isinstance(item, _CONTAINERS):
                _default(item, items)


def _default_object(x: dict[str, Any], s: Schema, unchanged: Collection[str]) -> None:
    props, extra = s.properties, s.additional
    nulls: list[str] = []
    for k, v in x.items():
        sub = props.get(k, extra)
        if sub is None or k in unchanged:
            continue
        if v is None:
            if not sub.nullable and not sub.has_default:
                nulls.append(k)
        elif not sub._default_noop and isinstance(v, _CONTAINERS):
            _default(v, sub)
    for k in nulls:
        del x[k]
    for k, prop in s._prop_defaults:
        if k not in x or (x[k] is None and not prop.nullable):
            x[k] = copy.deepcopy(prop.default_value)
            if k not in unchanged:
                _apply_defaults(x[k], prop)
    if extra is not None and extra.has_default and not extra.nullable:
        for k in [k for k, v in x.items() if v is None and k not in props]:
            if k not in unchanged:
                x[k] = copy.deepcopy(extra.default_value)
                _apply_defaults(x[k], extra)


def _apply_defaults(x: Any, s: Schema) -> None:
    """Defaults inside an inserted default value (its nulls are left alone)."""
    if s._defaults_noop:
        return
    if isinstance(x, dict):
        for k, prop in s._prop_defaults:
            if k not in x or _is_non_nullable_null(x[k], prop):
                x[k] = copy.deepcopy(prop.default_value)
        for k in x:
            if k in s.properties:
                _apply_defaults(x[k], s.properties[k])
            elif s.additional is not None:
                if _is_non_nullable_null(x[k], s.additional):
                    x[k] = copy.deepcopy(s.additional.default_value)
                _apply_defaults(x[k], s.additional)
    elif isinstance(x, list) and s.items is not None:
        for i, item in enumerate(x):
            if _is_non_nullable_null(item, s.items):
                x[i] = copy.deepcopy(s.items.default_value)
            _apply_defaults(x[i], s.items)


def _is_non_nullable_null(value: Any, s: Schema) -> bool:
    return value is None and not s.nullable


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(
    x: Any,
    s: Schema | None,
    path: str,
    dropped: list[str],
    *,
    root: bool = False,
    unchanged: Collection[str] = (),
) -> None:
    if s is not None and s.preserve_unknown:
        _skip_prune(x, s, path, dropped, root=root)
    elif isinstance(x, dict):
        if s is None:
            dropped.extend(_join(path, k) for k in x)
            x.clear()
        else:
            _prune_object(x, s, path, dropped, root or s.embedded_resource, unchanged)
    elif isinstance(x, list):
        items = s.items if s is not None else None
        if items is not None and items._prune_noop:
            return
        for i, item in enumerate(x):
            # Scalars have nothing to prune, whatever their schema.
            if isinstance(item, _CONTAINERS):
                _prune(item, items, f"{path}[{i}]", dropped)


def _prune_object(
    x: dict[str, Any],
    s: Schema,
    path: str,
    dropped: list[str],
    embedded: bool,
    unchanged: Collection[str],
) -> None:
    props, extra = s.properties, s.additional
    unknown: list[str] = []
    for k, v in x.items():
        if (embedded and k in _META_FIELDS) or k in unchanged:
            continue
        sub = props.get(k, extra)
        if sub is None:
            unknown.append(k)
        elif not sub._prune_noop and isinstance(v, _CONTAINERS):
            _prune(v, sub, _join(path, k), dropped)
    for k in unknown:
        dropped.append(_join(path, k))
        del x[k]


def _skip_prune(x: Any, s: Schema, path: str, dropped: list[str], *, root: bool) -> None:
    if isinstance(x, dict):
        embedded = root or s.embedded_resource
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                continue
            sub = s.child(k)
            if sub is not None and not sub._prune_noop and isinstance(v, _CONTAINERS):
                _prune(v, sub, _join(path, k), dropped)
    elif isinstance(x, list) and s.items is not None and not s.items._skip_noop:
        for i, item in enumerate(x):
            if isinstance(item, _CONTAINERS):
                _skip_prune(item, s.items, f"{path}[{i}]", dropped, root=False)


def _field(path: str) -> str:
    return path or "<nil>"


def _validate(
    x: Any,
    s: Schema,
    path: str,
    errs: list[FieldError],
    dups: list[FieldError] | None = None,
    unchanged: Collection[str] = (),
) -> None:
    """kube-openapi's order: type, junctors, string, format, number, array, enum, object.

    As upstream, a type mismatch does not stop the other checks; a null only meets the
    type and enum checks.  ``dups`` gets the ``set``/``map`` list duplicates, which
    apiextensions finds in a separate pass after the schema checks: that pass visits the
    same values in the same order (junctor branches aside, which get ``None``).
    """
    if x is None:
        if not s.nullable:
            if s._types:
                detail = f'{path} in body must be of type {",".join(s._types)}: "null"'
                errs.append(_type_invalid(_field(path), "null", detail))
            _validate_enum(x, s, path, errs)
        return
    if s._types and type(x) not in s._type_ok and not _type_matches(x, s._types):
        actual = _json_type(x)
        detail = f'{path} in body must be of type {",".join(s._types)}: "{actual}"'
        errs.append(_type_invalid(_field(path), actual, detail))
    if s._junctors:
        _validate_junctors(x, s, path, errs)
    if isinstance(x, str):
        if s._string_checks:
            _validate_string(x, s, path, errs)
    elif isinstance(x, int | float) and not isinstance(x, bool):
        if s._number_checks:
            _validate_number(x, s, path, errs)
    elif isinstance(x, list):
        _validate_array(x, s, path, errs, dups)
    if s._enum is not None:
        _validate_enum(x, s, path, errs)
    if isinstance(x, dict):
        _validate_object(x, s, path, errs, dups, unchanged)


def _validate_enum(x: Any, s: Schema, path: str, errs: list[FieldError]) -> None:
    enum = s._enum
    if enum is None or any(_equal(x, e) for e in enum):
        return
    allowed = [e if isinstance(e, str) else format_value(e) for e in enum]
    detail = "supported values: " + ", ".join(json.dumps(a) for a in allowed)
    errs.append(
        FieldError(
            _field(path),
            "FieldValueNotSupported",
            f"Unsupported value: {format_value(x)}: {detail}",
        )
    )


def _validate_string(x: str, s: Schema, path: str, errs: list[FieldError]) -> None:
    raw = s.raw
    # kube-openapi counts characters (runes), while the error message says bytes.
    if "maxLength" in raw and len(x) > raw["maxLength"]:
        unit = "byte" if raw["maxLength"] == 1 else "bytes"
        errs.append(
            FieldError(
                _field(path),
                "FieldValueTooLong",
                f"Too long: may not be more than {raw['maxLength']} {unit}",
            )
        )
    if "minLength" in raw and len(x) < raw["minLength"]:
        errs.append(
            _invalid(
                _field(path), x, f"{path} in body should be at least {raw['minLength']} chars long"
            )
        )
    if s.pattern is not None and not s.pattern.search(x):
        errs.append(_invalid(_field(path), x, f"{path} in body should match '{s.pattern.pattern}'"))
    fmt = raw.get("format")
    check = _FORMATS.get(fmt) if isinstance(fmt, str) else None
    if check is not None and not check(x):
        errs.append(
            _type_invalid(
                _field(path), x, f"{path} in body must be of type {fmt}: {format_value(x)}"
            )
        )


def _validate_number(x: float, s: Schema, path: str, errs: list[FieldError]) -> None:
    raw = s.raw
    if "maximum" in raw:
        limit = raw["maximum"]
        if raw.get("exclusiveMaximum") and x >= limit:
            errs.append(
                _invalid(
                    _field(path), x, f"{path} in body should be less than {format_value(limit)}"
                )
            )
        elif x > limit:
            errs.append(
                _invalid(
                    _field(path),
                    x,
                    f"{path} in body should be less than or equal to {format_value(limit)}",
                )
            )
    if "minimum" in raw:
        limit = raw["minimum"]
        if raw.get("exclusiveMinimum") and x <= limit:
            errs.append(
                _invalid(
                    _field(path), x, f"{path} in body should be greater than {format_value(limit)}"
                )
            )
        elif x < limit:
            errs.append(
                _invalid(
                    _field(path),
                    x,
                    f"{path} in body should be greater than or equal to {format_value(limit)}",
                )
            )
    factor = raw.get("multipleOf")
    if isinstance(factor, int | float) and factor > 0:
        quotient = x / factor
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            errs.append(
                _invalid(
                    _field(path),
                    x,
                    f"{path} in body should be a multiple of {format_value(factor)}",
                )
            )


def _validate_array(
    x: list[Any], s: Schema, path: str, errs: list[FieldError], dups: list[FieldError] | None
) -> None:
    if s._array_checks:
        _validate_array_bounds(x, s, path, errs)
    if dups is not None and s._list_dups:
        _validate_list_type(x, s, path, dups)
    items = s.items
    if items is not None:
        for i, item in enumerate(x):
            t = type(item)
            if t in items._fast or (t in items._quick and _scalar_passes(item, items)):
                continue
            _validate(item, items, f"{path}[{i}]", errs, dups)


def _validate_array_bounds(x: list[Any], s: Schema, path: str, errs: list[FieldError]) -> None:
    raw = s.raw
    if "maxItems" in raw and len(x) > raw["maxItems"]:
        unit = "item" if raw["maxItems"] == 1 else "items"
        errs.append(
            FieldError(
                _field(path),
                "FieldValueTooMany",
                f"Too many: {len(x)}: must have at most {raw['maxItems']} {unit}",
            )
        )
    if "minItems" in raw and len(x) < raw["minItems"]:
        errs.append(
            _invalid(
                _field(path), x, f"{path} in body should have at least {raw['minItems']} items"
            )
        )
    if raw.get("uniqueItems") and any(_equal(a, b) for i, a in enumerate(x) for b in x[i + 1 :]):
        errs.append(_invalid(_field(path), x, f"{path} in body shouldn't contain duplicates"))


def _validate_list_type(x: list[Any], s: Schema, path: str, errs: list[FieldError]) -> None:
    seen: list[Any] = []
    for i, item in enumerate(x):
        if s.list_type == "set":
            key: Any = item
        elif s.list_type == "map" and isinstance(item, dict):
            key = {k: item[k] for k in s.list_map_keys if k in item}
        else:
            continue
        if any(_equal(key, other) for other in seen):
            errs.append(
                FieldError(
                    f"{path}[{i}]", "FieldValueDuplicate", f"Duplicate value: {format_value(key)}"
                )
            )
        else:
            seen.append(key)


_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_GROUP_VERSION = re.compile(r"^([^/]+/)?[^/]+$")


def _validate_embedded(x: dict[str, Any], path: str, errs: list[FieldError]) -> None:
    """apiVersion and kind of an ``x-kubernetes-embedded-resource`` object."""
    for key in ("apiVersion", "kind"):
        if key not in x:
            errs.append(FieldError(_join(path, key), "FieldValueRequired", "Required value"))
            continue
        value, field = x[key], _join(path, key)
        if not isinstance(value, str):
            errs.append(_invalid(field, value, "must be a string"))
        elif not value:
            errs.append(_invalid(field, value, "must not be empty"))
        elif key == "apiVersion" and not _GROUP_VERSION.match(value):
            errs.append(_invalid(field, value, f"unexpected GroupVersion string: {value}"))
        elif key == "kind" and (len(value) > 63 or not _DNS1035.match(value.lower())):
            errs.append(
                _invalid(
                    field,
                    value,
                    "may have mixed case, but should otherwise match: a DNS-1035 label must "
                    "consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character",
                )
            )


def _validate_object(
    x: dict[str, Any],
    s: Schema,
    path: str,
    errs: list[FieldError],
    dups: list[FieldError] | None,
    unchanged: Collection[str],
) -> None:
    if s._object_checks:
        _validate_object_bounds(x, s, path, errs)
    props, extra = s.properties, s.additional
    if not props and extra is None:
        return
    for k, v in x.items():
        sub = props.get(k, extra)
        if sub is None or k in unchanged:
            continue
        # Most values are settled by their type, or a scalar check, without a path built.
        t = type(v)
        if t in sub._fast or (t in sub._quick and _scalar_passes(v, sub)):
            continue
        _validate(v, sub, _join(path, k), errs, dups)


def _validate_object_bounds(
    x: dict[str, Any], s: Schema, path: str, errs: list[FieldError]
) -> None:
    raw = s.raw
    if s.embedded_resource:
        _validate_embedded(x, path, errs)
    for req in raw.get("required") or ():
        if req not in x:
            errs.append(FieldError(_join(path, req), "FieldValueRequired", "Required value"))
    if "maxProperties" in raw and len(x) > raw["maxProperties"]:
        unit = "item" if raw["maxProperties"] == 1 else "items"
        errs.append(
            FieldError(
                _field(path),
                "FieldValueTooMany",
                f"Too many: {len(x)}: must have at most {raw['maxProperties']} {unit}",
            )
        )
    if "minProperties" in raw and len(x) < raw["minProperties"]:
        errs.append(
            _invalid(
                _field(path),
                x,
                f"{path} in body should have at least {raw['minProperties']} properties",
            )
        )


def _branch_errors(x: Any, sub: Schema, path: str) -> list[FieldError]:
    """Errors of ``x`` against one junctor branch."""
    errs: list[FieldError] = []
    if type(x) not in sub._fast:
        _validate(x, sub, path, errs)
    return errs


def _validate_junctors(x: Any, s: Schema, path: str, errs: list[FieldError]) -> None:
    if s.all_of:
        failed = 0
        for sub in s.all_of:
            sub_errs = _branch_errors(x, sub, path)
            errs.extend(sub_errs)
            failed += bool(sub_errs)
        if failed:
            suffix = ". None validated" if failed == len(s.all_of) else ""
            errs.append(
                _invalid(
                    "<nil>", "", f"{json.dumps(path)} must validate all the schemas (allOf){suffix}"
                )
            )
    if s.any_of:
        _validate_any_of(x, s.any_of, path, errs)
    if s.one_of:
        _validate_one_of(x, s.one_of, path, errs)
    if s.not_ is not None and not _branch_errors(x, s.not_, path):
        errs.append(_invalid("<nil>", "", f"{json.dumps(path)} must not validate the schema (not)"))


def _validate_any_of(x: Any, any_of: tuple[Schema, ...], path: str, errs: list[FieldError]) -> None:
    # One valid branch settles it and the others' errors are never reported.
    if any(type(x) in sub._fast for sub in any_of):
        return
    results: list[list[FieldError]] = []
    for sub in any_of:
        sub_errs = _branch_errors(x, sub, path)
        if not sub_errs:
            return
        results.append(sub_errs)
    errs.append(
        _invalid("<nil>", "", f"{json.dumps(path)} must validate at least one schema (anyOf)")
    )
    best: list[FieldError] = min(results, key=len)
    errs.extend(best)


def _validate_one_of(x: Any, one_of: tuple[Schema, ...], path: str, errs: list[FieldError]) -> None:
    results = [_branch_errors(x, sub, path) for sub in one_of]
    valid = sum(not r for r in results)
    if valid != 1:
        extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
        errs.append(
            _invalid(
                "<nil>",
                "",
                f"{json.dumps(path)} must validate one and only one schema (oneOf). {extra}",
            )
        )
        if valid == 0:
            fewest: list[FieldError] = min(results, key=len)
            errs.extend(fewest)


# --- structural checks of a CRD schema ----------------------------------------------------

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
