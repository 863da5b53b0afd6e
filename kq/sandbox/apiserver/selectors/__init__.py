"""Label and field selectors with kube-apiserver semantics.

Contract:

* ``parse_label_selector(text)`` parses the ``labelSelector`` query syntax: ``a=b``,
  ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a`` (exists), ``!a`` (does not
  exist), ``a>1`` / ``a<1`` (integer comparison), joined by commas.  Keys and values are
  validated like Kubernetes (qualified names, label values).  The empty string selects
  everything.
* ``label_selector_from_object(obj)`` converts a ``metav1.LabelSelector`` dict
  (``matchLabels`` / ``matchExpressions``).  ``{}`` selects everything; ``None`` (a
  missing selector field) selects nothing, as upstream ``LabelSelectorAsSelector``.
* ``parse_field_selector(text)`` parses ``f=v``, ``f==v``, ``f!=v`` joined by commas,
  with ``\\``-escaping of ``\\``, ``,`` and ``=`` in values.  A missing field reads as the
  empty string, so ``f=`` matches objects without ``f``.
* Every parse failure raises ``SelectorError`` (a ``ValueError``); the server answers 400.
* ``str()`` of a selector gives the canonical text, which parses back to an equal value.

Modules: ``labels`` (requirements, selectors, ``metav1.LabelSelector``), ``label_parser``
(the query syntax) and ``fields`` (field selectors).
"""

from kq.sandbox.apiserver.selectors.fields import (
    FieldSelector,
    escape_field_value,
    parse_field_selector,
)
from kq.sandbox.apiserver.selectors.label_parser import parse_label_selector
from kq.sandbox.apiserver.selectors.labels import (
    LabelRequirement,
    LabelSelector,
    SelectorError,
    label_selector_from_object,
    validate_label_key,
    validate_label_value,
)

__all__ = [
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "escape_field_value",
    "label_selector_from_object",
    "parse_field_selector",
    "parse_label_selector",
    "validate_label_key",
    "validate_label_value",
]
