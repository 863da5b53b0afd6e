"""deploy/: the manifests are valid on both API servers, and RBAC grants exactly what kq uses.

``USED`` lists every (API group, resource, verb) ``kq run`` needs, with where in the code the
request is made. Two guards keep it honest: every Resource constant the controller's code
imports from ``kq.runtime.resources`` must be in it, and so must the kind of every job
framework ``deploy/config.yaml`` enables. The ClusterRole and the Role must then grant
``USED`` and nothing else; on both API servers ``kubectl auth can-i`` confirms each grant
reaches the ServiceAccount.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kq.admissionchecks.registry import check_controllers
from kq.config import LeaderElection
from kq.config_file import parse_config
from kq.jobframework.registry import job_integrations
from kq.plugins import build_plugin_manager
from kq.runtime import resources
from kq.runtime.process import WEBHOOK_CONFIGURATIONS, WEBHOOK_SECRET, WEBHOOK_SERVICE
from kq.webhooks import MUTATE_JOBS, VALIDATE_JOBS, VALIDATE_KUEUE
from kq.webhooks.conversion import CONVERT, CONVERTED_CRDS
from tests.harness import REPO, Cluster

DEPLOY = REPO / "deploy"
NAMESPACE = "kq-system"
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:kq-controller-manager"
LEASE = LeaderElection().resource_name


@dataclass(frozen=True)
class Use:
    group: str
    resource: str
    verbs: tuple[str, ...]
    names: tuple[str, ...] = ()
    """Only these objects (resourceNames); empty means any."""
    namespaced: bool = False
    """Only in kq's own namespace (a Role), rather than cluster-wide."""


INFORMED = ("list", "watch")
USED = (
    # Informers: kq/runtime/process.py build_manager, kq/controllers/admission.py WATCHED,
    # kq/jobframework/controller.py (the caches and one informer per served job kind).
    Use("", "namespaces", INFORMED),
    # LimitRange defaults and bounds of pending workloads (kq/controllers/feed.py).
    Use("", "limitranges", INFORMED),
    # Topology-aware admission counts nodes; the ungater and hot-swap pin and fail TAS pods
    # (kq/controllers/topology_feed.py, kq/controllers/pods.py, kq/controllers/hotswap.py).
    Use("", "nodes", INFORMED),
    # The pod framework also deletes the pods it stops (plugins/kq_plugins/jobs/pod.py).
    Use("", "pods", ("delete", "list", "patch", "watch")),
    Use("", "pods/status", ("patch",)),
    Use("scheduling.k8s.io", "priorityclasses", INFORMED),
    *(
        Use("kueue.x-k8s.io", r.plural, INFORMED)
        for r in resources.KUEUE_KINDS
        if r is not resources.WORKLOADS
    ),
    # Workloads: created, deleted and patched (finalizer, spec) by kq/jobframework/io_apply.py.
    Use("kueue.x-k8s.io", "workloads", ("create", "delete", "list", "patch", "watch")),
    # Status: admission and eviction (kq/controllers/writer.py, kq/jobframework/io_apply.py),
    # queue status (kq/controllers/queue_status.py).
    Use("kueue.x-k8s.io", "workloads/status", ("patch",)),
    Use("kueue.x-k8s.io", "clusterqueues/status", ("patch",)),
    Use("kueue.x-k8s.io", "localqueues/status", ("patch",)),
    # Fair sharing's weightedShare (kq/controllers/queue_status.py).
    Use("kueue.x-k8s.io", "cohorts/status", ("patch",)),
    # The Active condition kq writes from each check controller's activity
    # (kq/admissionchecks).
    Use("kueue.x-k8s.io", "admissionchecks/status", ("patch",)),
    # The provisioning admission check (plugins/kq_plugins/checks/provisioning.py): it reads
    # through informers, creates and deletes requests and their PodTemplates, and hands each
    # template to its request by patching ownerReferences.
    Use("autoscaling.x-k8s.io", "provisioningrequests", ("create", "delete", "list", "watch")),
    Use("", "podtemplates", ("create", "delete", "list", "patch", "watch")),
    # Jobs: suspended and started by merge patch (kq/jobframework/io_apply.py); a batch Job's
    # stop also clears status.startTime (plugins/kq_plugins/jobs/batch_job.py).
    Use("batch", "jobs", ("list", "patch", "watch")),
    Use("batch", "jobs/status", ("patch",)),
    Use("jobset.x-k8s.io", "jobsets", ("list", "patch", "watch")),
    Use("ray.io", "rayjobs", ("list", "patch", "watch")),
    Use("kubeflow.org", "mpijobs", ("list", "patch", "watch")),
    # Serving owners: only watched; their pods are the jobs (plugins/kq_plugins/jobs/serving.py).
    Use("apps", "deployments", INFORMED),
    Use("apps", "statefulsets", INFORMED),
    Use("leaderworkerset.x-k8s.io", "leaderworkersets", INFORMED),
    # The budgets plugin reads Budgets and writes each one's ledger into its status
    # (plugins/kq_plugins/budgets/controller.py).
    Use("kq.dev", "budgets", ("list", "watch")),
    Use("kq.dev", "budgets/status", ("patch",)),
    # kq/runtime/events.py
    Use("", "events", ("create",)),
    # kq/runtime/metrics_server.py: who scrapes /metrics, and may they.
    Use("authentication.k8s.io", "tokenreviews", ("create",)),
    Use("authorization.k8s.io", "subjectaccessreviews", ("create",)),
    # kq/runtime/identity.py: who kq is, for the status.admission webhook.
    Use("authentication.k8s.io", "selfsubjectreviews", ("create",)),
    # kq/runtime/certs.py inject_ca_bundle: read-modify-write of its own configurations.
    Use(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        ("get", "update"),
        WEBHOOK_CONFIGURATIONS,
    ),
    Use(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        ("get", "update"),
        WEBHOOK_CONFIGURATIONS,
    ),
    # kq/runtime/certs.py inject_conversion_ca_bundle: the CRDs that call kq's /convert.
    Use("apiextensions.k8s.io", "customresourcedefinitions", ("get", "update"), CONVERTED_CRDS),
    # kq/runtime/leader.py: get, else create; renew by update.
    Use("coordination.k8s.io", "leases", ("create",), namespaced=True),
    Use(
        "coordination.k8s.io",
        "leases",
        ("get", "update"),
        (LEASE,),
        namespaced=True,
    ),
    # kq/runtime/certs.py provision_from_secret: get, else create; renew by update.
    Use("", "secrets", ("create",), namespaced=True),
    Use("", "secrets", ("get", "update"), (WEBHOOK_SECRET,), namespaced=True),
)


# What the dashboard (kq/dashboard/gather.py) reads besides USED, which the component
# deploy/dashboard grants when it is on: Workloads' Events for the timeline, and the
# visibility API through the API server's aggregation.
DASHBOARD = DEPLOY / "dashboard"
DASHBOARD_USED = (
    Use("", "events", ("list",)),
    Use("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads", ("get",)),
    Use("visibility.kueue.x-k8s.io", "workloads/explanation", ("get",)),
)


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def grants(path: Path = DEPLOY / "rbac.yaml") -> set[tuple[str, str, str, tuple[str, ...], bool]]:
    """(group, resource, verb, resourceNames, namespaced) for every rule in ``path``."""
    out = set()
    for doc in documents(path):
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        namespaced = doc["kind"] == "Role"
        assert not namespaced or doc["metadata"]["namespace"] == NAMESPACE
        for rule in doc["rules"]:
            names = tuple(sorted(rule.get("resourceNames") or ()))
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((group, resource, verb, names, namespaced))
    return out


def used(uses: tuple[Use, ...] = USED) -> set[tuple[str, str, str, tuple[str, ...], bool]]:
    return {
        (u.group, u.resource, verb, tuple(sorted(u.names)), u.namespaced)
        for u in uses
        for verb in u.verbs
    }


def test_rbac_grants_exactly_what_kq_uses() -> None:
    assert grants() == used()


def test_the_dashboard_component_grants_exactly_what_the_dashboard_reads_besides() -> None:
    assert grants(DASHBOARD / "dashboard.yaml") == used(DASHBOARD_USED)
    # Every kind it lists is listable with the component on, and it asks the visibility API
    # for no other subresource than those DASHBOARD_USED names.
    listed = {(u.group, u.resource) for u in (*USED, *DASHBOARD_USED) if "list" in u.verbs}
    source = (REPO / "kq" / "dashboard" / "gather.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "kq.runtime.resources":
            for alias in node.names:
                value = getattr(resources, alias.name)
                if isinstance(value, resources.Resource):
                    assert (value.group, value.plural) in listed, alias.name
    # Its visibility paths end in the subresource: .../NAME}/pendingworkloads".
    asked = set(re.findall(r'\}/([a-z]+)"', source))
    subresources = [u.resource.split("/") for u in DASHBOARD_USED if "/" in u.resource]
    assert asked == {sub for _, sub in subresources}
    assert all(f"/{parent}/" in source for parent, _ in subresources)


def controller_sources() -> list[Path]:
    """The code ``kq run`` executes: kq/ and the built-in plugins, minus the sandbox."""
    files = [*(REPO / "kq").rglob("*.py"), *(REPO / "plugins").rglob("*.py")]
    return [f for f in files if "sandbox" not in f.parts and "crds" not in f.parts]


def imported_resources() -> set[tuple[str, str]]:
    """(group, plural) of every Resource constant imported from kq.runtime.resources."""
    found = set()
    for path in controller_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "kq.runtime.resources":
                for alias in node.names:
                    value = getattr(resources, alias.name)
                    values = value if isinstance(value, tuple) else (value,)
                    found |= {
                        (r.group, r.plural) for r in values if isinstance(r, resources.Resource)
                    }
    return found


def test_every_resource_the_code_names_is_accounted_for() -> None:
    accounted = {(u.group, u.resource) for u in USED}
    missing = imported_resources() - accounted
    assert not missing, f"kq uses {sorted(missing)}: add them to USED and deploy/rbac.yaml"


def test_every_kind_an_admission_check_controller_watches_is_informed() -> None:
    informed = {(u.group, u.resource) for u in USED if set(INFORMED) <= set(u.verbs)}
    for controller in check_controllers(build_plugin_manager()).values():
        for resource in controller.WATCHES:
            assert (resource.group, resource.plural) in informed, controller.CONTROLLER_NAME


def test_every_enabled_job_framework_is_accounted_for() -> None:
    [configmap] = documents(DEPLOY / "config.yaml")
    config = parse_config(yaml.safe_load(configmap["data"]["config.yaml"]))
    assert config.namespace == NAMESPACE
    plurals = {
        ("batch", "Job"): "jobs",
        ("", "Pod"): "pods",
        ("apps", "Deployment"): "deployments",
        ("apps", "StatefulSet"): "statefulsets",
    }
    for path in (DEPLOY / "crds").glob("*.yaml"):
        for crd in documents(path):
            plurals[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd["spec"]["names"][
                "plural"
            ]
    integrations = job_integrations(build_plugin_manager())
    webhook_rules = {
        (rule["apiGroups"][0], rule["apiVersions"][0], rule["resources"][0])
        for doc in documents(DEPLOY / "webhooks.yaml")
        for hook in doc["webhooks"]
        for rule in hook["rules"]
        if hook["clientConfig"]["service"]["path"] != "/validate/kueue"
    }
    for framework in config.frameworks:
        gvk = integrations[framework].GVK
        plural = plurals[(gvk.group, gvk.kind)]
        # A serving owner is never written: the pod framework it enables patches its pods.
        owner = bool(getattr(integrations[framework], "IMPLICITLY_ENABLES", ()))
        needed = {"list", "watch"} if owner else {"list", "watch", "patch"}
        assert needed <= {
            verb for u in USED if (u.group, u.resource) == (gvk.group, plural) for verb in u.verbs
        }, framework
        assert (gvk.group, gvk.version, plural) in webhook_rules, framework


def test_webhooks_point_at_the_paths_and_names_kq_serves() -> None:
    docs = documents(DEPLOY / "webhooks.yaml")
    assert sorted(d["metadata"]["name"] for d in docs) == sorted(WEBHOOK_CONFIGURATIONS)
    paths = {
        (doc["kind"], hook["clientConfig"]["service"]["path"]): hook
        for doc in docs
        for hook in doc["webhooks"]
    }
    assert set(paths) == {
        ("MutatingWebhookConfiguration", MUTATE_JOBS),
        ("ValidatingWebhookConfiguration", VALIDATE_JOBS),
        ("ValidatingWebhookConfiguration", VALIDATE_KUEUE),
    }
    for hook in paths.values():
        assert hook["clientConfig"]["service"]["name"] == WEBHOOK_SERVICE
        assert hook["clientConfig"]["service"]["namespace"] == NAMESPACE
    [service] = documents(DEPLOY / "webhook-service.yaml")
    assert service["metadata"]["name"] == WEBHOOK_SERVICE


def _versions_differ(crd: dict[str, Any]) -> bool:
    schemas = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]]
    return any(schema != schemas[0] for schema in schemas)


def test_crds_whose_versions_differ_convert_through_kq_webhook() -> None:
    """The kustomization sets Webhook conversion on exactly the CRDs ``kq run`` puts its CA
    into, and points it at ``/convert`` on the webhook Service; the others need none."""
    done = subprocess.run(
        ["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    [service] = documents(DEPLOY / "webhook-service.yaml")
    [port] = [p["port"] for p in service["spec"]["ports"]]
    webhook = {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {
                "service": {
                    "name": WEBHOOK_SERVICE,
                    "namespace": NAMESPACE,
                    "path": CONVERT,
                    "port": port,
                }
            },
        },
    }
    differ = {c["metadata"]["name"] for c in crds if _versions_differ(c)}
    assert differ == set(CONVERTED_CRDS)
    for crd in crds:
        expected = webhook if crd["metadata"]["name"] in differ else None
        assert crd["spec"].get("conversion") == expected, crd["metadata"]["name"]


@pytest.fixture
def kq_namespace(cluster: Cluster, kubectl_cache: Path) -> Cluster:
    """Server-side dry runs of namespaced objects need their namespace to exist."""
    done = cluster.kubectl("apply", "-f", str(DEPLOY / "namespace.yaml"), cache_dir=kubectl_cache)
    assert done.returncode == 0, done.stderr
    return cluster


def test_deploy_applies_with_a_server_side_dry_run(
    kq_namespace: Cluster, kubectl_cache: Path
) -> None:
    documents = [d for d in yaml.safe_load_all(kustomized(kq_namespace, kubectl_cache)) if d]
    for document in documents:
        # The real test plane's CRDs call its conversion webhook by URL, which deploy/'s
        # Service must replace (a CRD's webhook names one or the other): said explicitly, as
        # kubectl's three-way merge drops only what it applied itself.
        if document["metadata"]["name"] in CONVERTED_CRDS:
            document["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = None
    done = kq_namespace.kubectl(
        "apply", "-f", "-", "--dry-run=server", input=yaml.safe_dump_all(documents),
        cache_dir=kubectl_cache,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    applied = [line for line in done.stdout.splitlines() if line.strip()]
    expected = len(documents)
    assert len(applied) == expected
    assert all(line.endswith("(server dry run)") for line in applied), done.stdout


def kustomized(cluster: Cluster, cache: Path) -> str:
    done = cluster.kubectl("kustomize", str(DEPLOY), cache_dir=cache)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_service_account_gets_each_grant(kq_namespace: Cluster, kubectl_cache: Path) -> None:
    for name in ("service-account.yaml", "rbac.yaml"):
        done = kq_namespace.kubectl("apply", "-f", str(DEPLOY / name), cache_dir=kubectl_cache)
        assert done.returncode == 0, done.stderr

    def can(*args: str, namespace: str = "default") -> bool:
        done = kq_namespace.kubectl(
            "auth", "can-i", *args, "-n", namespace, f"--as={SERVICE_ACCOUNT}",
            cache_dir=kubectl_cache,
        )  # fmt: skip
        return done.stdout.strip() == "yes"

    for use in USED:
        resource, _, sub = use.resource.partition("/")
        target = f"{resource}.{use.group}" if use.group else resource
        namespace = NAMESPACE if use.namespaced else "default"
        for name in use.names or ("",):
            for verb in use.verbs:
                args = [verb, f"{target}/{name}" if name else target]
                if sub:
                    args.append(f"--subresource={sub}")
                assert can(*args, namespace=namespace), args
    assert not can("delete", "jobs.batch")
    assert not can("get", "secrets")
    assert not can("create", "leases.coordination.k8s.io")
    assert not can("update", "mutatingwebhookconfigurations.admissionregistration.k8s.io/other")


def test_with_the_dashboard_the_service_account_gets_its_reads(
    kq_namespace: Cluster, kubectl_cache: Path
) -> None:
    for path in (DEPLOY / "service-account.yaml", DASHBOARD / "dashboard.yaml"):
        done = kq_namespace.kubectl("apply", "-f", str(path), cache_dir=kubectl_cache)
        assert done.returncode == 0, done.stderr

    # A SubjectAccessReview rather than `kubectl auth can-i`, which cannot name a subresource
    # of a group the server does not serve yet (the visibility API comes with kq run).
    def can(group: str, resource: str, verb: str) -> bool:
        plural, _, sub = resource.partition("/")
        attributes = {"group": group, "resource": plural, "subresource": sub, "verb": verb}
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": SERVICE_ACCOUNT, "resourceAttributes": attributes},
        }
        done = kq_namespace.kubectl(
            "create", "-o", "json", "-f", "-", input=json.dumps(review), cache_dir=kubectl_cache
        )
        assert done.returncode == 0, done.stderr
        return bool(json.loads(done.stdout)["status"].get("allowed"))

    for use in DASHBOARD_USED:
        for verb in use.verbs:
            assert can(use.group, use.resource, verb), use
    assert not can("", "events", "get")
    assert not can("visibility.kueue.x-k8s.io", "clusterqueues/other", "get")
