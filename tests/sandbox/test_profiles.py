from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.profiles import ProfileError, load_profile, parse_profile
from tests.sandbox.builders import NOW


def _nodes(name: str) -> list[dict[str, Any]]:
    return node_objects(load_profile(name), NOW)


def test_s1_has_three_v5e_slices_of_two_hosts() -> None:
    tpu = [n for n in _nodes("s1") if "google.com/tpu" in n["status"]["capacity"]]
    assert len(tpu) == 6
    pools = {n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] for n in tpu}
    assert pools == {"nodepool1", "nodepool2", "nodepool3"}
    for node in tpu:
        labels = node["metadata"]["labels"]
        assert labels["cloud.google.com/gke-tpu-accelerator"] == "tpu-v5-lite-podslice"
        assert labels["cloud.google.com/gke-tpu-topology"] == "2x4"
        assert node["status"]["allocatable"]["google.com/tpu"] == "4"


def test_s2_has_four_v6e_slices_of_sixteen_chips() -> None:
    tpu = [n for n in _nodes("s2") if "google.com/tpu" in n["status"]["capacity"]]
    assert len(tpu) == 16
    assert {n["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] for n in tpu} == {"4x4"}


def test_s3_queued_pool_starts_empty_and_tainted() -> None:
    profile = load_profile("s3")
    pool = profile.pool("dws-pool")
    assert pool.queued_provisioning
    assert pool.count == 0
    assert {t["key"] for t in pool.taints} == {"cloud.google.com/gke-queued", "nvidia.com/gpu"}
    assert all("dws-pool" not in n["metadata"]["name"] for n in node_objects(profile, NOW))


def test_s4_spot_and_gpu_pools() -> None:
    profile = load_profile("s4")
    spot = profile.pool("spot-pool")
    assert spot.labels["cloud.google.com/gke-spot"] == "true"
    assert dict(spot.taints[0]) == {"key": "spot", "value": "true", "effect": "NoSchedule"}
    accelerators = {p.labels.get("cloud.google.com/gke-accelerator") for p in profile.pools}
    assert {"nvidia-tesla-a100", "nvidia-h100-80gb"} <= accelerators


def test_nodes_look_like_gke_nodes() -> None:
    node = _nodes("s1")[0]
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["topology.kubernetes.io/zone"] == "us-west4-a"
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.32.")
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"


def test_profile_file_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("nodePools: [{name: p, count: 3, capacity: {cpu: '2', memory: 1Gi}}]\n")
    profile = load_profile(path)
    assert [n["metadata"]["name"] for n in node_objects(profile, NOW)] == [
        "gke-p-0",
        "gke-p-1",
        "gke-p-2",
    ]
    assert profile.pool("p").allocatable["pods"] == "110"


@pytest.mark.parametrize(
    ("pool", "field"),
    [
        ({"count": 1, "capacity": {"cpu": "1", "memory": "1Gi"}}, "nodePools[0].name"),
        ({"name": "p", "capacity": {"cpu": "lots", "memory": "1Gi"}}, "nodePools[0].capacity.cpu"),
        ({"name": "p", "capacity": {"cpu": "1"}}, "nodePools[0].capacity.memory"),
        ({"name": "p", "count": -1, "capacity": {"cpu": "1", "memory": "1"}}, "nodePools[0].count"),
        ({"name": "p", "capacity": {"cpu": "1", "memory": "1"}, "taints": [{"key": "k"}]},
         "nodePools[0].taints[0].effect"),
        ({"name": "p", "capacity": {"cpu": "1", "memory": "1"}, "colour": "red"},
         "nodePools[0].colour"),
    ],
)  # fmt: skip
def test_validation_names_the_field(pool: dict[str, Any], field: str) -> None:
    with pytest.raises(ProfileError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_profile({"nodePools": [pool]}, "x.yaml")


def test_unknown_name_lists_builtins() -> None:
    with pytest.raises(ProfileError, match="s1, s2, s3, s4"):
        load_profile("nope")


def test_default_run_seconds() -> None:
    """S2's training containers declare no run time: its profile keeps them going for an hour."""
    assert load_profile("s2").default_run_seconds == 3600
    assert {load_profile(n).default_run_seconds for n in ("s1", "s3", "s4")} == {5}
    pools = [{"name": "p", "capacity": {"cpu": "1", "memory": "1Gi"}}]
    assert (
        parse_profile({"nodePools": pools, "defaultRunSeconds": 90}, "x").default_run_seconds == 90
    )
    for bad in (-1, "long", True):
        with pytest.raises(ProfileError, match=r"x\.yaml: defaultRunSeconds"):
            parse_profile({"nodePools": pools, "defaultRunSeconds": bad}, "x.yaml")
