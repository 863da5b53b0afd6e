"""deploy/helm/kq against an API server: the real kube-apiserver (`--backend=real`,
KQ_REALK8S=1; `make test` and `make test-helm`) and the embedded one.

`helm install --dry-run=server` renders against the server (every kind must be one it serves,
and Helm reads each object to see whether it exists), but sends no object to the server: a
wrong field or type passes it. So a server-side dry run of the rendered objects, as
tests/e2e/test_deploy.py does for deploy/, then puts each through the server's validation (strict
field validation) and admission. Only kq's namespace is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy_helm.helm import CHART, Helm, by_key, documents
from tests.harness import Cluster

# The defaults, and the dashboard on (its Service and RBAC).
VALUES = pytest.mark.parametrize(
    "values", [(), ("--set", "dashboard.enabled=true")], ids=["defaults", "dashboard"]
)


@VALUES
def test_helm_install_dry_run_server(cluster: Cluster, helm: Helm, values: tuple[str, ...]) -> None:
    # --take-ownership: other tests on this session's cluster (tests/e2e/test_deploy.py) apply
    # some of deploy/'s objects with kubectl; a first install on a fresh cluster needs none.
    done = helm.run(
        "install", "kq", str(CHART), "--dry-run=server", "--take-ownership",
        "--kubeconfig", str(cluster.kubeconfig), "--namespace", "default", *values,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "STATUS: pending-install" in done.stdout, done.stdout
    manifest = done.stdout.split("MANIFEST:", 1)[1].split("NOTES:", 1)[0]
    assert sorted(by_key(documents(manifest))) == sorted(by_key(helm.template(*values)))


@VALUES
def test_rendered_objects_pass_a_server_side_dry_run(
    cluster: Cluster, helm: Helm, kubectl_cache: Path, values: tuple[str, ...]
) -> None:
    rendered = helm.run("template", "kq", str(CHART), *values)

    assert rendered.returncode == 0, rendered.stderr
    objects = documents(rendered.stdout)
    # Namespaced objects need their namespace to exist for a dry run.
    [namespace] = [o for o in objects if o["kind"] == "Namespace"]
    done = cluster.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(namespace), cache_dir=kubectl_cache
    )
    assert done.returncode == 0, done.stderr
    done = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=rendered.stdout, cache_dir=kubectl_cache
    )
    assert done.returncode == 0, done.stderr
    applied = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(applied) == len(objects)
    assert all(line.endswith("(server dry run)") for line in applied), done.stdout
