"""Reading and replacing pod templates at known paths inside a job dict.

Integrations describe where their templates live (one path per PodSet, in PodSet order); the
merge on start and the restore on stop are then the same for every kind.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from kq.jobframework.objects import Obj
from kq.jobframework.podset import PodSetInfo, merge_into_template, restore_template

Path = tuple[str | int, ...]


def get_in(obj: Any, path: Path) -> Any:
    """The value at ``path`` (keys and list indexes), or ``None`` when a step is missing."""
    for step in path:
        try:
            obj = obj[step]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def set_in(obj: Obj, path: Path, value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with ``path`` set, creating missing mappings on the way."""
    out = copy.deepcopy(dict(obj))
    node: Any = out
    for step in path[:-1]:
        if isinstance(step, str) and node.get(step) is None:
            node[step] = {}
        node = node[step]
    node[path[-1]] = value
    return out


def merge_templates(job: Obj, paths: Sequence[Path], infos: Sequence[PodSetInfo]) -> dict[str, Any]:
    out = copy.deepcopy(dict(job))
    for path, info in zip(paths, infos, strict=True):
        out = set_in(out, path, merge_into_template(get_in(out, path) or {}, info))
    return out


def restore_templates(
    job: Obj, paths: Sequence[Path], infos: Sequence[PodSetInfo]
) -> dict[str, Any]:
    out = copy.deepcopy(dict(job))
    for path, info in zip(paths, infos, strict=True):
        out = set_in(out, path, restore_template(get_in(out, path) or {}, info))
    return out
