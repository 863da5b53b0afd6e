"""kueue.x-k8s.io stored in v1beta2 (Kueue v0.19's storage version), served in both versions:
an object written in either version, read in the other and written back in it, reads back
in its own version with every field. On the real kube-apiserver the session's CRDs convert
through kq's webhook (``tests/realk8s/conversion.py``), the embedded server in process.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kq.crds.conversion import ANNOTATION, GROUP, V1BETA1, V1BETA2
from tests.apiserver.conversion_case import CASES, Case, contains
from tests.harness import Cluster


@pytest.fixture(scope="module")
def namespace(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    name = f"storage-{uuid.uuid4().hex[:8]}"
    cache = tmp_path_factory.mktemp("storage") / "cache"
    assert cluster.kubectl("create", "namespace", name, cache_dir=cache).returncode == 0
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", cache_dir=cache)


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    annotations = dict(obj["metadata"].get("annotations") or {})
    if ANNOTATION in annotations:
        annotations[ANNOTATION] = json.loads(annotations[ANNOTATION])
    return {"spec": obj.get("spec"), "status": obj.get("status"), "annotations": annotations}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.kind}-{c.version.rsplit('/')[-1]}")
def test_a_round_trip_through_the_other_version_keeps_every_field(
    cluster: Cluster, namespace: str, case: Case, tmp_path: Path
) -> None:
    name = f"{case.plural[:-1]}-{uuid.uuid4().hex[:8]}"
    where = ["-n", namespace] if case.namespaced else []
    other = V1BETA2 if case.version == V1BETA1 else V1BETA1

    def kubectl(*args: str, stdin: str | None = None) -> str:
        done = cluster.kubectl(*args, input=stdin, cache_dir=tmp_path / "cache")
        assert done.returncode == 0, done.stderr
        return done.stdout

    def get(version: str) -> dict[str, Any]:
        resource = f"{case.plural}.{version.rsplit('/', 1)[1]}.{GROUP}"
        got: dict[str, Any] = json.loads(kubectl("get", resource, name, *where, "-o", "json"))
        return got

    metadata = {"name": name, **({"namespace": namespace} if case.namespaced else {})}
    body = {"apiVersion": case.version, "kind": case.kind, "metadata": metadata,
            "spec": case.spec}  # fmt: skip
    kubectl("create", "-f", "-", stdin=json.dumps(body))
    try:
        if case.status is not None:
            resource = f"{case.plural}.{case.version.rsplit('/', 1)[1]}.{GROUP}"
            kubectl("patch", resource, name, *where, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": case.status}))  # fmt: skip
        own = get(case.version)
        written = {"spec": case.spec, **({"status": case.status} if case.status else {})}
        assert contains(own, written), own
        read = get(other)
        assert contains(read, case.expected), read
        kubectl("replace", "-f", "-", stdin=json.dumps(read))
        assert _content(get(case.version)) == _content(own)
    finally:
        cluster.kubectl("delete", case.plural, name, *where, cache_dir=tmp_path / "cache")
