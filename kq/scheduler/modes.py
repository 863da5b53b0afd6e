"""How a flavor can be had: the preemption mode and borrowing height of one option."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from kq.api.quotas import FlavorResource
from kq.api.workload import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR, WAITING_FOR_QUOTA


class Mode(IntEnum):
    """Best last, so ``min`` gives the worst of several."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def needs_preemption(self) -> bool:
        return self is PREEMPT or self is RECLAIM


# The members as module globals, for the flavor-assignment hot path: ``Mode.FIT`` goes
# through the enum metaclass and costs about 50 ns in Python 3.11, a global about 5 ns, and
# assigning one workload's flavors reads a dozen of them.
NO_FIT = Mode.NO_FIT
NO_CANDIDATES = Mode.NO_CANDIDATES
PREEMPT = Mode.PREEMPT
RECLAIM = Mode.RECLAIM
FIT = Mode.FIT


@dataclass(init=False, slots=True)
class FlavorOption:
    """One flavor evaluated for a pod set's resource group, in ClusterQueue order."""

    flavor: Final[str]
    mode: Final[Mode]
    borrowing: Final[int]
    reasons: Final[tuple[str, ...]]
    usage: Final[dict[FlavorResource, int]]
    no_fit_reason: Final[str]
    """For NO_FIT: NoMatchingFlavor, ExceedsMaxQuota or WaitingForQuota (Kueue v0.19+)."""

    def __init__(
        self,
        flavor: str,
        mode: Mode,
        borrowing: int,
        reasons: tuple[str, ...] = (),
        usage: dict[FlavorResource, int] | None = None,
        no_fit_reason: str = "",
    ) -> None:
        self.flavor = flavor
        self.mode = mode
        self.borrowing = borrowing
        self.reasons = reasons
        self.usage = {} if usage is None else usage
        self.no_fit_reason = no_fit_reason


@dataclass(frozen=True, slots=True)
class AdmissionTerms:
    """What a ``kq_admission_terms`` plugin asks of one head's flavor assignment."""

    borrow_only: bool = False
    """Admit it only on capacity its ClusterQueue borrows from its cohort (its own unused
    nominal quota counts as full for it), and never by preemption."""
    reason: str = ""
    """Why: its pending message starts with it while it does not fit so."""


_SEVERITY = {"": 0, WAITING_FOR_QUOTA: 1, EXCEEDS_MAX_QUOTA: 2, NO_MATCHING_FLAVOR: 3}


def severity(reason: str) -> int:
    """How hard a NoFit reason is to clear: a missing flavor beats waiting for quota."""
    return _SEVERITY[reason]
