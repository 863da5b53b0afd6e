"""deploy/helm/kq: lint, the defaults render what `kubectl kustomize deploy/` renders, the values
do what values.yaml says, and crds/ is what generate_crds.py writes."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kq.cli import build_parser
from kq.config_file import parse_config
from kq.dashboard.server import parse_address
from kq.webhooks.conversion import CONVERTED_CRDS
from tests.deploy_helm.helm import (
    CHART,
    DEPLOY,
    HELM_LABELS,
    Helm,
    by_key,
    comparable,
    documents,
)
from tests.harness import REPO

GENERATOR = REPO / "deploy" / "helm" / "generate_crds.py"
REGENERATE = "run `python deploy/helm/generate_crds.py` and commit the result"


def kustomized(directory: Path = DEPLOY) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return documents(done.stdout)


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return found


def configuration(objects: list[dict[str, Any]]) -> dict[str, Any]:
    text = one(objects, "ConfigMap", "kq-config")["data"]["config.yaml"]
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def test_lint(helm: Helm) -> None:
    done = helm.run("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def with_dashboard(tmp_path: Path) -> Path:
    """An overlay of deploy/ with the deploy/dashboard component, as deploy/README.md shows
    (kustomize takes only relative paths)."""
    overlay = tmp_path / "with-dashboard"
    overlay.mkdir()
    base = Path(os.path.relpath(DEPLOY, overlay))
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [str(base)], "components": [str(base / "dashboard")]})
    )
    return overlay


@pytest.mark.parametrize("dashboard", [False, True], ids=["defaults", "dashboard"])
def test_defaults_render_the_objects_kustomize_renders(
    helm: Helm, tmp_path: Path, dashboard: bool
) -> None:
    """Every object of `kubectl kustomize deploy/`, CRDs included, and nothing else; equal but
    for Helm's own labels and the key order of kq's configuration. With dashboard.enabled,
    those of deploy/ with its dashboard component."""
    on = ("--set", "dashboard.enabled=true") if dashboard else ()
    chart = by_key(helm.template("--include-crds", *on))
    deploy = by_key(kustomized(with_dashboard(tmp_path) if dashboard else DEPLOY))
    assert sorted(chart) == sorted(deploy), (
        f"only in the chart: {sorted(set(chart) - set(deploy))}; "
        f"only in deploy/: {sorted(set(deploy) - set(chart))}"
    )
    for key, obj in deploy.items():
        want, got = comparable(obj), comparable(chart[key])
        diff = "\n".join(
            difflib.unified_diff(
                yaml.safe_dump(want).splitlines(),
                yaml.safe_dump(got).splitlines(),
                "kubectl kustomize deploy/",
                "helm template",
                lineterm="",
            )
        )
        assert got == want, f"{key} differs (change deploy/helm/kq to follow deploy/):\n{diff}"


def test_every_templated_object_carries_helm_labels_and_no_more(helm: Helm) -> None:
    for obj in helm.template():
        labels = obj["metadata"]["labels"]
        assert set(labels) >= HELM_LABELS, obj["metadata"]["name"]
        assert labels["app.kubernetes.io/instance"] == "kq"


def test_the_default_configuration_is_one_kq_accepts(helm: Helm) -> None:
    config = parse_config(configuration(helm.template()))
    assert config.namespace == "kq-system"
    assert config.webhook.port == 9443
    assert config.frameworks == (
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "ray.io/rayjob",
        "kubeflow.org/mpijob",
        "pod",
        "deployment",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    )


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"replica": 3}, "replica"),
        ({"ports": {"health": "8081", "metrics": 8443, "webhook": 9443}}, "health"),
        ({"image": {"repository": "kq", "tag": "v1", "pullPolicy": "Sometimes"}}, "pullPolicy"),
        ({"webhooks": {"failurePolicy": "fail"}}, "failurePolicy"),
        ({"dashboard": {"enabled": "yes", "port": 8080}}, "enabled"),
    ],
)
def test_values_schema_refuses_what_the_chart_would_ignore(
    helm: Helm, tmp_path: Path, values: dict[str, Any], named: str
) -> None:
    """values.schema.json: a misspelt or mistyped value stops the install, naming it."""
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values))
    done = helm.run("template", "kq", str(CHART), "--values", str(file))
    assert done.returncode != 0
    assert "values don't meet the specifications of the schema" in done.stderr, done.stderr
    assert named in done.stderr, done.stderr


def test_values_change_what_they_say(helm: Helm, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "namespace": "batch-system",
                "createNamespace": False,
                "image": {"repository": "registry.example/kq", "tag": "v1", "pullPolicy": "Always"},
                "replicas": 3,
                "configuration": {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": True, "resourceName": "kq-lease"},
                    "waitForPodsReady": {"timeout": "5m"},
                    "webhook": {"certDir": "/certs"},
                    "visibilityServer": {"bindPort": 9082},
                },
                "integrations": {"frameworks": ["batch/job"]},
                "ports": {"health": 9081, "metrics": 9444, "webhook": 9445},
                "resources": {"requests": {"cpu": "1"}},
                "nodeSelector": {"pool": "system"},
                "tolerations": [{"key": "system", "operator": "Exists", "effect": "NoSchedule"}],
                "priorityClassName": "system-cluster-critical",
            }
        )
    )
    objects = helm.template("--values", str(values))
    assert not [o for o in objects if o["kind"] == "Namespace"]
    for obj in objects:
        if obj["metadata"].get("namespace") not in (None, "kube-system"):
            assert obj["metadata"]["namespace"] == "batch-system", obj["metadata"]["name"]

    config = parse_config(configuration(objects))
    assert config.namespace == "batch-system"
    assert config.frameworks == ("batch/job",)
    assert config.webhook.port == 9445
    assert config.webhook.cert_dir == "/certs"
    assert config.health.health_probe_bind_address == ":9081"
    assert config.metrics_bind_address == ":9444"
    assert config.wait_for_pods_ready.timeout == 300.0
    assert config.leader_election.resource_name == "kq-lease"

    spec = one(objects, "Deployment")["spec"]
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    assert spec["replicas"] == 3
    assert container["image"] == "registry.example/kq:v1"
    assert container["imagePullPolicy"] == "Always"
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "webhook": 9445,
        "metrics": 9444,
        "visibility": 9082,
        "health": 9081,
    }
    # Helm merges maps with the defaults: set a key to null to drop it.
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "512Mi"},
        "limits": {"cpu": "2", "memory": "1Gi"},
    }
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["certs"] == "/certs"
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == [{"key": "system", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["priorityClassName"] == "system-cluster-critical"

    [metrics_port] = one(objects, "Service", "kueue-controller-manager-metrics-service")["spec"][
        "ports"
    ]
    assert metrics_port["port"] == 9444
    role = one(objects, "Role")
    assert {"kq-lease"} in [set(r.get("resourceNames", ())) for r in role["rules"]]

    mutating = one(objects, "MutatingWebhookConfiguration")
    [jobs] = mutating["webhooks"]
    assert [r["resources"] for r in jobs["rules"]] == [["jobs"]]
    assert jobs["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "kube-system",
        "batch-system",
    ]
    for obj in (mutating, one(objects, "ValidatingWebhookConfiguration")):
        for hook in obj["webhooks"]:
            assert hook["clientConfig"]["service"]["namespace"] == "batch-system"


def test_the_dashboard_value_adds_the_flag_port_service_and_rules(helm: Helm) -> None:
    assert not [o for o in helm.template() if "dashboard" in o["metadata"]["name"]]
    objects = helm.template("--set", "dashboard.enabled=true", "--set", "dashboard.port=9090")
    [container] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    address = command[command.index("--dashboard-address") + 1]
    # kq run's own parser takes it, and it listens on every interface for the Service.
    args = build_parser(["run"]).parse_args(command[1:])
    assert parse_address(args.dashboard_address) == parse_address(address) == ("", 9090)
    assert {"name": "dashboard", "containerPort": 9090} in container["ports"]
    service = one(objects, "Service", "kq-dashboard")["spec"]
    assert service["type"] == "ClusterIP"
    assert service["ports"] == [{"name": "http", "port": 9090, "targetPort": "dashboard"}]
    assert service["selector"] == one(objects, "Deployment")["spec"]["selector"]["matchLabels"]
    rules = {
        (group, resource, verb)
        for rule in one(objects, "ClusterRole", "kq-dashboard-reader")["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert rules == {
        ("", "events", "list"),
        ("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads", "get"),
        ("visibility.kueue.x-k8s.io", "workloads/explanation", "get"),
    }
    binding = one(objects, "ClusterRoleBinding", "kq-dashboard-reader")
    assert binding["roleRef"]["name"] == "kq-dashboard-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kq-controller-manager", "namespace": "kq-system"}
    ]


def test_no_integrations_leave_only_kueue_webhooks(helm: Helm) -> None:
    objects = helm.template("--set-json", "integrations.frameworks=[]")
    assert one(objects, "MutatingWebhookConfiguration")["webhooks"] == []
    hooks = one(objects, "ValidatingWebhookConfiguration")["webhooks"]
    assert [h["name"] for h in hooks] == ["vkueue.kq.kueue.x-k8s.io"]
    assert parse_config(configuration(objects)).frameworks == ()


def test_a_serving_owner_without_pod_still_routes_its_pods(helm: Helm) -> None:
    """As upstream's implicitly enabled pod framework: a Deployment's pods must be gated."""
    objects = helm.template("--set-json", 'integrations.frameworks=["deployment"]')
    [mutating] = one(objects, "MutatingWebhookConfiguration")["webhooks"]
    assert [(r["resources"], r["operations"]) for r in mutating["rules"]] == [
        (["deployments"], ["CREATE", "UPDATE"]),
        (["pods"], ["CREATE"]),
    ]
    validating = one(objects, "ValidatingWebhookConfiguration")["webhooks"][0]
    assert [(r["resources"], r["operations"]) for r in validating["rules"]] == [
        (["deployments"], ["CREATE", "UPDATE"]),
        (["pods"], ["CREATE", "UPDATE"]),
    ]


def test_a_framework_without_a_kind_is_refused(helm: Helm) -> None:
    done = helm.run(
        "template", "kq", str(CHART), "--set-json", 'integrations.frameworks=["example.com/widget"]'
    )
    assert done.returncode != 0
    assert 'integrations.kinds has no apiGroup/apiVersion/resource for "example.com/widget"' in (
        done.stderr
    )


def test_crds_are_what_the_generator_writes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in (CHART / "crds").iterdir()), REGENERATE
    for name in written:
        expected = (tmp_path / name).read_text(encoding="utf-8")
        assert (CHART / "crds" / name).read_text(encoding="utf-8") == expected, (
            f"{name}: {REGENERATE}"
        )


def test_crds_convert_through_kq_webhook_in_the_default_namespace() -> None:
    crds = [d for p in (CHART / "crds").glob("*.yaml") for d in documents(p.read_text())]
    converted = {
        c["metadata"]["name"]: c["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
        for c in crds
        if c["spec"].get("conversion", {}).get("strategy") == "Webhook"
    }
    assert sorted(converted) == sorted(CONVERTED_CRDS)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for service in converted.values():
        assert service["namespace"] == values["namespace"]
        assert service["name"] == "kueue-webhook-service"


@pytest.mark.parametrize("namespace", ["kq-system", "batch-system"])
def test_notes_tell_how_to_repoint_the_crds_in_another_namespace(
    helm: Helm, namespace: str
) -> None:
    done = helm.run(
        "install", "kq", str(CHART), "--dry-run=client", "--set", f"namespace={namespace}"
    )
    assert done.returncode == 0, done.stderr
    assert f"kubectl get deploy -n {namespace} kq-controller-manager" in done.stdout
    assert ("/spec/conversion/webhook/clientConfig/service/namespace" in done.stdout) == (
        namespace != "kq-system"
    )
