"""The RFC 6902 diff: applying it to ``before`` gives ``after``."""

from __future__ import annotations

from typing import Any

import pytest

from kq.webhooks.jsonpatch import diff
from tests.jobframework_io.patching import apply_patch

CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"a": 1}, {"a": 1}),
    ({"spec": {"suspend": False}}, {"spec": {"suspend": True}}),
    ({"spec": {}}, {"spec": {"suspend": True}}),
    ({"metadata": {"labels": {"x": "1"}}}, {"metadata": {"labels": {"x": "1", "a/b~c": "v"}}}),
    ({"a": {"b": [1, 2, 3]}, "gone": None}, {"a": {"b": [1, 3]}}),
    ({"n": 1}, {"n": True}),
    ({"n": 1}, {"n": 1.0}),
]


@pytest.mark.parametrize(("before", "after"), CASES)
def test_patch_applied_to_before_gives_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert apply_patch(before, diff(before, after)) == after
    # Python's == conflates 1, 1.0 and True; the patch must not.
    assert repr(apply_patch(before, diff(before, after))) == repr(after)


def test_equal_documents_give_an_empty_patch() -> None:
    assert diff({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []


def test_keys_are_escaped_as_json_pointers() -> None:
    before = {"metadata": {"labels": {"x": "1"}}}
    after = {"metadata": {"labels": {"x": "1", "kueue.x-k8s.io/queue-name": "a~b"}}}
    assert diff(before, after) == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "a~b"}
    ]


def test_a_changed_list_is_replaced_whole_and_removed_keys_are_removed() -> None:
    assert diff({"l": [1, 2], "old": 1}, {"l": [2]}) == [
        {"op": "remove", "path": "/old"},
        {"op": "replace", "path": "/l", "value": [2]},
    ]
