"""``kq run`` as the conversion webhook of kueue.x-k8s.io: what kubectl writes in one version
reads back in the other with every field, and comes back unchanged when that version's client
writes it back.

The converted CRDs are set to Webhook conversion at a URL on ``kq run``'s webhook port, with
no caBundle: ``kq run`` puts its own CA there at start-up, as in a cluster installed from
deploy/. On the real kube-apiserver every conversion below goes through ``kq run``; the
embedded server converts in process whatever the CRDs say, so there the test checks the same
answers and the CA injection. ``kq run`` is kept a follower (another holder owns its lease):
any replica serves /convert, and no controller writes to the objects under test.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kq.config import LeaderElection
from kq.crds.conversion import ANNOTATION, GROUP, V1BETA1, V1BETA2, convert
from kq.runtime.events import rfc3339_micro
from kq.webhooks.conversion import CONVERT, CONVERTED_CRDS
from tests.apiserver.conversion_case import CASES, Case, contains, missing
from tests.apiserver.conversion_webhook import conversions
from tests.harness import Cluster, wait_until
from tests.kqrun import free_port, kq_run

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Converting:
    cluster: Cluster
    cache: Path
    namespace: str


def _kubectl(env: Converting, *args: str, stdin: str | None = None) -> str:
    done = env.cluster.kubectl(*args, input=stdin, cache_dir=env.cache)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _patch_crds(env: Converting, conversion: dict[str, dict[str, Any]]) -> None:
    for crd in CONVERTED_CRDS:
        patch = json.dumps({"spec": {"conversion": conversion[crd]}})
        _kubectl(env, "patch", "crd", crd, "--type=merge", "-p", patch)


def _held_lease(namespace: str) -> dict[str, Any]:
    """kq run's leader-election Lease, held by a replica that will not let go in this test."""
    now = rfc3339_micro()
    spec = {"holderIdentity": "another-replica", "leaseDurationSeconds": 3600,
            "acquireTime": now, "renewTime": now}  # fmt: skip
    metadata = {"name": LeaderElection().resource_name, "namespace": namespace}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": spec}  # fmt: skip


def _ca_bundles(env: Converting) -> set[str]:
    bundles = set()
    for crd in CONVERTED_CRDS:
        got = json.loads(_kubectl(env, "get", "crd", crd, "-o", "json"))
        config = got["spec"]["conversion"].get("webhook", {}).get("clientConfig", {})
        bundles.add(config.get("caBundle", ""))
    return bundles


def _converts(env: Converting) -> bool:
    """A v1beta1 ClusterQueue reads with v1beta2's field names (the API server picks the
    CRDs' new conversion up asynchronously)."""
    probe = f"probe-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": probe},
            "spec": {"cohort": "probe"}}  # fmt: skip
    _kubectl(env, "create", "-f", "-", stdin=json.dumps(body))
    try:
        got = env.cluster.kubectl("get", f"clusterqueues.v1beta2.{GROUP}", probe, "-o", "json",
                                  cache_dir=env.cache)  # fmt: skip
        return got.returncode == 0 and json.loads(got.stdout)["spec"].get("cohortName") == "probe"
    finally:
        _kubectl(env, "delete", "clusterqueue", probe)


def _wait_serving(env: Converting, ca_file: Path, log: Path) -> None:
    try:
        wait_until(ca_file.is_file, "kq run's CA")
        bundle = base64.b64encode(ca_file.read_bytes()).decode()
        wait_until(lambda: _ca_bundles(env) == {bundle}, "kq run's CA in the converted CRDs")
        wait_until(lambda: _converts(env), "conversion through kq run", interval=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nkq run's log:\n{log.read_text()[-4000:]}") from exc


@pytest.fixture(scope="module")
def converting(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Converting]:
    workdir = tmp_path_factory.mktemp("kq-run-conversion")
    env = Converting(cluster, workdir / "cache", f"convert-{uuid.uuid4().hex[:8]}")
    _kubectl(env, "create", "namespace", env.namespace)
    _kubectl(env, "create", "-f", "-", stdin=json.dumps(_held_lease(env.namespace)))
    port = free_port()
    url = f"https://127.0.0.1:{port}{CONVERT}"
    webhook = {"conversionReviewVersions": ["v1"], "clientConfig": {"url": url, "caBundle": None}}
    saved = conversions(cluster, env.cache, CONVERTED_CRDS)
    try:
        # Before kq run starts: it publishes its CA when it loads its certificate.
        at_kq_run = {"strategy": "Webhook", "webhook": webhook}
        _patch_crds(env, {crd: at_kq_run for crd in CONVERTED_CRDS})
        with kq_run(cluster, workdir / "run", env.namespace, webhook_port=port) as log:
            try:
                _wait_serving(env, workdir / "run" / "certs" / "ca.crt", log)
                yield env
            finally:
                # While kq run still serves: no request meets a webhook that is gone.
                _patch_crds(env, saved)
    finally:
        _patch_crds(env, saved)
        cluster.kubectl("delete", "namespace", env.namespace, "--wait=false", cache_dir=env.cache)


def _resource(case: Case, version: str) -> str:
    return f"{case.plural}.{version.rsplit('/', 1)[1]}.{GROUP}"


def _get(env: Converting, case: Case, version: str, name: str) -> dict[str, Any]:
    where = ["-n", env.namespace] if case.namespaced else []
    got: dict[str, Any] = json.loads(
        _kubectl(env, "get", _resource(case, version), name, *where, "-o", "json")
    )
    return got


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """What conversion is about: spec, status and annotations, the conversion record decoded
    (its JSON's key order follows whichever object it was taken from)."""
    annotations = dict(obj["metadata"].get("annotations") or {})
    if ANNOTATION in annotations:
        annotations[ANNOTATION] = json.loads(annotations[ANNOTATION])
    return {"spec": obj.get("spec"), "status": obj.get("status"), "annotations": annotations}


def _write(env: Converting, case: Case, name: str) -> dict[str, Any]:
    """``case``'s object created and its status patched, in its version, with kubectl."""
    metadata: dict[str, Any] = {"name": name}
    if case.namespaced:
        metadata["namespace"] = env.namespace
    body = {"apiVersion": case.version, "kind": case.kind, "metadata": metadata,
            "spec": case.spec}  # fmt: skip
    _kubectl(env, "create", "-f", "-", stdin=json.dumps(body))
    if case.status is not None:
        where = ["-n", env.namespace] if case.namespaced else []
        _kubectl(env, "patch", _resource(case, case.version), name, *where,
                 "--subresource=status", "--type=merge",
                 "-p", json.dumps({"status": case.status}))  # fmt: skip
    return {**body, "status": case.status} if case.status is not None else body


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.kind}-{c.version.rsplit('/')[-1]}")
def test_written_in_one_version_read_in_the_other_with_every_field(
    converting: Converting, case: Case
) -> None:
    env, name = converting, f"{case.plural[:-1]}-{uuid.uuid4().hex[:8]}"
    other = V1BETA2 if case.version == V1BETA1 else V1BETA1
    written = _write(env, case, name)
    try:
        own = _get(env, case, case.version, name)
        assert contains(own, written), own

        read = _get(env, case, other, name)
        assert read["apiVersion"] == other
        assert contains(read, case.expected), read
        assert missing(read, case.absent), read
        # Exactly kq's conversion, and what the other version cannot hold travels along.
        assert _content(read) == _content(convert(own, other))

        # A client of the other version writes back what it read: nothing is lost.
        _kubectl(env, "replace", "-f", "-", stdin=json.dumps(read))
        assert _content(_get(env, case, case.version, name)) == _content(own)
    finally:
        where = ["-n", env.namespace] if case.namespaced else []
        env.cluster.kubectl("delete", case.plural, name, *where, cache_dir=env.cache)
