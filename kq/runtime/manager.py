"""What runs in the controller process: shared informers and named runnables.

Later controllers attach here: they ask for the informer of a kind (one per kind, shared) and
add their loops as runnables, marked leader-only when they write decisions (admission). Those
write through ``leader_client`` and may ask ``is_leading``: both follow the process's leader
elector, so a write goes out only while this replica's lease is fresh.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.informer import Informer, InformerSettings
from kq.runtime.resources import Resource
from kq.runtime.webhook import WebhookServer

RunnableFactory = Callable[[], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Runnable:
    name: str
    start: RunnableFactory
    leader_only: bool


class Manager:
    """The registry of informers and runnables for one process."""

    def __init__(
        self,
        client: KubeClient,
        webhook: WebhookServer,
        settings: InformerSettings | None = None,
    ) -> None:
        self.client = client
        # Webhooks register their paths here; the server starts only if any did.
        self.webhook = webhook
        self._settings = settings
        self._informers: dict[Resource, Informer] = {}
        self.runnables: list[Runnable] = []
        self._leading: Callable[[], bool] = _always  # no election: the only replica leads
        self.leader_client = client.fenced(self.is_leading)
        """The client of leader-only work: writes go out only while ``is_leading()``."""

    def is_leading(self) -> bool:
        """Whether leader-only work may write now (see ``LeaderElector.leading``)."""
        return self._leading()

    def follow(self, leading: Callable[[], bool]) -> None:
        """Gate leader-only writes on the elector's ``leading``."""
        self._leading = leading

    def informer(self, resource: Resource) -> Informer:
        """The shared informer of a kind, created on first request."""
        informer = self._informers.get(resource)
        if informer is None:
            informer = Informer(self.client, resource, settings=self._settings)
            self._informers[resource] = informer
        return informer

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def add(self, name: str, start: RunnableFactory, *, leader_only: bool) -> None:
        if any(r.name == name for r in self.runnables):
            raise ValueError(f"runnable {name!r} is already registered")
        self.runnables.append(Runnable(name, start, leader_only))

    def not_synced(self) -> list[str]:
        return [i.resource.kind for i in self._informers.values() if not i.has_synced]


def _always() -> bool:
    return True
