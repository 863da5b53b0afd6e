"""/validate/kueue: warnings where kq differs, and status.admission written by kq alone."""

from __future__ import annotations

from typing import Any

import pytest

from kq.webhooks import kueue_validator, validate_kueue

KQ = "system:serviceaccount:kq-system:kq-controller-manager"
ADMISSION = {"clusterQueue": "team-b", "podSetAssignments": []}


def review(
    old: Any, new: Any, user: str, sub: str = "status", kind: str = "Workload"
) -> dict[str, Any]:
    return {
        "request": {
            "uid": "u1",
            "kind": {"group": "kueue.x-k8s.io", "version": "v1beta1", "kind": kind},
            "operation": "UPDATE",
            "subResource": sub,
            "userInfo": {"username": user},
            "oldObject": {"status": {"admission": old}},
            "object": {"status": {"admission": new}},
        }
    }


@pytest.mark.parametrize(("old", "new"), [(None, ADMISSION), (ADMISSION, None), (ADMISSION, {})])
def test_only_kq_sets_changes_or_clears_an_admission(old: Any, new: Any) -> None:
    guard = kueue_validator({KQ})
    refused = guard(review(old, new, "alice"))["response"]
    assert refused["allowed"] is False
    assert refused["status"]["code"] == 403
    assert refused["status"]["message"] == (
        "status.admission is written by kq only: alice may not set, change or clear it"
    )
    assert guard(review(old, new, KQ))["response"]["allowed"] is True


def test_other_writes_pass() -> None:
    guard = kueue_validator({KQ})
    # The same admission (other status fields moved), a spec update, another kind.
    assert guard(review(ADMISSION, ADMISSION, "alice"))["response"]["allowed"]
    assert guard(review(None, ADMISSION, "alice", sub=""))["response"]["allowed"]
    assert guard(review(None, ADMISSION, "alice", kind="LocalQueue"))["response"]["allowed"]


def test_without_an_identity_anyone_may_write_as_in_kueue() -> None:
    assert validate_kueue(review(None, ADMISSION, "alice"))["response"]["allowed"]
