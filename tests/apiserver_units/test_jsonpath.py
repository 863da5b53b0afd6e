"""The kubectl/printer-column JSONPath subset."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.sandbox.apiserver.jsonpath import JsonPathError, evaluate

WORKLOAD: dict[str, Any] = {
    "kind": "Workload",
    "metadata": {"name": "w", "labels": {"app.kubernetes.io/name": "x", "team": "ml"}},
    "spec": {
        "queueName": "lq",
        "podSets": [{"name": "main", "count": 3}, {"name": "w", "count": 5}],
    },
    "status": {
        "admission": {"clusterQueue": "cq"},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "n": 1},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "n": 2},
            {"type": "Finished", "status": "False", "reason": "", "n": 3},
        ],
    },
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (".spec.queueName", ["lq"]),
        ("{.spec.queueName}", ["lq"]),
        ("{ .spec.queueName }", ["lq"]),
        ("$.spec.queueName", ["lq"]),
        (".status.admission.clusterQueue", ["cq"]),
        ('.status.conditions[?(@.type=="Admitted")].status', ["True"]),
        (".status.conditions[?(@.type=='Admitted')].status", ["True"]),
        ('.status.conditions[?(@.type != "Admitted")].type', ["QuotaReserved", "Finished"]),
        (".status.conditions[?(@.n > 1)].type", ["Admitted", "Finished"]),
        (".status.conditions[?(@.n <= 1)].type", ["QuotaReserved"]),
        (".status.conditions[?(@.n == 2)].type", ["Admitted"]),
        (".status.conditions[?(@.reason)].type", ["QuotaReserved", "Admitted", "Finished"]),
        (".spec.podSets[0].name", ["main"]),
        (".spec.podSets[-1].count", [5]),
        (".spec.podSets[*].count", [3, 5]),
        (".spec.podSets[0:1].name", ["main"]),
        (".spec.podSets[1:].name", ["w"]),
        (".spec.podSets.*.name", ["main", "w"]),
        (".metadata.labels['app.kubernetes.io/name']", ["x"]),
        ('.metadata.labels["team"]', ["ml"]),
        ("..clusterQueue", ["cq"]),
        (".spec..count", [3, 5]),
        (".spec..[0].name", ["main"]),
        (".spec.podSets..name", ["main", "w"]),
        (".metadata.labels.*", ["x", "ml"]),
        (".metadata.labels[*]", ["x", "ml"]),
        (".metadata", [WORKLOAD["metadata"]]),
        ("", [WORKLOAD]),
    ],
)
def test_expressions(expression: str, expected: list[Any]) -> None:
    assert evaluate(expression, WORKLOAD) == expected


@pytest.mark.parametrize(
    "expression",
    [
        ".status.missing",
        ".status.admission.clusterQueue.deeper",
        ".spec.podSets[7]",
        ".spec.podSets[-9]",
        '.status.conditions[?(@.type=="Evicted")].status',
        ".spec.queueName[0]",
        '.spec.queueName[?(@.a=="b")]',
        ".nothing..deep",
    ],
)
def test_missing_paths_select_nothing(expression: str) -> None:
    assert evaluate(expression, WORKLOAD) == []


def test_filter_on_string_does_not_equal_number() -> None:
    obj = {"items": [{"v": "1"}, {"v": 1}, {"v": True}]}
    assert evaluate(".items[?(@.v==1)]", obj) == [{"v": 1}]
    assert evaluate(".items[?(@.v=='1')]", obj) == [{"v": "1"}]


def test_nested_filter_paths_and_index_in_filter() -> None:
    obj = {"items": [{"a": {"b": [{"c": "x"}]}}, {"a": {"b": [{"c": "y"}]}}]}
    assert evaluate('.items[?(@.a.b[0].c=="y")].a.b[0].c', obj) == ["y"]


@pytest.mark.parametrize(
    "expression",
    [
        "{.a",
        ".a[",
        ".a[?(@.b==)]",
        ".a[?(b==1)]",
        ".a['x]",
        ".a[x]",
        ".a!b",
        "..",
        ".a[?(@.b=='x']",
    ],
)
def test_syntax_errors_raise(expression: str) -> None:
    with pytest.raises(JsonPathError):
        evaluate(expression, WORKLOAD)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.from_regex(r"[a-z]{1,4}", fullmatch=True), children, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.from_regex(r"[a-z]{1,4}", fullmatch=True), _json, max_size=4))
def test_field_access_matches_dict_lookup(obj: dict[str, Any]) -> None:
    for key, value in obj.items():
        assert evaluate(f".{key}", obj) == [value]
        assert evaluate(f"$['{key}']", obj) == [value]
    assert evaluate(".zzzzz", obj) == []
