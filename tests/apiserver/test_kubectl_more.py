"""More kubectl behaviours, asserted identically for the embedded and the real server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.apiserver.conftest import kubectl_watching
from tests.harness import Cluster


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_builtin_tables(cluster: Cluster, kubectl_cache: Path, namespace: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "tabled", "namespace": namespace},
        "spec": {"containers": [{"name": "a", "image": "img-a"}, {"name": "b", "image": "img-b"}]},
    }
    created = _ok(cluster.kubectl("create", "-f", "-", "-o", "json", input=yaml.safe_dump(pod),
                                  cache_dir=kubectl_cache))  # fmt: skip
    uid = json.loads(created)["metadata"]["uid"]
    rows = _rows(_ok(cluster.kubectl("get", "pods", "-n", namespace, cache_dir=kubectl_cache)))
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:4] == ["tabled", "0/2", "Pending", "0"]
    wide = _rows(_ok(cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide",
                                     cache_dir=kubectl_cache)))  # fmt: skip
    assert wide[0][5:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    _ok(cluster.kubectl("create", "job", "tj", "--image=busybox", "-n", namespace,
                        cache_dir=kubectl_cache))  # fmt: skip
    rows = _rows(_ok(cluster.kubectl("get", "jobs", "-n", namespace, cache_dir=kubectl_cache)))
    assert rows[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert rows[1][:3] == ["tj", "Running", "0/1"]
    _ok(cluster.kubectl("create", "configmap", "two", "--from-literal=a=1", "--from-literal=b=2",
                        "-n", namespace, cache_dir=kubectl_cache))  # fmt: skip
    rows = _rows(_ok(cluster.kubectl("get", "cm", "two", "-n", namespace, cache_dir=kubectl_cache)))
    assert rows[0] == ["NAME", "DATA", "AGE"]
    assert rows[1][:2] == ["two", "2"]
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "tabled.1", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "tabled", "namespace": namespace, "uid": uid},
        "reason": "Scheduled",
        "message": "assigned somewhere",
        "type": "Normal",
    }
    _ok(cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(event), cache_dir=kubectl_cache))
    rows = _rows(_ok(cluster.kubectl("get", "events", "-n", namespace, cache_dir=kubectl_cache)))
    assert rows[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert rows[1][1:4] == ["Normal", "Scheduled", "pod/tabled"]
    described = _ok(cluster.kubectl("describe", "pod", "tabled", "-n", namespace,
                                    cache_dir=kubectl_cache))  # fmt: skip
    assert "Scheduled" in described
    assert "assigned somewhere" in described


def test_label_annotate_selectors_and_delete_all(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    for name, tier in (("l1", "gold"), ("l2", "silver"), ("l3", "bronze")):
        _ok(cluster.kubectl("create", "configmap", name, "-n", namespace, cache_dir=kubectl_cache))
        _ok(cluster.kubectl("label", "configmap", name, f"tier={tier}", "-n", namespace,
                            cache_dir=kubectl_cache))  # fmt: skip
    out = _ok(cluster.kubectl("annotate", "configmap", "l1", "note=hi", "-n", namespace,
                              cache_dir=kubectl_cache))  # fmt: skip
    assert "configmap/l1 annotated" in out
    names = _ok(cluster.kubectl("get", "cm", "-n", namespace, "-l", "tier in (gold,silver)",
                                "-o", "name", cache_dir=kubectl_cache))  # fmt: skip
    assert names.split() == ["configmap/l1", "configmap/l2"]
    names = _ok(cluster.kubectl("get", "cm", "-n", namespace, "-l", "tier,tier!=gold",
                                "-o", "name", cache_dir=kubectl_cache))  # fmt: skip
    assert names.split() == ["configmap/l2", "configmap/l3"]
    shown = _ok(cluster.kubectl("get", "cm", "l1", "-n", namespace, "--show-labels", "-L", "tier",
                                cache_dir=kubectl_cache))  # fmt: skip
    assert "tier=gold" in shown
    out = _ok(cluster.kubectl("delete", "cm", "-l", "tier", "-n", namespace,
                              cache_dir=kubectl_cache))  # fmt: skip
    assert out.count("deleted") == 3
    left = _ok(cluster.kubectl("get", "cm", "-n", namespace, "-l", "tier", "-o", "name",
                               cache_dir=kubectl_cache))  # fmt: skip
    assert left == ""


def test_dry_run_server_persists_nothing(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    out = _ok(cluster.kubectl("create", "configmap", "dry", "-n", namespace, "--dry-run=server",
                              "-o", "json", cache_dir=kubectl_cache))  # fmt: skip
    assert json.loads(out)["metadata"]["name"] == "dry"
    missing = cluster.kubectl("get", "cm", "dry", "-n", namespace, cache_dir=kubectl_cache)
    assert missing.returncode == 1


def test_server_side_apply_after_client_side_apply(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "migrated", "namespace": namespace},
        "data": {"a": "1", "b": "2"},
    }
    _ok(cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc), cache_dir=kubectl_cache))
    del doc["data"]["b"]
    doc["data"]["c"] = "3"
    out = _ok(cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(doc),
                              cache_dir=kubectl_cache))  # fmt: skip
    assert "configmap/migrated serverside-applied" in out
    got = json.loads(_ok(cluster.kubectl("get", "cm", "migrated", "-n", namespace, "-o", "json",
                                         cache_dir=kubectl_cache)))  # fmt: skip
    assert got["data"]["a"] == "1"
    assert got["data"]["c"] == "3"


def test_watch_table_shows_modifications(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    _ok(cluster.kubectl("create", "configmap", "watched", "-n", namespace, cache_dir=kubectl_cache))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "KUBECACHEDIR": str(kubectl_cache)}
    watcher = subprocess.Popen(
        ["kubectl", "get", "cm", "watched", "-n", namespace, "-w", "--output-watch-events", "-v=6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert watcher.stdout is not None
        lines = [watcher.stdout.readline(), watcher.stdout.readline()]
        kubectl_watching(watcher)
        _ok(cluster.kubectl("label", "cm", "watched", "x=y", "-n", namespace,
                            cache_dir=kubectl_cache))  # fmt: skip
        _ok(cluster.kubectl("delete", "cm", "watched", "-n", namespace, cache_dir=kubectl_cache))
        lines += [watcher.stdout.readline(), watcher.stdout.readline()]
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
    assert lines[0].split() == ["EVENT", "NAME", "DATA", "AGE"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["ADDED", "watched"],
        ["MODIFIED", "watched"],
        ["DELETED", "watched"],
    ]


def test_big_object_needs_server_side_apply(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": namespace},
        "data": {"blob": "x" * 300_000},
    }
    client_side = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc),
                                  cache_dir=kubectl_cache)  # fmt: skip
    assert client_side.returncode == 1
    assert "metadata.annotations: Too long" in client_side.stderr
    assert "262144 bytes" in client_side.stderr
    server_side = cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(doc),
                                  cache_dir=kubectl_cache)  # fmt: skip
    assert server_side.returncode == 0, server_side.stderr
