"""Runs the controllers plugins register through ``kq_register_controllers``.

Each is a leader-only runnable: its informers are the manager's shared ones (registered before
the process starts them), and a controller that fails is logged and started again after a
back-off, so a plugin's bug cannot stop kq's own controllers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pluggy
import structlog

from kq.admissionchecks.runner import not_served
from kq.plugins import Registry, collect_registrations
from kq.plugins.controllers import PluginController
from kq.runtime.client import KubeClient
from kq.runtime.informer import Informer
from kq.runtime.manager import Manager
from kq.runtime.resources import Resource
from kq.runtime.store import Store

log = structlog.get_logger("kq.plugin_controllers")

HOOK = "kq_register_controllers"
RESTART_DELAY_S = (1.0, 30.0)
"""First and longest pause before a failed plugin controller is started again."""


class NotAController(TypeError):
    """A registered class does not implement ``PluginController``."""


class _Context:
    def __init__(
        self, client: KubeClient, informers: dict[Resource, Informer], retry: Callable[[], None]
    ) -> None:
        self._client = client
        self.informers = informers
        self._retry = retry

    @property
    def client(self) -> KubeClient:
        return self._client

    def store(self, resource: Resource) -> Store:
        return self.informers[resource].store

    def on_change(self, resource: Resource, callback: Callable[[], None]) -> None:
        self.informers[resource].add_handler(lambda _change: callback())

    def now(self) -> float:
        return time.time()

    def retry_vetoed(self) -> None:
        self._retry()


def _name(cls: type[PluginController]) -> str:
    # Checked on the class: a controller is instantiated only where it will run.
    if not isinstance(cls, type) or not all(hasattr(cls, a) for a in ("NAME", "WATCHES", "run")):
        raise NotAController(
            f"{cls!r} does not implement kq.plugin.PluginController (NAME, WATCHES, run)"
        )
    return str(cls.NAME)


def plugin_controllers(pm: pluggy.PluginManager) -> dict[str, type[PluginController]]:
    """Every registered controller class, keyed by ``NAME``."""
    registry: Registry[type[PluginController]] = Registry("plugin controller", _name)
    collect_registrations(pm, HOOK, registry)
    return {name: registry[name] for name in registry}


async def register_plugin_controllers(
    manager: Manager, pm: pluggy.PluginManager, retry_vetoed: Callable[[], None]
) -> list[str]:
    """Add every controller whose kinds are served as the leader-only runnable
    ``plugin/<NAME>``; the others are not instantiated, and the log says why."""
    started = []
    for name, cls in plugin_controllers(pm).items():
        missing = await not_served(manager.client, cls.WATCHES)
        if missing:
            log.warning("plugin controller not started", controller=name, missing=missing)
            continue
        informers = {r: manager.informer(r) for r in cls.WATCHES}
        context = _Context(manager.leader_client, informers, retry_vetoed)
        manager.add(f"plugin/{name}", _runnable(name, cls(), context), leader_only=True)
        started.append(name)
    return started


def _runnable(
    name: str, controller: PluginController, context: _Context
) -> Callable[[], Coroutine[Any, Any, None]]:
    async def start() -> None:
        await asyncio.gather(*(i.wait_synced() for i in context.informers.values()))
        log.info("plugin controller started", controller=name)
        delay = RESTART_DELAY_S[0]
        while True:
            try:
                await controller.run(context)
                return
            except Exception:
                log.exception("plugin controller failed; starting it again", controller=name)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_DELAY_S[1])

    return start
