"""Why a ClusterQueue can't admit: the ``Active=False`` reason and message, as Kueue words them."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kq.api.admissioncheck import AdmissionCheck
from kq.api.clusterqueue import ClusterQueue
from kq.api.resourceflavor import ResourceFlavor

TERMINATING_MESSAGE = "Can't admit new workloads; clusterQueue is terminating"


def inactive_reason(
    cq: ClusterQueue,
    flavors: Mapping[str, ResourceFlavor],
    checks: Mapping[str, AdmissionCheck],
    in_cycle: Collection[str],
) -> tuple[str, str] | None:
    """``(reason, message)``: the first problem's reason, every problem in the message."""
    if cq.deleting:
        return "Terminating", TERMINATING_MESSAGE
    found: list[tuple[str, str]] = []
    if cq.stop_policy != "None":
        found.append(("Stopped", "is stopped"))
    missing = [f for f in cq.flavor_names if f not in flavors]
    if missing:
        found.append(
            ("FlavorNotFound", f"references missing ResourceFlavor(s): {','.join(missing)}")
        )
    absent = [c for c in cq.admission_checks if c not in checks]
    if absent:
        found.append(
            ("AdmissionCheckNotFound", f"references missing AdmissionCheck(s): {','.join(absent)}")
        )
    inactive = [c for c in cq.admission_checks if c in checks and not checks[c].active]
    if inactive:
        found.append(
            (
                "AdmissionCheckInactive",
                f"references inactive AdmissionCheck(s): {','.join(inactive)}",
            )
        )
    if cq.name in in_cycle:
        found.append(("Unknown", "is in a cohort tree with a cycle"))
    if not found:
        return None
    return found[0][0], "Can't admit new workloads: " + ", ".join(m for _, m in found) + "."
