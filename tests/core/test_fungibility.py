"""Flavor fungibility: when the search stops and which option wins (semantics §4.3)."""

from __future__ import annotations

import pytest

from kq.api.clusterqueue import FlavorFungibility
from kq.scheduler.fungibility import choose, is_preferred
from kq.scheduler.modes import FlavorOption, Mode

DEFAULT = FlavorFungibility()
TRY_BOTH = FlavorFungibility("TryNextFlavor", "TryNextFlavor")


def option(name: str, mode: Mode, borrowing: int = 0) -> FlavorOption:
    return FlavorOption(name, mode, borrowing)


def test_default_takes_the_first_fit_even_if_it_borrows() -> None:
    options = [option("a", Mode.FIT, 1), option("b", Mode.FIT, 0)]
    assert choose(iter(options), DEFAULT) == options[0]


def test_default_looks_past_preemption_for_a_fit() -> None:
    options = [option("a", Mode.PREEMPT), option("b", Mode.FIT, 1)]
    assert choose(iter(options), DEFAULT) == options[1]


def test_best_remembered_when_nothing_stops_the_search() -> None:
    options = [option("a", Mode.NO_CANDIDATES), option("b", Mode.PREEMPT), option("c", Mode.NO_FIT)]
    assert choose(iter(options), DEFAULT) == options[1]


def test_try_next_flavor_on_borrow_prefers_lower_borrowing() -> None:
    options = [option("a", Mode.FIT, 2), option("b", Mode.FIT, 1)]
    assert choose(iter(options), TRY_BOTH) == options[1]


@pytest.mark.parametrize(
    ("preference", "winner"),
    [("BorrowingOverPreemption", "fit-borrowing"), ("PreemptionOverBorrowing", "reclaim-local")],
)
def test_preference_decides_between_borrowing_and_preempting(preference: str, winner: str) -> None:
    fungibility = FlavorFungibility("TryNextFlavor", "TryNextFlavor", preference)
    options = [option("reclaim-local", Mode.RECLAIM, 0), option("fit-borrowing", Mode.FIT, 1)]
    chosen = choose(iter(options), fungibility)
    assert chosen is not None
    assert chosen.flavor == winner


def test_no_candidates_loses_to_any_viable_option_whatever_the_preference() -> None:
    fungibility = FlavorFungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing")
    local_no_candidates = option("a", Mode.NO_CANDIDATES, 0)
    borrowing_preempt = option("b", Mode.PREEMPT, 2)
    assert is_preferred(borrowing_preempt, local_no_candidates, fungibility)
    assert not is_preferred(option("c", Mode.NO_FIT), local_no_candidates, fungibility)
