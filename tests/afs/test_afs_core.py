"""Admission fair sharing on the pure core: the decay and penalty arithmetic, the order of a
ClusterQueue's pending workloads by LocalQueue usage (Kueue's ``TestFsAdmission`` cases), the
entry penalty of an admission, and the configuration."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.api.clusterqueue import parse_cluster_queue
from kq.config import AdmissionFairSharing, ConfigError
from kq.config_file import parse_config
from kq.queue.requeue import RequeueReason
from kq.scheduler.decisions import Admit, Preempt
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup
from kq.simulate.source import InputError
from kq.webhooks.kueue import ADMISSION_SCOPE_WARNING, kueue_validator
from kq_plugins.admission_fair_sharing import LEDGER
from kq_plugins.admission_fair_sharing.ledger import Ledger
from kq_plugins.admission_fair_sharing.usage import (
    alpha,
    decayed,
    entry_penalty,
    from_quantities,
    to_quantity,
    usage,
)
from tests.core.world import World
from tests.simulate.helpers import FLAVOR, cluster_queue, local_queue, write_setup

WEEK, FIVE_MINUTES = 168 * 3600.0, 300.0
AFS: dict[str, Any] = {"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}}


def test_alpha_halves_per_half_life_and_is_zero_without_one() -> None:
    assert alpha(600, 600) == 0.5
    assert alpha(1200, 600) == 0.75
    assert alpha(300, 0) == 0.0


def test_consumed_converges_on_the_half_life_curve() -> None:
    # Kueue's TestCalculateDecayedConsumedConvergesToUsage: 2 cpu admitted, sampled every 5m
    # with a week's half-life, is 1, 1.5, 1.75 after one, two, three half-lives.
    consumed: dict[str, float] = {}
    for half_lives, want in ((1, 1.0), (2, 1.5), (3, 1.75)):
        for _ in range(2016):
            consumed = decayed(consumed, {"cpu": 2.0}, FIVE_MINUTES, WEEK)
        assert consumed["cpu"] == pytest.approx(want, abs=1e-3), half_lives
        assert consumed["cpu"] <= 2.0


def test_a_long_half_life_still_accumulates_below_a_milli_unit() -> None:
    consumed: dict[str, float] = {}
    previous = 0.0
    for _ in range(3):
        consumed = decayed(consumed, {"cpu": 2.0}, FIVE_MINUTES, WEEK)
        assert consumed["cpu"] > previous
        previous = consumed["cpu"]
    assert to_quantity(consumed["cpu"]) != "0"


def test_usage_weighs_resources_and_divides_by_the_queue_weight() -> None:
    # Kueue's TestCalculateUsageWithDRA: unlisted resources weigh 1.
    assert usage({"gpu-logical": 2}, {}, 1, {}) == 2
    assert usage({"gpu-logical": 2}, {}, 1, {"gpu-logical": 3}) == 6
    assert usage({"cpu": 4, "gpu-logical": 2}, {}, 1, {"cpu": 1, "gpu-logical": 5}) == 14
    assert usage({"cpu": 4}, {"cpu": 2}, 2, {}) == 3
    assert usage({"cpu": 4}, {}, 0, {}) == math.inf


def test_the_entry_penalty_is_what_one_sample_would_add() -> None:
    config = AdmissionFairSharing(usage_half_life_time=600, usage_sampling_interval=300)
    penalty = entry_penalty({"cpu": 4.0, "gpu-logical": 2.0}, config)
    assert penalty == pytest.approx({"cpu": 4 * (1 - 0.5**0.5), "gpu-logical": 2 * (1 - 0.5**0.5)})
    assert entry_penalty({"cpu": 4.0}, AdmissionFairSharing()) == {"cpu": 0.0}


def test_quantities_round_trip_to_a_nano_unit() -> None:
    for value, text in ((2.0, "2"), (1.5, "1500m"), (0.000123, "123u"), (1e-9, "1n")):
        assert to_quantity(value) == text
        assert from_quantities({"cpu": text})["cpu"] == pytest.approx(value)
    assert to_quantity(16 * 2**30) == "17179869184"


@given(
    old=st.floats(0, 1e6),
    live=st.floats(0, 1e6),
    first=st.floats(0, 1e5),
    second=st.floats(0, 1e5),
    half_life=st.floats(1, 1e6),
)
def test_decay_is_monotone_towards_the_live_usage_and_splits_over_time(
    old: float, live: float, first: float, second: float, half_life: float
) -> None:
    once = decayed({"cpu": old}, {"cpu": live}, first, half_life)["cpu"]
    later = decayed({"cpu": once}, {"cpu": live}, second, half_life)["cpu"]
    low, high = min(old, live), max(old, live)
    # Between the old value and the live usage, and closer to the usage the longer it runs.
    assert low - 1e-6 <= once <= high + 1e-6
    assert abs(later - live) <= abs(once - live) + 1e-6
    together = decayed({"cpu": old}, {"cpu": live}, first + second, half_life)["cpu"]
    assert later == pytest.approx(together, rel=1e-9, abs=1e-6)


# -- the order of a ClusterQueue's pending workloads ------------------------------------------


def world_with(ledger: Ledger, strategy: str = "BestEffortFIFO", **spec: Any) -> World:
    world = World()
    world.flavor("f")
    cq = world.cluster_queue("cq", [{"f": {"cpu": 1}}], queueingStrategy=strategy, **spec)
    world.queues.set_cluster_queue("cq", cq.queueing_strategy, ledger.order(cq))
    world.local_queue("default", "lqA", "cq")
    world.local_queue("default", "lqB", "cq")
    return world


def head(world: World) -> str:
    """The ClusterQueue's head, put straight back."""
    [first] = world.queues.heads()
    world.queues.requeue(first, RequeueReason.FAILED_AFTER_NOMINATION)
    return first.key


def ledger_with(consumed: dict[str, dict[str, float]], **config: Any) -> Ledger:
    ledger = Ledger(config=AdmissionFairSharing(**config))
    for lq, amounts in consumed.items():
        ledger.seed(lq, amounts)
    return ledger


@pytest.mark.parametrize(
    ("consumed", "weights", "resource_weights", "want"),
    [
        # Kueue's TestFsAdmission: usage before priority; resource weights; queue weights.
        ({"default/lqA": {"cpu": 2}, "default/lqB": {"cpu": 1}}, {}, {}, "wlB-low"),
        (
            {"default/lqA": {"cpu": 1, "gpu": 10}, "default/lqB": {"cpu": 1000, "gpu": 1}},
            {},
            {"cpu": 0, "gpu": 1},
            "wlB-low",
        ),
        (
            {"default/lqA": {"cpu": 10}, "default/lqB": {"cpu": 6}},
            {"default/lqB": 2},
            {},
            "wlB-low",
        ),
        # The same usage: priority decides, as without fair sharing.
        ({"default/lqA": {"cpu": 1}, "default/lqB": {"cpu": 1}}, {}, {}, "wlA-high"),
    ],
)
def test_the_queue_with_less_usage_goes_first(
    consumed: dict[str, dict[str, float]],
    weights: dict[str, float],
    resource_weights: dict[str, float],
    want: str,
) -> None:
    ledger = ledger_with(consumed, resource_weights=resource_weights)
    for lq, weight in weights.items():
        ledger.set_weight(lq, weight)
    world = world_with(ledger, **AFS)
    world.submit("wlA-high", "lqA", {"cpu": 1}, priority=2)
    world.submit("wlB-low", "lqB", {"cpu": 1}, priority=1)
    assert head(world) == f"default/{want}"


def test_without_the_admission_scope_the_order_is_the_strategys() -> None:
    ledger = ledger_with({"default/lqA": {"cpu": 2}, "default/lqB": {"cpu": 1}})
    world = world_with(ledger)
    world.submit("wlA-high", "lqA", {"cpu": 1}, priority=2)
    world.submit("wlB-low", "lqB", {"cpu": 1}, priority=1)
    assert head(world) == "default/wlA-high"


def test_an_admission_charges_its_queue_at_once_so_the_queues_take_turns() -> None:
    # Two LocalQueues with no history, a 1-cpu ClusterQueue: after each admission the
    # penalty makes the other queue's head go first, whatever the submission order.
    ledger = Ledger(config=AdmissionFairSharing(usage_half_life_time=600))
    world = world_with(ledger, **AFS)
    for i in range(3):
        world.submit(f"a{i}", "lqA", {"cpu": 1})
    for i in range(3):
        world.submit(f"b{i}", "lqB", {"cpu": 1})
    order = []
    for _ in range(6):
        [decision] = [d for d in world.cycle().decisions if isinstance(d, Admit)]
        ledger.admitted(decision)
        order.append(decision.key.removeprefix("default/"))
        world.finish(decision.key)
        world.requeue_all()
    assert order == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert ledger.entries["default/lqA"].penalties.keys() == {
        "default/a0",
        "default/a1",
        "default/a2",
    }


def test_a_zero_weight_queue_goes_last() -> None:
    ledger = ledger_with({})
    ledger.set_weight("default/lqA", 0)
    world = world_with(ledger, **AFS)
    world.submit("a", "lqA", {"cpu": 1}, priority=100)
    world.submit("b", "lqB", {"cpu": 1})
    assert head(world) == "default/b"


@given(
    usages=st.lists(st.tuples(st.floats(0, 100), st.floats(0.1, 10)), min_size=2, max_size=5),
    priorities=st.lists(st.integers(0, 3), min_size=5, max_size=5),
)
def test_heads_come_in_order_of_usage_over_weight(
    usages: list[tuple[float, float]], priorities: list[int]
) -> None:
    ledger = Ledger(config=AdmissionFairSharing())
    world = World()
    world.flavor("f")
    cq = world.cluster_queue("cq", [{"f": {"cpu": 1}}], **AFS)
    world.queues.set_cluster_queue("cq", cq.queueing_strategy, ledger.order(cq))
    for i, (consumed, weight) in enumerate(usages):
        world.local_queue("default", f"lq{i}", "cq")
        ledger.seed(f"default/lq{i}", {"cpu": consumed})
        ledger.set_weight(f"default/lq{i}", weight)
        world.submit(f"w{i}", f"lq{i}", {"cpu": 1}, priority=priorities[i])
    popped = []
    while heads := world.queues.heads():
        [first] = heads
        popped.append(int(first.key.removeprefix("default/w")))
        world.queues.admitted(first.key)
    keys = [(usages[i][0] / usages[i][1], -priorities[i]) for i in popped]
    assert keys == sorted(keys)


def test_a_queue_reorders_when_the_usage_moves() -> None:
    ledger = ledger_with({"default/lqA": {"cpu": 1}, "default/lqB": {"cpu": 2}})
    world = world_with(ledger, **AFS)
    world.submit("a", "lqA", {"cpu": 1})
    world.submit("b", "lqB", {"cpu": 1})
    assert head(world) == "default/a"
    ledger.sample("default/lqB", {}, ledger.entries["default/lqB"].last_update + 1e9)
    assert head(world) == "default/b"


# -- configuration ----------------------------------------------------------------------------


def test_the_configuration_section_and_its_gate() -> None:
    section = {"usageHalfLifeTime": "168h", "resourceWeights": {"nvidia.com/gpu": 4}}
    parsed = parse_config({"admissionFairSharing": section}).admission_fair_sharing
    assert parsed == AdmissionFairSharing(WEEK, 300.0, {"nvidia.com/gpu": 4.0})
    off = {"admissionFairSharing": section, "featureGates": {"AdmissionFairSharing": False}}
    assert parse_config(off).admission_fair_sharing is None
    assert parse_config({}).admission_fair_sharing is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"usageHalfLifeTime": "-1h"}, "admissionFairSharing.usageHalfLifeTime: must be"),
        ({"usageSamplingInterval": "0s"}, "admissionFairSharing.usageSamplingInterval: must be"),
        ({"resourceWeights": {"cpu": -1}}, "admissionFairSharing.resourceWeights.cpu: must be"),
        ({"resourceWeights": ["cpu"]}, "admissionFairSharing.resourceWeights: must map"),
        ({"usageHalfLife": "1h"}, "admissionFairSharing.usageHalfLife: unknown field"),
    ],
)
def test_a_bad_section_is_refused_naming_the_key(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        parse_config({"admissionFairSharing": section})


def test_an_unknown_admission_mode_makes_the_cluster_queue_invalid() -> None:
    bad = parse_cluster_queue(
        {"metadata": {"name": "cq"}, "spec": {"admissionScope": {"admissionMode": "Usage"}}}
    )
    assert "admissionScope.admissionMode: unsupported value 'Usage'" in getattr(bad, "message", "")
    missing = parse_cluster_queue({"metadata": {"name": "cq"}, "spec": {"admissionScope": {}}})
    assert "admissionScope.admissionMode: Required value" in getattr(missing, "message", "")


def test_kq_simulate_refuses_admission_fair_sharing(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("admissionFairSharing:\n  usageHalfLifeTime: 1h\n")
    setup = write_setup(tmp_path / "setup.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("cq"))
    trace = tmp_path / "t.yaml"
    trace.write_text("- {name: a, arrival: 0, queue: cq, runtime: 1, requests: {cpu: 1}}\n")
    with pytest.raises(InputError, match=r"config\.yaml: configuration: admissionFairSharing: "):
        prepare("t", load_setup([setup], config), trace)


def test_an_admission_scope_warns_on_apply_while_admission_fair_sharing_is_off() -> None:
    request = {
        "uid": "u",
        "kind": {"group": "kueue.x-k8s.io", "version": "v1beta1", "kind": "ClusterQueue"},
        "operation": "CREATE",
        "object": {"metadata": {"name": "cq"}, "spec": {"namespaceSelector": {}, **AFS}},
    }
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    off = kueue_validator(None)(review)["response"]
    assert off["allowed"]
    assert ADMISSION_SCOPE_WARNING in off.get("warnings", [])
    on = kueue_validator(None, admission_fair_sharing=True)(review)["response"]
    assert on["allowed"]
    assert ADMISSION_SCOPE_WARNING not in on.get("warnings", [])


@pytest.mark.parametrize(("fair", "victim"), [(True, "default/a-old"), (False, "default/b-new")])
def test_within_the_queue_the_local_queue_that_used_more_is_preempted_first(
    fair: bool, victim: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue's CandidatesOrdering under admission fair sharing: a's workload goes though b's
    is newer (without it, the newest reservation goes first). The built-in preemption reads the
    plugin's ledger."""
    fresh = ledger_with({"default/lqA": {"cpu": 10}, "default/lqB": {"cpu": 1}})
    for name in ("config", "entries", "weights", "queued", "fair_queues"):
        monkeypatch.setattr(LEDGER, name, getattr(fresh, name))
    policy = {"withinClusterQueue": "LowerPriority"}
    world = World()
    world.flavor("f")
    cq = world.cluster_queue("cq", [{"f": {"cpu": 2}}], preemption=policy, **(AFS if fair else {}))
    world.queues.set_cluster_queue("cq", cq.queueing_strategy, LEDGER.order(cq))
    world.local_queue("default", "lqA", "cq")
    world.local_queue("default", "lqB", "cq")
    world.submit("a-old", "lqA", {"cpu": 1})
    world.run(1)
    world.submit("b-new", "lqB", {"cpu": 1})
    world.run(1)
    assert world.admitted() == {"default/a-old", "default/b-new"}
    key = world.submit("urgent", "lqB", {"cpu": 1}, priority=10)
    [result] = world.run(1)
    decision = result.by_key[key]
    assert isinstance(decision, Preempt)
    assert [v.key for v in decision.victims] == [victim]
