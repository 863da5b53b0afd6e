"""The ``Evicted``/``Preempted`` condition texts for preemption victims, worded as Kueue's."""

from __future__ import annotations

from kq.cache.snapshot import Snapshot
from kq.scheduler.decisions import Victim
from kq.scheduler.protocols import Target
from kq.workload.info import WorkloadInfo

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"

_HUMAN = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


def victim(snapshot: Snapshot, preemptor: WorkloadInfo, target: Target) -> Victim:
    preemptor_path = snapshot.cluster_queues[preemptor.cluster_queue].node.path()
    preemptee_path = snapshot.cluster_queues[target.workload.cluster_queue].node.path()
    job_uid = preemptor.obj.labels.get(JOB_UID_LABEL, "UNKNOWN")
    message = (
        f"Preempted to accommodate a workload (UID: {preemptor.obj.uid or 'UNKNOWN'}, "
        f"JobUID: {job_uid}) due to {_description(target)}; "
        f"preemptor path: {preemptor_path}; preemptee path: {preemptee_path}"
    )
    return Victim(target.workload.key, target.reason, message)


def _description(target: Target) -> str:
    """A policy's own reason brings its own words; without them, the reason itself."""
    return target.description or _HUMAN.get(target.reason, target.reason)
