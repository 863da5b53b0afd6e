"""``kubectl kq``'s pure parts: ``--for`` values, pod rows, ``-o`` output, flag parsing."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from kq.kubectl_kq.create import UsageError
from kq.kubectl_kq.main import parser
from kq.kubectl_kq.output import dump
from kq.kubectl_kq.pods import _for, _row


@pytest.mark.parametrize(
    ("value", "kind", "name"),
    [
        ("job/train", "job", "train"),
        ("jobs.batch/train", "job", "train"),
        ("JobSet/multislice", "jobset", "multislice"),
        ("mpijob.kubeflow.org/pi", "mpijob", "pi"),
        ("po/web-0", "pod", "web-0"),
    ],
)
def test_for_names_a_kind_and_an_object(value: str, kind: str, name: str) -> None:
    assert _for(value) == (kind, name)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("train", "must be in the format TYPE[.API-GROUP]/NAME"),
        ("job/", "must be in the format"),
        ("deployment/web", "unsupported kind: deployment"),
    ],
)
def test_a_bad_for_is_refused_with_kueuectls_words(value: str, error: str) -> None:
    with pytest.raises(UsageError, match=re.escape(error)):
        _for(value)


def test_pod_rows_read_like_kubectl() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "train-abc", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {"ready": True, "restartCount": 1, "state": {"running": {}}},
                {"ready": False, "restartCount": 2,
                 "state": {"waiting": {"reason": "ContainerCreating"}}},
            ],
        },
    }  # fmt: skip
    name, ready, status, restarts, _ = _row(pod, 1767225600.0 + 30)
    assert (name, ready, status, restarts) == ("train-abc", "1/2", "ContainerCreating", "3")
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    assert _row(pod, 1767225600.0)[2] == "Terminating"


def test_output_is_a_list_in_json_or_yaml() -> None:
    items = [{"kind": "Workload", "metadata": {"name": "a"}}]
    assert json.loads(dump(items, "json"))["items"] == items
    as_yaml = yaml.safe_load(dump(items, "yaml"))
    assert (as_yaml["kind"], as_yaml["items"]) == ("List", items)


def test_list_flags() -> None:
    args = parser().parse_args(["list", "pods", "--for", "job/x", "-o", "yaml", "-n", "ns"])
    assert (args.for_object, args.output, args.namespace) == ("job/x", "yaml", "ns")
    args = parser().parse_args(["list", "workload", "-o", "json", "-A"])
    assert (args.output, args.all_namespaces) == ("json", True)
    with pytest.raises(SystemExit):
        parser().parse_args(["list", "cq", "-o", "wide"])
    with pytest.raises(SystemExit):
        parser().parse_args(["list", "pods"])  # --for is required, as kueuectl's
