"""``--compare`` patches: a Configuration merges onto the configuration, objects merge-patch."""

from __future__ import annotations

from pathlib import Path

from kq.simulate.model import parse_model
from kq.simulate.setup import load_setup, merge_patch, patched
from tests.simulate.helpers import FLAVOR, cluster_queue, local_queue, write_setup


def test_merge_patch_is_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_patch(target, {"a": {"b": None, "c": [3]}, "e": "x"}) == {
        "a": {"c": [3]},
        "d": 1,
        "e": "x",
    }


def test_patched_setup(tmp_path: Path) -> None:
    cq = cluster_queue("cq", 4, preemption={"withinClusterQueue": "LowerPriority"})
    base = load_setup([write_setup(tmp_path / "s.yaml", FLAVOR, cq, local_queue("cq"))])
    patch = tmp_path / "p.yaml"
    patch.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
        "fairSharing: {enable: true}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec: {queueingStrategy: StrictFIFO, preemption: null}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
        "metadata: {namespace: other, name: extra}\nspec: {clusterQueue: cq}\n"
    )
    model = parse_model(patched(base, patch))
    assert model.config.fair_sharing.enable
    patched_cq = model.cluster_queues["cq"]
    assert patched_cq.queueing_strategy == "StrictFIFO"
    assert patched_cq.preemption.within_cluster_queue == "Never"
    assert patched_cq.quotas[("default", "cpu")].nominal == 4000
    assert "other/extra" in model.local_queues
    # The base is left as it was.
    assert parse_model(base).cluster_queues["cq"].queueing_strategy == "BestEffortFIFO"
