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

Modules: ``values`` (field errors as Go prints them, formats, Go regexes), ``node`` (the
``Schema`` tree and what each node precomputes), ``walks`` (defaulting and pruning),
``validate`` (value validation) and ``structural``/``node_checks`` (the CRD schema itself).
"""

from kq.sandbox.apiserver.schema.node import Schema
from kq.sandbox.apiserver.schema.structural import structural_errors
from kq.sandbox.apiserver.schema.values import (
    REASONS,
    FieldError,
    compile_go_regex,
    format_value,
)

__all__ = [
    "REASONS",
    "FieldError",
    "Schema",
    "compile_go_regex",
    "format_value",
    "structural_errors",
]
