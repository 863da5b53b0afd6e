"""The contract of a plugin controller: a plugin's own loop, for the I/O a pure hook cannot do.

Registered through ``kq_register_controllers``. kq starts the informers of ``WATCHES``, waits
until they have listed, then awaits ``run(ctx)`` on the leading replica of ``kq run`` and
``kq dev`` (cancelled when leadership is lost). A controller whose kinds the API server does not
serve (a CRD not installed) is not started, and kq says so in its log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, Protocol

from kq.runtime.resources import Resource
from kq.runtime.store import Store

if TYPE_CHECKING:  # the client pulls in kubernetes_asyncio: only the processes that talk need it
    from kq.runtime.client import KubeClient


class ControllerContext(Protocol):
    """What kq hands a plugin controller."""

    @property
    def client(self) -> KubeClient:
        """Writes to the API server, fenced on this replica's lease (reads come from ``store``)."""
        ...

    def store(self, resource: Resource) -> Store:
        """The informer cache of a kind in ``WATCHES``, listed before ``run`` is called."""
        ...

    def on_change(self, resource: Resource, callback: Callable[[], None]) -> None:
        """Call ``callback`` (synchronous, cheap) after every change of a kind in ``WATCHES``."""
        ...

    def now(self) -> float:
        """The clock: wall time in ``kq run`` and ``kq dev``, virtual time in ``kq simulate``."""
        ...

    def retry_vetoed(self) -> None:
        """What a ``kq_workload_admissible`` veto kept waiting is tried again in the next cycle:
        call it when the plugin's reasons to veto may have gone (a limit raised, time passed)."""
        ...


class PluginController(Protocol):
    """Registered through ``kq_register_controllers``; instantiated once, without arguments,
    before admission starts, and only if the API server serves every kind in ``WATCHES``."""

    NAME: ClassVar[str]
    WATCHES: ClassVar[tuple[Resource, ...]]

    async def run(self, ctx: ControllerContext) -> None:
        """Until cancelled; an exception is logged and the controller is started again."""
        ...


Step = Callable[[float], float | None]
"""``step(now)``: called after each instant of a simulation; returns when to be called next
(``None``: at the next arrival or finish), e.g. when a window moves."""
SIMULATED = "simulate"
"""Optional method ``simulate(ctx) -> Step``: ``kq simulate`` calls it once, instead of ``run``,
if it can show the controller every kind in ``WATCHES`` (Budgets, ClusterQueues, Cohorts,
Workloads). ``ctx.store`` then holds the setup's objects and the trace's Workloads with their
conditions at virtual times; ``on_change`` callbacks fire as they change; ``ctx.client`` raises:
a simulation writes nothing. The controller must react synchronously."""
