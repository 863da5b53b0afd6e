"""Which quota reservations kq counts: its own, and ones it could have made (pure).

Anyone allowed to write a Workload's status can write a ``status.admission``. Counted as
is, a forged one would charge another team's ClusterQueue or run a job on quota it never
got. kq counts an admission it wrote itself (or counted before, unchanged); any other — found
at start-up, or written behind kq's back — only if kq could have written it: the ClusterQueue
is the one the Workload's LocalQueue points to, every pod set it assigns exists, with no more
pods than the pod set has and at least its minimum, every (flavor, resource) is in the
ClusterQueue, and the usage covers what the pods request.
"""

from __future__ import annotations

from kq.api.clusterqueue import ClusterQueue
from kq.api.workload import Admission, PodSet, PodSetAssignment, Workload


def distrust(
    workload: Workload, admission: Admission, queue_cq: str | None, cq: ClusterQueue | None
) -> str | None:
    """Why kq could not have written ``admission`` (None: it could have).

    ``queue_cq``: the ClusterQueue of the Workload's LocalQueue (None: no such LocalQueue);
    ``cq``: the ClusterQueue the admission names (None: no such ClusterQueue).
    """
    name = admission.cluster_queue
    if queue_cq is None:
        return f"LocalQueue {workload.queue_name} doesn't exist"
    if name != queue_cq:
        return f"LocalQueue {workload.queue_name} admits to ClusterQueue {queue_cq}, not {name}"
    if cq is None:
        return f"ClusterQueue {name} doesn't exist"
    pod_sets = {p.name: p for p in workload.pod_sets}
    for psa in admission.pod_set_assignments:
        pod_set = pod_sets.get(psa.name)
        why = "no such pod set" if pod_set is None else _assignment_error(pod_set, psa, cq)
        if why is not None:
            return f"pod set {psa.name}: {why}"
    return None


def _assignment_error(pod_set: PodSet, psa: PodSetAssignment, cq: ClusterQueue) -> str | None:
    least = pod_set.count if pod_set.min_count is None else pod_set.min_count
    if not least <= psa.count <= pod_set.count:
        return f"count {psa.count} is outside {least}..{pod_set.count}"
    for resource, per_pod in pod_set.requests.items():
        if per_pod == 0 or psa.count == 0:
            continue
        flavor = psa.flavors.get(resource)
        if flavor is None:
            return f"no flavor for {resource}"
        if (flavor, resource) not in cq.quotas:
            return f"ClusterQueue {cq.name} has no quota for {resource} in flavor {flavor}"
        if psa.resource_usage.get(resource, 0) < per_pod * psa.count:
            return f"the usage of {resource} is less than its pods request"
    return None
