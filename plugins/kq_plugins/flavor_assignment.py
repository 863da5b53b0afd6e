"""Flavor assigners: ``InOrder`` (Kueue's) and ``MinimizeBorrowing``.

A ClusterQueue selects one with the annotation ``kq.dev/flavor-assignment``; the default is
``InOrder``. ``MinimizeBorrowing`` behaves as ``whenCanBorrow: TryNextFlavor``: a flavor that
fits without borrowing anywhere in the list beats an earlier one that must borrow.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import ClassVar

from kq.plugin import TRY_NEXT_FLAVOR, ClusterQueue, FlavorOption, Register, hookimpl
from kq.plugin import choose_by_fungibility as choose


class InOrder:
    """Flavors in ClusterQueue order, stopping as the queue's ``flavorFungibility`` says."""

    NAME: ClassVar[str] = "InOrder"

    def choose(self, cq: ClusterQueue, options: Iterator[FlavorOption]) -> FlavorOption | None:
        return choose(options, cq.flavor_fungibility)


class MinimizeBorrowing:
    """Like ``InOrder`` with ``whenCanBorrow: TryNextFlavor``; preemption policy unchanged."""

    NAME: ClassVar[str] = "MinimizeBorrowing"

    def choose(self, cq: ClusterQueue, options: Iterator[FlavorOption]) -> FlavorOption | None:
        return choose(options, replace(cq.flavor_fungibility, when_can_borrow=TRY_NEXT_FLAVOR))


@hookimpl(trylast=True)
def kq_register_flavor_assigners(register: Register) -> None:
    register(InOrder)
    register(MinimizeBorrowing)
