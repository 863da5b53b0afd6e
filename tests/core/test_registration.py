"""Built-in admission plugins register through the ``kq`` entry points, like third parties."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pluggy

from kq import hookspecs
from kq.api.workload import Workload
from kq.config import PluginsConfig
from kq.hookspecs import hookimpl
from kq.plugins import build_plugin_manager
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Decision
from kq.scheduler.observers import Observers, load_observers
from kq.scheduler.plugins import load_admission_plugins
from kq.workload.info import WorkloadInfo
from tests.core.world import World, pending


def test_builtins_register_through_autoload() -> None:
    plugins = load_admission_plugins(build_plugin_manager(PluginsConfig(autoload=True)))
    assert sorted(plugins.strategies) == ["BestEffortFIFO", "StrictFIFO"]
    assert sorted(plugins.assigners) == ["InOrder", "MinimizeBorrowing"]
    assert plugins.preemptors["ClassicPreemption"].NAME == "ClassicPreemption"


def test_disabling_a_builtin_removes_it() -> None:
    pm = build_plugin_manager(PluginsConfig(disabled=("flavor_assignment",)))
    assert not pm.hook.kq_register_flavor_assigners.get_hookimpls()


def test_observer_hooks_see_every_decision_and_cycle() -> None:
    seen: list[str] = []

    class Audit:
        @hookimpl
        def kq_on_decision(self, decision: Decision) -> None:
            seen.append(f"{type(decision).__name__}:{decision.key}")

        @hookimpl
        def kq_on_cycle_end(self, summary: CycleResult) -> None:
            seen.append(f"cycle:{summary.admitted}")

    pm = build_plugin_manager(PluginsConfig())
    pm.register(Audit(), name="audit")
    world = World()
    world.scheduler.observers = load_observers(pm)
    world.flavor("f")
    world.cluster_queue("q", [{"f": {"cpu": 1}}])
    world.local_queue("default", "q", "q")
    world.submit("fits", "q", {"cpu": 1})
    world.cycle()
    assert seen == ["Admit:default/fits", "cycle:1"]


def test_without_listeners_no_hook_is_called() -> None:
    # Built-in plugins listen (budgets, admission fair sharing): load none of them.
    observers = load_observers(build_plugin_manager(PluginsConfig(autoload=False)))
    assert observers == Observers()


def test_unknown_flavor_assigner_keeps_workloads_pending_with_a_reason() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("q", [{"f": {"cpu": 1}}], annotations={"kq.dev/flavor-assignment": "Magic"})
    world.local_queue("default", "q", "q")
    key = world.submit("w", "q", {"cpu": 1})
    decision = pending(world.cycle(), key)
    assert decision.reason == "Misconfigured"
    assert decision.message == (
        "unknown flavor assigner 'Magic' (registered: InOrder, MinimizeBorrowing)"
    )


def test_vetoes_answer_as_pluggy_would_last_registered_first() -> None:
    """The cycle calls ``kq_workload_admissible``'s implementations itself (pluggy's per-call
    cost was more than theirs): the same order, the first answer wins, wrappers kept."""
    asked: list[str] = []

    class Abstains:
        @hookimpl
        def kq_workload_admissible(self, cluster_queue: object) -> str | None:
            asked.append("abstains")
            return None

    class Refuses:
        @hookimpl
        def kq_workload_admissible(self, workload: object) -> str | None:
            asked.append("refuses")
            return "no"

    class Wraps:
        @hookimpl(wrapper=True)
        def kq_workload_admissible(self) -> Generator[None, str | None, str | None]:
            answer = yield
            return f"wrapped {answer}"

    # The implementations look at neither argument; a real WorkloadInfo all the same, as the
    # compiled core checks the types it is handed.
    nobody: Any = WorkloadInfo(Workload("ns", "w", "ns.w", (), "lq"))
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    assert load_admission_plugins(pm).veto is None
    pm.register(Refuses(), name="refuses")
    pm.register(Abstains(), name="abstains")
    veto = load_admission_plugins(pm).veto
    assert veto is not None
    assert veto(nobody, nobody) == "no"
    assert asked == ["abstains", "refuses"]
    pm.unregister(name="refuses")
    veto = load_admission_plugins(pm).veto
    assert veto is not None
    assert veto(nobody, nobody) is None
    pm.register(Wraps(), name="wraps")
    veto = load_admission_plugins(pm).veto
    assert veto is not None
    assert veto(nobody, nobody) == "wrapped None"
