"""A live cluster may hold a LocalQueue whose ClusterQueue is gone: the capture leaves it out
and says so, instead of handing the simulator a setup it refuses."""

from __future__ import annotations

from kq.simulate.capture import Captured, _drop_dangling


def test_local_queues_of_missing_cluster_queues_are_left_out_and_named() -> None:
    captured = Captured(
        objects=[
            {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {}},
            {"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "a"},
             "spec": {"clusterQueue": "cq"}},
            {"kind": "LocalQueue", "metadata": {"name": "old", "namespace": "b"},
             "spec": {"clusterQueue": "gone"}},
        ]
    )  # fmt: skip
    _drop_dangling(captured)
    assert [o["metadata"]["name"] for o in captured.objects] == ["cq", "lq"]
    assert captured.dangling == ["b/old (-> gone)"]
