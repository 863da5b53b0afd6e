"""Upstream flavor fungibility: when to stop at a flavor and which option is better."""

from __future__ import annotations

from collections.abc import Iterator

from kq.api.clusterqueue import TRY_NEXT_FLAVOR, FlavorFungibility
from kq.scheduler.modes import NO_CANDIDATES, NO_FIT, FlavorOption


def should_try_next(option: FlavorOption, fungibility: FlavorFungibility) -> bool:
    mode = option.mode
    if mode is NO_FIT or mode is NO_CANDIDATES:
        return True
    if mode.needs_preemption and fungibility.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return option.borrowing > 0 and fungibility.when_can_borrow == TRY_NEXT_FLAVOR


def is_preferred(a: FlavorOption, b: FlavorOption, fungibility: FlavorFungibility) -> bool:
    """Whether ``a`` beats ``b``; ``PreemptionOverBorrowing`` ranks borrowing height first.

    NoFit never wins and an option without preemption candidates loses to any viable one,
    whatever the preference.
    """
    if a.mode is NO_FIT:
        return False
    if b.mode is NO_FIT:
        return True
    if (a.mode is NO_CANDIDATES) != (b.mode is NO_CANDIDATES):
        return b.mode is NO_CANDIDATES
    if fungibility.preference == "PreemptionOverBorrowing":
        return (-a.borrowing, a.mode) > (-b.borrowing, b.mode)
    return (a.mode, -a.borrowing) > (b.mode, -b.borrowing)


def choose(options: Iterator[FlavorOption], fungibility: FlavorFungibility) -> FlavorOption | None:
    """Stop at the first option the policy accepts, else the best one seen."""
    best: FlavorOption | None = None
    for option in options:
        if not should_try_next(option, fungibility):
            return option
        if best is None or is_preferred(option, best, fungibility):
            best = option
    return best
