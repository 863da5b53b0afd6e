"""The physical check after quota: pod sets on topology flavors get domains, or a reason why not.

Runs only for pod sets with a topology request or a flavor with a Topology, so quota-only
admissions never look at nodes.
"""

from __future__ import annotations

from kq.api.topology import TopologyAssignment
from kq.cache.snapshot import Snapshot
from kq.cache.topology import usage_by_node
from kq.scheduler.assignment import Assignment
from kq.scheduler.placement import Unplaced, place, request_for
from kq.workload.info import WorkloadInfo

Placed = dict[str, TopologyAssignment]


def place_workload(
    snapshot: Snapshot, info: WorkloadInfo, assignment: Assignment
) -> Placed | Unplaced:
    """Each pod set's topology assignment (none for quota-only pod sets)."""
    placed: Placed = {}
    pod_sets = {ps.name: ps for ps in info.obj.pod_sets}
    view = snapshot.topology
    for result in assignment.pod_sets:
        pod_set = pod_sets[result.name]
        for flavor_name in dict.fromkeys(result.flavors.values()):
            flavor = snapshot.flavors.get(flavor_name)
            if flavor is None:
                continue
            request = request_for(flavor, pod_set, result.count)
            if request is None:
                continue
            outcome = place(view, flavor, pod_set, result.count, request, frozenset({info.key}))
            if isinstance(outcome, Unplaced):
                return outcome
            placed[result.name] = outcome
            requests = {name: ps.requests for name, ps in pod_sets.items()}
            view.place(info.key, usage_by_node(placed.items(), requests), request.exclusive)
            break
    return placed
