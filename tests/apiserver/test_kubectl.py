"""The real kubectl against the server: apply, get, watch, describe, patch, delete, discovery."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.apiserver.conftest import kubectl_watching, unique, widget_crd
from tests.harness import Cluster


def _manifest(namespace: str, group: str, parallelism: int = 1, size: int = 3) -> str:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": namespace},
            "data": {"mode": "fast"},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "trainer", "namespace": namespace},
            "spec": {
                "parallelism": parallelism,
                "completions": 4,
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox:1.36",
                                "command": ["sh", "-c"],
                                "args": ["sleep 30"],
                                "resources": {"requests": {"cpu": "1"}},
                            }
                        ],
                    }
                },
            },
        },
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "gear", "namespace": namespace},
            "spec": {"size": size, "owner": "team-a"},
        },
    ]
    return yaml.safe_dump_all(docs)


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_version_reports_1_32_and_default_namespace(cluster: Cluster, kubectl_cache: Path) -> None:
    version = json.loads(_ok(cluster.kubectl("version", "-o", "json", cache_dir=kubectl_cache)))
    assert version["serverVersion"]["minor"].startswith("32")
    rows = _ok(cluster.kubectl("get", "ns", "default", cache_dir=kubectl_cache)).splitlines()
    assert rows[0].split() == ["NAME", "STATUS", "AGE"]
    assert rows[1].split()[:2] == ["default", "Active"]


def test_apply_multidocument_manifest_with_crd(
    cluster: Cluster, kubectl_cache: Path, tmp_path: Path, namespace: str
) -> None:
    group = f"{unique('g')}.kqtest.example.com"
    crd = yaml.safe_dump(widget_crd(group))
    path = tmp_path / "all.yaml"
    path.write_text(crd + "---\n" + _manifest(namespace, group))
    first = cluster.kubectl("apply", "-f", str(path), cache_dir=kubectl_cache)
    # As with a real server, kubectl maps every document before the CRD exists, so the
    # instances need a second pass ("ensure CRDs are installed first").
    assert f"customresourcedefinition.apiextensions.k8s.io/widgets.{group} created" in first.stdout
    assert "configmap/settings created" in first.stdout
    assert "job.batch/trainer created" in first.stdout
    if first.returncode != 0:
        assert 'no matches for kind "Widget"' in first.stderr
        _ok(cluster.kubectl("wait", "--for=condition=Established", f"crd/widgets.{group}",
                            cache_dir=kubectl_cache))  # fmt: skip
        second = _ok(cluster.kubectl("apply", "-f", str(path), cache_dir=kubectl_cache))
        assert f"widget.{group}/gear created" in second

    again = _ok(cluster.kubectl("apply", "-f", str(path), cache_dir=kubectl_cache))
    assert "job.batch/trainer unchanged" in again
    assert f"widget.{group}/gear unchanged" in again

    path.write_text(crd + "---\n" + _manifest(namespace, group, parallelism=2, size=5))
    changed = _ok(cluster.kubectl("apply", "-f", str(path), cache_dir=kubectl_cache))
    assert "job.batch/trainer configured" in changed
    assert f"widget.{group}/gear configured" in changed
    job = json.loads(
        _ok(
            cluster.kubectl(
                "get", "job", "trainer", "-n", namespace, "-o", "json", cache_dir=kubectl_cache
            )
        )
    )
    assert job["spec"]["parallelism"] == 2
    container = job["spec"]["template"]["spec"]["containers"][0]
    # The strategic merge patch kept what the patch did not mention.
    assert container["image"] == "busybox:1.36"
    assert container["resources"]["requests"]["cpu"] == "1"
    assert job["metadata"]["generation"] == 2

    table = _ok(
        cluster.kubectl("get", f"widgets.{group}", "-n", namespace, cache_dir=kubectl_cache)
    )
    header, row = table.splitlines()
    assert header.split() == ["NAME", "SIZE", "COLOR", "READY"]
    assert row.split() == ["gear", "5", "blue"]
    wide = _ok(cluster.kubectl("get", f"widgets.{group}", "-n", namespace, "-o", "wide",
                               cache_dir=kubectl_cache))  # fmt: skip
    assert wide.splitlines()[0].split() == ["NAME", "SIZE", "COLOR", "READY", "OWNER"]
    widget = yaml.safe_load(
        _ok(
            cluster.kubectl(
                "get",
                f"widgets.{group}",
                "gear",
                "-n",
                namespace,
                "-o",
                "yaml",
                cache_dir=kubectl_cache,
            )
        )
    )
    assert widget["spec"] == {"size": 5, "owner": "team-a", "color": "blue"}


def test_server_side_apply_creates_and_updates(
    cluster: Cluster, kubectl_cache: Path, tmp_path: Path, namespace: str, widget_group: str
) -> None:
    path = tmp_path / "ssa.yaml"
    path.write_text(_manifest(namespace, widget_group))
    out = _ok(cluster.kubectl("apply", "--server-side", "-f", str(path), cache_dir=kubectl_cache))
    assert out.count("serverside-applied") == 3
    path.write_text(_manifest(namespace, widget_group, parallelism=3, size=7))
    _ok(cluster.kubectl("apply", "--server-side", "-f", str(path), cache_dir=kubectl_cache))
    got = json.loads(
        _ok(
            cluster.kubectl(
                "get",
                f"job,widgets.{widget_group}",
                "-n",
                namespace,
                "-o",
                "json",
                "--show-managed-fields",
                cache_dir=kubectl_cache,
            )
        )
    )
    by_kind = {item["kind"]: item for item in got["items"]}
    assert by_kind["Job"]["spec"]["parallelism"] == 3
    assert by_kind["Widget"]["spec"]["size"] == 7
    managers = {m["manager"] for m in by_kind["Widget"]["metadata"]["managedFields"]}
    assert "kubectl" in managers

    # Another manager applying a conflicting value is refused unless forced.
    other = tmp_path / "other.yaml"
    other.write_text(
        yaml.safe_dump(
            {
                "apiVersion": f"{widget_group}/v1",
                "kind": "Widget",
                "metadata": {"name": "gear", "namespace": namespace},
                "spec": {"size": 9},
            }
        )
    )
    refused = cluster.kubectl("apply", "--server-side", "--field-manager=other", "-f", str(other),
                              cache_dir=kubectl_cache)  # fmt: skip
    assert refused.returncode != 0
    assert "conflict" in refused.stderr.lower()
    assert ".spec.size" in refused.stderr
    forced = cluster.kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts",
                             "-f", str(other), cache_dir=kubectl_cache)  # fmt: skip
    assert forced.returncode == 0, forced.stderr


def test_get_watch_prints_new_objects(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "KUBECACHEDIR": str(kubectl_cache)}
    watcher = subprocess.Popen(
        ["kubectl", "get", "configmaps", "-n", namespace, "-w", "--request-timeout=20s", "-v=6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert watcher.stdout is not None
        kubectl_watching(watcher)
        for name in ("cm-one", "cm-two"):
            _ok(cluster.kubectl("create", "configmap", name, "-n", namespace,
                                "--from-literal=k=v", cache_dir=kubectl_cache))  # fmt: skip
        seen: list[str] = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not {"cm-one", "cm-two"} <= set(seen):
            line = watcher.stdout.readline()
            if not line:
                break
            seen.append(line.split()[0])
        assert {"cm-one", "cm-two"} <= set(seen)
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_describe_shows_object_and_events(
    cluster: Cluster, kubectl_cache: Path, namespace: str, widget_group: str
) -> None:
    widget = {
        "apiVersion": f"{widget_group}/v1",
        "kind": "Widget",
        "metadata": {"name": "described", "namespace": namespace, "labels": {"tier": "gold"}},
        "spec": {"size": 2},
    }
    _ok(cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(widget), cache_dir=kubectl_cache))
    out = _ok(cluster.kubectl("describe", f"widgets.{widget_group}", "described", "-n", namespace,
                              cache_dir=kubectl_cache))  # fmt: skip
    assert "Name:" in out
    assert "described" in out
    assert "tier=gold" in out
    assert "Size:" in out
    job = _ok(cluster.kubectl("create", "job", "described-job", "--image=busybox", "-n", namespace,
                              cache_dir=kubectl_cache))  # fmt: skip
    assert "job.batch/described-job created" in job
    out = _ok(cluster.kubectl("describe", "job", "described-job", "-n", namespace,
                              cache_dir=kubectl_cache))  # fmt: skip
    assert "Pod Template:" in out


def test_patch_merge_json_and_strategic_on_crd(
    cluster: Cluster, kubectl_cache: Path, namespace: str, widget_group: str
) -> None:
    widget = {
        "apiVersion": f"{widget_group}/v1",
        "kind": "Widget",
        "metadata": {"name": "patched", "namespace": namespace},
        "spec": {"size": 1, "tags": ["a"]},
    }
    _ok(cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(widget), cache_dir=kubectl_cache))
    ref = ("widgets." + widget_group, "patched", "-n", namespace)
    out = _ok(cluster.kubectl("patch", *ref, "--type", "merge", "-p", '{"spec":{"size":4}}',
                              cache_dir=kubectl_cache))  # fmt: skip
    assert "patched" in out
    _ok(cluster.kubectl("patch", *ref, "--type", "json",
                        "-p", '[{"op":"add","path":"/spec/tags/-","value":"b"}]',
                        cache_dir=kubectl_cache))  # fmt: skip
    got = json.loads(_ok(cluster.kubectl("get", *ref, "-o", "json", cache_dir=kubectl_cache)))
    assert got["spec"]["size"] == 4
    assert got["spec"]["tags"] == ["a", "b"]
    failed = cluster.kubectl("patch", *ref, "--type", "json",
                             "-p", '[{"op":"test","path":"/spec/size","value":99}]',
                             cache_dir=kubectl_cache)  # fmt: skip
    assert failed.returncode != 0
    strategic = cluster.kubectl("patch", *ref, "-p", '{"spec":{"size":2}}', cache_dir=kubectl_cache)
    assert strategic.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in strategic.stderr
    status = cluster.kubectl(
        "patch", *ref, "--subresource=status", "--type=merge",
        "-p", '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
        cache_dir=kubectl_cache,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    table = _ok(cluster.kubectl("get", *ref, cache_dir=kubectl_cache))
    assert table.splitlines()[1].split() == ["patched", "4", "blue", "True"]


def test_delete_and_not_found(
    cluster: Cluster, kubectl_cache: Path, namespace: str, widget_group: str
) -> None:
    _ok(cluster.kubectl("create", "configmap", "doomed", "-n", namespace, cache_dir=kubectl_cache))
    out = _ok(cluster.kubectl("delete", "configmap", "doomed", "-n", namespace,
                              cache_dir=kubectl_cache))  # fmt: skip
    assert 'configmap "doomed" deleted' in out
    missing = cluster.kubectl(
        "get", "configmap", "doomed", "-n", namespace, cache_dir=kubectl_cache
    )
    assert missing.returncode == 1
    assert 'Error from server (NotFound): configmaps "doomed" not found' in missing.stderr

    widget = {
        "apiVersion": f"{widget_group}/v1",
        "kind": "Widget",
        "metadata": {"name": "held", "namespace": namespace, "finalizers": ["example.com/hold"]},
        "spec": {"size": 1},
    }
    ref = ("widgets." + widget_group, "held", "-n", namespace)
    _ok(cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(widget), cache_dir=kubectl_cache))
    _ok(cluster.kubectl("delete", *ref, "--wait=false", cache_dir=kubectl_cache))
    held = json.loads(_ok(cluster.kubectl("get", *ref, "-o", "json", cache_dir=kubectl_cache)))
    assert held["metadata"]["deletionTimestamp"]
    _ok(cluster.kubectl("patch", *ref, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                        cache_dir=kubectl_cache))  # fmt: skip
    gone = cluster.kubectl("get", *ref, cache_dir=kubectl_cache)
    assert gone.returncode == 1
    assert "NotFound" in gone.stderr


def test_api_resources_lists_builtins_and_crds(
    cluster: Cluster, kubectl_cache: Path, widget_group: str
) -> None:
    out = _ok(cluster.kubectl("api-resources", cache_dir=kubectl_cache))
    assert out.splitlines()[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = {tuple(line.split()) for line in out.splitlines()[1:]}
    assert ("pods", "po", "v1", "true", "Pod") in rows
    assert ("jobs", "batch/v1", "true", "Job") in rows
    assert ("widgets", f"{widget_group}/v1", "true", "Widget") in rows


def test_create_generators(cluster: Cluster, kubectl_cache: Path) -> None:
    name = unique("gen")
    _ok(cluster.kubectl("create", "namespace", name, cache_dir=kubectl_cache))
    try:
        for args in (
            ("configmap", "cfg", "--from-literal=a=1", "-n", name),
            ("secret", "generic", "sec", "--from-literal=b=2", "-n", name),
            ("job", "jb", "--image=busybox", "-n", name),
        ):
            assert "created" in _ok(cluster.kubectl("create", *args, cache_dir=kubectl_cache))
        secret = json.loads(_ok(cluster.kubectl("get", "secret", "sec", "-n", name, "-o", "json",
                                                cache_dir=kubectl_cache)))  # fmt: skip
        assert secret["data"] == {"b": "Mg=="}
        pc = f"{name}-pc"
        _ok(cluster.kubectl("create", "priorityclass", pc, "--value=1000", cache_dir=kubectl_cache))
        got = json.loads(_ok(cluster.kubectl("get", "priorityclass", pc, "-o", "json",
                                             cache_dir=kubectl_cache)))  # fmt: skip
        assert got["value"] == 1000
        _ok(cluster.kubectl("delete", "priorityclass", pc, cache_dir=kubectl_cache))
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", cache_dir=kubectl_cache)


def test_wait_for_condition(cluster: Cluster, kubectl_cache: Path, widget_group: str) -> None:
    ns = unique("wait")
    _ok(cluster.kubectl("create", "namespace", ns, cache_dir=kubectl_cache))
    widget = {
        "apiVersion": f"{widget_group}/v1",
        "kind": "Widget",
        "metadata": {"name": "awaited", "namespace": ns},
        "spec": {"size": 1},
    }
    _ok(cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(widget), cache_dir=kubectl_cache))
    ref = f"widgets.{widget_group}/awaited"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "KUBECACHEDIR": str(kubectl_cache)}
    waiter = subprocess.Popen(
        ["kubectl", "wait", "--for=condition=Ready", ref, "-n", ns, "--timeout=20s", "-v=6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    kubectl_watching(waiter)  # not yet Ready, so it watches
    _ok(cluster.kubectl("patch", ref, "-n", ns, "--subresource=status", "--type=merge",
                        "-p", '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
                        cache_dir=kubectl_cache))  # fmt: skip
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err
    assert "condition met" in out
    cluster.kubectl("delete", "namespace", ns, "--wait=false", cache_dir=kubectl_cache)


@pytest.mark.usefixtures("controllers")
def test_delete_namespace_waits_for_its_content(cluster: Cluster, kubectl_cache: Path) -> None:
    ns = unique("doomed")
    _ok(cluster.kubectl("create", "namespace", ns, cache_dir=kubectl_cache))
    _ok(cluster.kubectl("create", "configmap", "inside", "-n", ns, cache_dir=kubectl_cache))
    deleted = _ok(cluster.kubectl("delete", "namespace", ns, "--timeout=30s",
                                  cache_dir=kubectl_cache))  # fmt: skip
    assert f'namespace "{ns}" deleted' in deleted
    gone = cluster.kubectl("get", "namespace", ns, cache_dir=kubectl_cache)
    assert gone.returncode == 1
    assert "NotFound" in gone.stderr


def test_delete_by_file_and_generate_name(
    cluster: Cluster, kubectl_cache: Path, tmp_path: Path, namespace: str
) -> None:
    generated = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "gen-", "namespace": namespace},
    }
    out = _ok(cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(generated),
                              cache_dir=kubectl_cache))  # fmt: skip
    assert out.startswith("configmap/gen-")
    assert len(out.split()[0]) == len("configmap/gen-") + 5
    path = tmp_path / "cm.yaml"
    path.write_text(_manifest(namespace, "unused.example.com").split("---")[0])
    _ok(cluster.kubectl("apply", "-f", str(path), cache_dir=kubectl_cache))
    out = _ok(cluster.kubectl("delete", "-f", str(path), cache_dir=kubectl_cache))
    assert 'configmap "settings" deleted' in out
