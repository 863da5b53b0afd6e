"""PodSets a job asks for, and the PodSetInfo merged into (and restored from) its pod templates.

``PodSetInfo`` is what admission adds to a template: flavor node labels as nodeSelector, flavor
tolerations, Kueue's labels and annotations, scheduling gates, admission-check podSetUpdates.
Restoring writes the *original* values back; the originals live in the Workload's
``spec.podSets[].template`` (upstream does the same), so no annotation on the job is needed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kq.jobframework.objects import Obj


class PodSetInfoError(ValueError):
    """Admission data that cannot be applied; permanent, so the Workload is finished as failed."""


@dataclass(frozen=True, slots=True)
class PodSet:
    """One ``spec.podSets[]`` entry of a Workload."""

    name: str
    count: int
    template: Mapping[str, Any]
    min_count: int | None = None
    topology_request: Mapping[str, Any] | None = None
    """Kueue's ``topologyRequest`` (topology-aware scheduling), when the job asks for one."""
    exclusive: bool = False
    """Its slices share their domains with no other pods kq placed (JobSet exclusive-topology);
    kept on the Workload as that annotation, since Kueue's ``topologyRequest`` has no word."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "count": self.count,
            "template": copy.deepcopy(dict(self.template)),
        }
        if self.min_count is not None:
            out["minCount"] = self.min_count
        if self.topology_request is not None:
            out["topologyRequest"] = dict(self.topology_request)
        return out


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    """Scheduling directives for one PodSet; ``None`` means "the template has no such field"."""

    name: str
    count: int
    labels: Mapping[str, str] | None = None
    annotations: Mapping[str, str] | None = None
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, Any]] | None = None
    scheduling_gates: Sequence[Mapping[str, Any]] | None = None

    def merge(self, other: PodSetInfo) -> PodSetInfo:
        """Add ``other``'s directives; a key with two different values is a conflict."""
        return replace(
            self,
            labels=_union("labels", self.labels, other.labels),
            annotations=_union("annotations", self.annotations, other.annotations),
            node_selector=_union("nodeSelector", self.node_selector, other.node_selector),
            tolerations=_append_new(self.tolerations, other.tolerations),
            scheduling_gates=_append_new(self.scheduling_gates, other.scheduling_gates),
        )


def _union(
    what: str, mine: Mapping[str, str] | None, theirs: Mapping[str, str] | None
) -> Mapping[str, str] | None:
    if not theirs:
        return mine
    mine = mine or {}
    for k, v in theirs.items():
        if k in mine and mine[k] != v:
            raise PodSetInfoError(
                f"invalid admission check PodSetUpdate: conflict for {what}: "
                f"conflict for key={k}, value1={mine[k]}, value2={v}"
            )
    return {**mine, **theirs}


def _append_new(
    mine: Sequence[Mapping[str, Any]] | None, theirs: Sequence[Mapping[str, Any]] | None
) -> Sequence[Mapping[str, Any]] | None:
    if not theirs:
        return mine
    out = list(mine or ())
    out.extend(item for item in theirs if item not in out)
    return out


def info_from_template(name: str, count: int, template: Obj) -> PodSetInfo:
    """The directives a template carries now: what a stop must put back."""
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    return PodSetInfo(
        name=name,
        count=count,
        labels=_copy(meta.get("labels")),
        annotations=_copy(meta.get("annotations")),
        node_selector=_copy(spec.get("nodeSelector")),
        tolerations=_copy(spec.get("tolerations")),
        scheduling_gates=_copy(spec.get("schedulingGates")),
    )


def info_from_workload_pod_set(pod_set: Obj) -> PodSetInfo:
    return info_from_template(
        str(pod_set.get("name", "")), int(pod_set.get("count", 1)), pod_set.get("template") or {}
    )


def _copy(value: Any) -> Any:
    return copy.deepcopy(value) if value is not None else None


_FIELDS = (
    ("metadata", "labels", "labels"),
    ("metadata", "annotations", "annotations"),
    ("spec", "nodeSelector", "node_selector"),
    ("spec", "tolerations", "tolerations"),
    ("spec", "schedulingGates", "scheduling_gates"),
)


def merge_into_template(template: Obj, info: PodSetInfo) -> dict[str, Any]:
    """A new template with ``info`` added; raises ``PodSetInfoError`` on a conflicting key."""
    merged = info_from_template(info.name, info.count, template).merge(info)
    out = copy.deepcopy(dict(template))
    for section, key, attr in _FIELDS:
        value = getattr(merged, attr)
        if value is not None:
            out.setdefault(section, {})[key] = copy.deepcopy(
                dict(value) if isinstance(value, Mapping) else list(value)
            )
    return out


def restore_template(template: Obj, info: PodSetInfo) -> dict[str, Any]:
    """A new template whose directives are exactly ``info``'s (absent fields are removed)."""
    out = copy.deepcopy(dict(template))
    for section, key, attr in _FIELDS:
        value = getattr(info, attr)
        part = out.get(section)
        if value is None:
            if isinstance(part, dict) and key in part:
                del part[key]
                # A section this emptied was created by the merge; the API omits empty ones.
                if not part:
                    del out[section]
            continue
        out.setdefault(section, {})[key] = copy.deepcopy(
            dict(value) if isinstance(value, Mapping) else list(value)
        )
    return out


def check_info_count(infos: Sequence[PodSetInfo], expected: int) -> None:
    if len(infos) != expected:
        raise PodSetInfoError(
            f"invalid podset infos: expecting {expected} podset, got {len(infos)}"
        )
