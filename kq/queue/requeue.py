"""Why a head goes back to its queue after a cycle."""

from __future__ import annotations

from enum import Enum


class RequeueReason(Enum):
    """Queueing strategies decide which of these block the ClusterQueue."""

    NO_FIT = "NoFit"
    PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
    FAILED_AFTER_NOMINATION = "FailedAfterNomination"
    PENDING_PREEMPTION = "PendingPreemption"
    INACTIVE = "Inactive"
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    VETOED = "Vetoed"
    GENERIC = "Generic"
    """Any other reason, e.g. requests above their limits or outside the LimitRange."""
