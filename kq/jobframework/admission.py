"""PodSetInfo from a Workload: what admission adds to the job, and what a stop restores."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kq.api.topology import TAS_LABEL, TOPOLOGY_GATE, WORKLOAD_ANNOTATION
from kq.jobframework.constants import CLUSTER_QUEUE_LABEL, LOCAL_QUEUE_LABEL, POD_SET_LABEL
from kq.jobframework.objects import Obj, dig
from kq.jobframework.podset import PodSetInfo, info_from_workload_pod_set

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class FlavorNotFound(LookupError):
    """An assigned ResourceFlavor is not (yet) known; retry later, as upstream does."""


def original_infos(workload: Obj) -> list[PodSetInfo]:
    """The templates' directives as the job had them when the Workload was built."""
    return [info_from_workload_pod_set(ps) for ps in dig(workload, "spec", "podSets") or ()]


def admitted_infos(workload: Obj, flavors: Mapping[str, Obj]) -> list[PodSetInfo]:
    """One info per PodSet from ``status.admission``, ResourceFlavors and admission checks.

    nodeSelector is the union of the assigned flavors' ``nodeLabels``, tolerations their
    ``tolerations``; labels name the PodSet and the queues (AssignQueueLabelsForPods); every
    admission check's ``podSetUpdates`` for the PodSet is merged in, and a conflicting key is a
    ``PodSetInfoError``.
    """
    admission = dig(workload, "status", "admission") or {}
    cluster_queue = str(admission.get("clusterQueue", ""))
    pod_sets = dig(workload, "spec", "podSets") or ()
    infos = []
    for index, assignment in enumerate(admission.get("podSetAssignments") or ()):
        spec_count = pod_sets[index].get("count", 1) if index < len(pod_sets) else 1
        info = _from_assignment(assignment, int(spec_count), flavors)
        queue_labels = {
            POD_SET_LABEL: info.name,
            LOCAL_QUEUE_LABEL: str(dig(workload, "spec", "queueName") or ""),
        }
        if _DNS1123_LABEL.match(cluster_queue) and len(cluster_queue) <= 63:
            queue_labels[CLUSTER_QUEUE_LABEL] = cluster_queue
        info = info.merge(PodSetInfo(info.name, info.count, labels=queue_labels))
        if assignment.get("topologyAssignment"):
            info = info.merge(_topology_info(info, str(dig(workload, "metadata", "name"))))
        for check in dig(workload, "status", "admissionChecks") or ():
            for update in check.get("podSetUpdates") or ():
                if update.get("name") == info.name:
                    info = info.merge(_from_update(info, update))
                    break
        infos.append(info)
    return infos


def _from_assignment(assignment: Obj, spec_count: int, flavors: Mapping[str, Obj]) -> PodSetInfo:
    node_selector: dict[str, str] = {}
    tolerations: list[Any] = []
    for flavor_name in dict.fromkeys((assignment.get("flavors") or {}).values()):
        flavor = flavors.get(flavor_name)
        if flavor is None:
            raise FlavorNotFound(f'ResourceFlavor "{flavor_name}" not found')
        node_selector.update(dig(flavor, "spec", "nodeLabels") or {})
        tolerations.extend(dig(flavor, "spec", "tolerations") or ())
    count = assignment.get("count")
    return PodSetInfo(
        name=str(assignment.get("name", "")),
        count=int(count) if count is not None else spec_count,
        node_selector=node_selector,
        tolerations=tolerations,
    )


def _topology_info(info: PodSetInfo, workload: str) -> PodSetInfo:
    """Pods kq places itself wait behind a gate until kq pins them to their node."""
    return PodSetInfo(
        info.name,
        info.count,
        labels={TAS_LABEL: "true"},
        annotations={WORKLOAD_ANNOTATION: workload},
        scheduling_gates=[{"name": TOPOLOGY_GATE}],
    )


def _from_update(info: PodSetInfo, update: Obj) -> PodSetInfo:
    return PodSetInfo(
        info.name,
        info.count,
        labels=update.get("labels"),
        annotations=update.get("annotations"),
        node_selector=update.get("nodeSelector"),
        tolerations=update.get("tolerations"),
    )
