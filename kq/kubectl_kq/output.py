"""``-o json|yaml`` on the list commands: the listed objects as kubectl prints a list."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

FORMATS = ("json", "yaml")


def dump(items: Sequence[dict[str, Any]], output: str) -> str:
    """A ``v1`` ``List`` of ``items``, as ``kubectl get -o json|yaml`` prints several objects."""
    document = {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {}}
    if output == "json":
        return json.dumps(document, indent=4) + "\n"
    return str(yaml.safe_dump(document, sort_keys=True))
