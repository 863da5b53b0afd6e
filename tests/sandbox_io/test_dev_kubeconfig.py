"""``kq dev --kubeconfig``: the simulated cluster and kq on an API server kq dev does not serve.

On both backends the server is the session's (``kq apiserver``, or the real kube-apiserver): a
Job is queued through kq's webhooks while kq dev runs, and once it stops the server takes Jobs
again without them. The end-to-end stories (``tests/e2e``) cover the rest on that path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.kqdev import kq_dev
from tests.e2e.traces import no_trace
from tests.harness import REPO, Cluster, wait_until

CONFIGURATIONS = "mutatingwebhookconfigurations,validatingwebhookconfigurations"
KQ_DEV_WEBHOOKS = {
    "mutatingwebhookconfiguration.admissionregistration.k8s.io/kueue-mutating-webhook-configuration",
    "validatingwebhookconfiguration.admissionregistration.k8s.io/kueue-validating-webhook-configuration",
}  # fmt: skip

pytestmark = pytest.mark.slow


def _job(queue: str) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "probe", "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "command": ["true"]}]}}},
    })  # fmt: skip


def test_fresh_is_refused_the_state_is_in_the_server(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kq", "dev", "--kubeconfig", str(tmp_path / "kubeconfig"),
         "--fresh", "--data-dir", str(tmp_path / "dev")],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "no --fresh" in done.stderr
    assert not (tmp_path / "dev").exists()


def test_it_queues_jobs_while_it_runs_and_leaves_the_server_usable(
    cluster: Cluster, tmp_path: Path
) -> None:
    cache = tmp_path / "kubectl-cache"

    def kubectl(*args: str, input: str | None = None) -> str:
        done = cluster.kubectl(*args, input=input, cache_dir=cache)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def configurations() -> set[str]:
        return set(kubectl("get", CONFIGURATIONS, "-o", "name").split())

    dry_run = ("create", "-f", "-", "--dry-run=server", "-n", "default", "-o", "json")
    with no_trace(cluster, tmp_path / "cleanup-cache"):
        with kq_dev(tmp_path, "s1", 20, server=cluster.kubeconfig) as kubeconfig:
            assert kubeconfig == cluster.kubeconfig.resolve()
            assert configurations() >= KQ_DEV_WEBHOOKS
            queued = json.loads(kubectl(*dry_run, input=_job("some-queue")))
            assert queued["spec"]["suspend"] is True  # kq's webhook held it for its queue
        wait_until(lambda: not (KQ_DEV_WEBHOOKS & configurations()), "the webhooks to go")
        created = json.loads(kubectl(*dry_run, input=_job("some-queue")))
        assert created["spec"].get("suspend") is not True  # no webhook of a stopped kq
