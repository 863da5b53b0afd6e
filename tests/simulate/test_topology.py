"""Topology in the simulator: nodes from a NodePool or Node objects, placed by kq run's code."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit
from kq.simulate.engine import Engine, Listener
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup
from kq.simulate.source import InputError
from tests.simulate.helpers import local_queue, run_files, write_setup, write_trace

TPU = "google.com/tpu"
POOL_LABEL = "cloud.google.com/gke-nodepool"
TOPOLOGY = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology",
            "metadata": {"name": "tpu"},
            "spec": {"levels": [{"nodeLabel": POOL_LABEL},
                                {"nodeLabel": "kubernetes.io/hostname"}]}}  # fmt: skip
POOL = {"apiVersion": "simulate.kq.dev/v1alpha1", "kind": "NodePool",
        "metadata": {"name": "v5e"},
        "spec": {"nodes": 2, "slices": 3, "labels": {"tpu": "v5e"},
                 "allocatable": {"cpu": 112, TPU: 4}}}  # fmt: skip


def _flavor(topology: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": {"tpu": "v5e"}}
    if topology is not None:
        spec["topologyName"] = topology
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
            "metadata": {"name": "v5e"}, "spec": spec}  # fmt: skip


def _queue(chips: int) -> dict[str, Any]:
    group = {
        "coveredResources": [TPU],
        "flavors": [{"name": "v5e", "resources": [{"name": TPU, "nominalQuota": chips}]}],
    }
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [group]}}  # fmt: skip


def _slices(name: str, at: float, slices: int) -> dict[str, Any]:
    request = {"podSetSliceRequiredTopology": POOL_LABEL, "podSetSliceSize": 2}
    return {"name": name, "arrival": at, "queue": "default/cq", "runtime": 100,
            "count": 2 * slices, "requests": {TPU: 4}, "topologyRequest": request}  # fmt: skip


def _trace(tmp_path: Path, topology: bool = True) -> Path:
    jobs = [_slices("one", 0, 1), _slices("two", 1, 2), _slices("three", 2, 1)]
    if not topology:
        jobs = [{k: v for k, v in job.items() if k != "topologyRequest"} for job in jobs]
    return write_trace(tmp_path / "trace.yaml", jobs)


def test_slices_wait_for_a_free_node_pool_when_quota_would_allow(tmp_path: Path) -> None:
    """32 chips of quota but three 8-chip slices: the third 1-slice job waits for one."""
    setup = write_setup(tmp_path / "setup.yaml", TOPOLOGY, POOL, _flavor("tpu"), _queue(32),
                        local_queue("cq"))  # fmt: skip
    run = run_files(setup, _trace(tmp_path))
    admitted = {k: r.first_admission for k, r in run.recorder.workloads.items()}
    # one frees its slice at 100, and three, within the queue's own quota, is retried then.
    assert admitted == {"default/one": 0, "default/two": 1, "default/three": 100}
    assert run.pending == []
    assert run.core.cache.placements.by_node == {}  # all finished: every node released


def test_nodes_bind_where_quota_alone_would_not(tmp_path: Path) -> None:
    """The same trace on quota alone (no Topology, no nodes) admits the third job at once."""
    setup = write_setup(tmp_path / "setup.yaml", _flavor(None), _queue(32), local_queue("cq"))
    run = run_files(setup, _trace(tmp_path, topology=False))
    assert run.recorder.workloads["default/three"].first_admission == 2


def test_each_slice_gets_a_whole_node_pool_of_its_own(tmp_path: Path) -> None:
    setup = write_setup(tmp_path / "setup.yaml", TOPOLOGY, POOL, _flavor("tpu"), _queue(32),
                        local_queue("cq"))  # fmt: skip
    trace = write_trace(tmp_path / "trace.yaml", [_slices("one", 0, 1), _slices("two", 1, 2)])
    prepared = prepare("t", load_setup([setup]), trace)
    placed: dict[str, list[tuple[str, ...]]] = {}

    class Placements(Listener):
        def admitted(self, decision: Admit, now: float) -> None:
            for psa in decision.admission.pod_set_assignments:
                assert psa.topology is not None
                placed[decision.key] = [values for values, _ in psa.topology.domains]

    Engine(prepared.core.scheduler, prepared.arrivals, Placements()).run()
    pools = {key: {values[0] for values in domains} for key, domains in placed.items()}
    assert len(pools["default/one"]) == 1
    assert len(pools["default/two"]) == 2
    assert not pools["default/one"] & pools["default/two"]
    assert pools["default/one"] | pools["default/two"] == {"v5e-0", "v5e-1", "v5e-2"}


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        ((_flavor("tpu"),), "spec.topologyName: Topology tpu is not in the setup"),
        ((TOPOLOGY, _flavor("tpu")), "has Topology tpu, but the setup has no nodes"),
        (
            (TOPOLOGY, _flavor("tpu"), {**POOL, "spec": {"nodes": 0, "allocatable": {TPU: 4}}}),
            "NodePool spec.nodes: must be an integer >= 1, not 0",
        ),
        (
            (
                TOPOLOGY,
                _flavor("tpu"),
                {**POOL, "spec": {"nodes": 1, "allocatable": {TPU: 4}, "zones": 2}},
            ),
            "NodePool v5e: spec.zones: unknown field",
        ),
        (
            (
                TOPOLOGY,
                _flavor("tpu"),
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}},
            ),
            "Node n: status.allocatable: Required",
        ),
    ],
)
def test_bad_topology_input_is_refused(
    tmp_path: Path, objects: tuple[dict[str, Any], ...], expected: str
) -> None:
    setup = write_setup(tmp_path / "setup.yaml", *objects, _queue(8), local_queue("cq"))
    with pytest.raises(InputError, match=expected):
        prepare("t", load_setup([setup]), _trace(tmp_path))


class _NodeCheck(Listener):
    """After every cycle: no node holds more than it has, and no node pool holds pods of two
    workloads (every slice here is exclusive)."""

    def __init__(self, prepared: Any) -> None:
        self.cache = prepared.core.cache
        self.nodes = prepared.model.nodes
        self.checked = 0

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        owners: dict[str, set[str]] = {}
        for node, holders in self.cache.placements.by_node.items():
            used: dict[str, int] = {}
            for key, usage in holders.items():
                for resource, amount in usage.items():
                    used[resource] = used.get(resource, 0) + amount
                owners.setdefault(self.nodes[node].labels[POOL_LABEL], set()).add(key)
            for resource, amount in used.items():
                assert amount <= self.nodes[node].allocatable.get(resource, 0), (node, used)
        assert all(len(keys) == 1 for keys in owners.values()), owners
        self.checked += 1


@given(
    jobs=st.lists(
        st.tuples(st.integers(0, 300), st.integers(1, 3), st.integers(1, 200)),
        min_size=1,
        max_size=12,
    ),
    slices=st.integers(1, 4),
)
@settings(max_examples=40, deadline=None)
def test_nodes_are_never_overcommitted(jobs: list[tuple[int, int, int]], slices: int) -> None:
    """Whatever arrives, placements stay within each node and each slice alone in its pool;
    jobs wider than the pool never run, the others all finish."""
    pool = {**POOL, "spec": {**POOL["spec"], "slices": slices}}  # type: ignore[dict-item]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        setup = write_setup(work / "setup.yaml", TOPOLOGY, pool, _flavor("tpu"), _queue(96),
                            local_queue("cq"))  # fmt: skip
        entries = [
            {**_slices(f"j{i}", at, n), "runtime": runtime, "exclusiveTopology": POOL_LABEL}
            for i, (at, n, runtime) in enumerate(jobs)
        ]
        prepared = prepare("t", load_setup([setup]), write_trace(work / "trace.yaml", entries))
    check = _NodeCheck(prepared)
    engine = Engine(prepared.core.scheduler, prepared.arrivals, check)
    engine.run()
    assert check.checked > 0
    wide = {f"default/j{i}" for i, (_, n, _) in enumerate(jobs) if n > slices}
    assert set(engine.pending()) == wide
