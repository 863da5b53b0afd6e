"""The README's first command: `kq demo` runs scenario S1 on the embedded default and exits 0;
`kq demo s3` plays scenario S3 (DWS provisioning) the same way."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_tells_the_s1_story() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kq", "demo", "--speed", "30"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "insufficient unused quota for google.com/tpu in flavor vlp-24, 8 more needed" in out
    assert "insufficient unused quota for google.com/tpu in flavor vlp-24, 16 more needed" in out
    assert "cluster-queue flavorsUsage: 24 of 24 chips" in out
    assert "cluster-queue flavorsUsage: 0 of 24 chips" in out
    assert out.count("Running") >= 6
    assert "S1 done: every expectation of the story held." in out


@pytest.mark.slow
def test_demo_tells_the_s3_story() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kq", "demo", "s3"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "dws-prov: Pending (Waiting for capacity; the request is queued)" in out
    assert "gke-dws-pool-0" in out
    assert "Admitted by clusterQueue dws-cluster-queue" in out
    assert "updated state from Pending to Retry with message: Retrying after failure" in out
    assert out.count("DeactivatedDueToAdmissionCheck") >= 3  # failing-job, then revoked-job too
    assert "Provisioned=True: Provisioned 1 node(s)" in out
    assert "S3 done: every expectation of the story held." in out
