"""kueue.x-k8s.io conversion: both round trips are the identity on valid objects, and every
converted object is valid in its version, with nothing for the API server to prune."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kq.crds import kueue
from kq.crds.conversion import ANNOTATION, V1BETA1, V1BETA2, ConversionError, convert
from kq.crds.conversion.topology import pack, unpack
from kq.sandbox.apiserver.schema import Schema
from tests.crds.schema_objects import NAMES, objects

CRDS = {crd["spec"]["names"]["kind"]: crd for crd in kueue.crds()}
KINDS = sorted(CRDS)
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _version(kind: str, api_version: str) -> dict[str, Any]:
    name = api_version.rsplit("/", 1)[1]
    version: dict[str, Any] = next(v for v in CRDS[kind]["spec"]["versions"] if v["name"] == name)
    return version


def _schema(kind: str, api_version: str) -> Schema:
    return Schema.from_openapi(_version(kind, api_version)["schema"]["openAPIV3Schema"])


def _assert_served_as_is(obj: dict[str, Any], kind: str, api_version: str) -> None:
    """What the API server would store or serve: valid, nothing pruned, already defaulted."""
    schema = _schema(kind, api_version)
    assert obj["apiVersion"] == api_version
    _, dropped = schema.prune(copy.deepcopy(obj))
    assert dropped == []
    assert schema.validate(obj) == []
    assert schema.default(obj) == obj


def _round_trip(kind: str, start: str, other: str, data: st.DataObject) -> None:
    original = data.draw(objects(_version(kind, start), start, kind))
    assert _schema(kind, start).validate(original) == []
    kept = copy.deepcopy(original)
    converted = convert(original, other)
    _assert_served_as_is(converted, kind, other)
    kept_converted = copy.deepcopy(converted)
    assert convert(converted, start) == original
    # The mappings share what they do not change, so they must never edit what they share.
    assert (original, converted) == (kept, kept_converted)


@pytest.mark.parametrize("kind", KINDS)
@SLOW
@given(data=st.data())
def test_v1beta1_to_v1beta2_and_back_is_the_identity(kind: str, data: st.DataObject) -> None:
    _round_trip(kind, V1BETA1, V1BETA2, data)


@pytest.mark.parametrize("kind", KINDS)
@SLOW
@given(data=st.data())
def test_v1beta2_to_v1beta1_and_back_is_the_identity(kind: str, data: st.DataObject) -> None:
    _round_trip(kind, V1BETA2, V1BETA1, data)


_VALUES = st.sampled_from([n for n in NAMES if len(n) < 20])
_DOMAINS = st.lists(
    st.fixed_dictionaries(
        {"values": st.lists(_VALUES, min_size=2, max_size=2), "count": st.integers(1, 4)}
    ),
    max_size=4,
)


@given(domains=_DOMAINS)
def test_topology_domains_pack_into_slices_and_back(domains: list[dict[str, Any]]) -> None:
    assignment = {"levels": ["block", "host"], "domains": domains}
    packed = pack(assignment)
    assert "domains" not in packed
    assert len(packed["slices"]) == (1 if domains else 0)
    assert unpack(packed) == assignment


def _workload(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1BETA1,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {}}], **spec},
    }


def test_workload_priority_class_becomes_a_reference() -> None:
    wl = _workload(
        priorityClassName="high",
        priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
        priority=10,
    )
    v2 = convert(wl, V1BETA2)
    assert v2["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert "priorityClassName" not in v2["spec"]
    assert ANNOTATION not in (v2["metadata"].get("annotations") or {})
    assert convert(v2, V1BETA1) == wl


def test_a_topology_assignment_is_sliced_in_v1beta2() -> None:
    placed = {"levels": ["rack"], "domains": [{"values": ["r1"], "count": 2}]}
    wl = _workload()
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "topologyAssignment": placed}],
        },
        "accumulatedPastExexcutionTimeSeconds": 5,
    }
    v2 = convert(wl, V1BETA2)
    assignment = v2["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert assignment == {
        "levels": ["rack"],
        "slices": [
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "r1"}],
                "podCounts": {"universal": 2},
            }
        ],
    }
    assert v2["status"]["accumulatedPastExecutionTimeSeconds"] == 5
    assert convert(v2, V1BETA1) == {**wl, "spec": {**wl["spec"], "priorityClassSource": ""}}


@pytest.mark.parametrize(
    ("obj", "field", "default"),
    [
        (_workload(), "priorityClassSource", ""),
        ({"apiVersion": V1BETA1, "kind": "AdmissionCheck", "metadata": {"name": "prov"},
          "spec": {"controllerName": "c"}}, "retryDelayMinutes", 15),
    ],
)  # fmt: skip
def test_a_v1beta1_field_left_to_its_default_needs_no_record(
    obj: dict[str, Any], field: str, default: Any
) -> None:
    # The API server defaults a v1beta1 request before converting it; kq's client converts
    # before sending, so an absent field is the default it would get, not one to remove.
    v2 = convert(obj, V1BETA2)
    assert ANNOTATION not in (v2["metadata"].get("annotations") or {})
    assert convert(v2, V1BETA1)["spec"] == {**obj["spec"], field: default}


def _cluster_queue(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1BETA1,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": spec,
    }


def test_a_v1beta2_edit_wins_over_what_v1beta1_wrote() -> None:
    cq = _cluster_queue(cohort="all", admissionChecks=["prov"])
    v2 = convert(cq, V1BETA2)
    assert v2["spec"]["cohortName"] == "all"
    assert v2["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
    v2["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] = ["gpu"]
    back = convert(v2, V1BETA1)
    assert "admissionChecks" not in back["spec"]
    assert back["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "prov", "onFlavors": ["gpu"]}]
    }
    assert ANNOTATION not in (back["metadata"].get("annotations") or {})


def test_fields_only_one_version_has_survive_the_other_versions_writes() -> None:
    check = {
        "apiVersion": V1BETA1,
        "kind": "AdmissionCheck",
        "metadata": {"name": "ac"},
        "spec": {"controllerName": "x", "retryDelayMinutes": 3},
    }
    v2 = convert(check, V1BETA2)
    assert "retryDelayMinutes" not in v2["spec"]
    v2["spec"]["controllerName"] = "y"  # a v1beta2 client's update
    assert convert(v2, V1BETA1)["spec"] == {"controllerName": "y", "retryDelayMinutes": 3}

    gated = {**_workload(), "apiVersion": V1BETA2}
    gated["spec"] = {"podSets": gated["spec"]["podSets"], "preemptionGates": [{"name": "g"}]}
    v1 = convert(gated, V1BETA1)
    assert "preemptionGates" not in v1["spec"]
    v1["spec"]["queueName"] = "lq"  # a v1beta1 client's update
    assert convert(v1, V1BETA2)["spec"]["preemptionGates"] == [{"name": "g"}]


def test_an_unknown_kind_or_version_is_refused() -> None:
    with pytest.raises(ConversionError):
        convert({"apiVersion": V1BETA1, "kind": "MultiKueueCluster"}, V1BETA2)
    with pytest.raises(ConversionError):
        convert(_cluster_queue(), "kueue.x-k8s.io/v1alpha1")


@st.composite
def _slice(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 3))

    def level() -> st.SearchStrategy[dict[str, Any]]:
        roots = st.lists(_VALUES, min_size=count, max_size=count)
        affixes = st.fixed_dictionaries(
            {"roots": roots}, optional={"prefix": st.just("p-"), "suffix": st.just("-s")}
        )
        return st.fixed_dictionaries({"universal": _VALUES}) | st.fixed_dictionaries(
            {"individual": affixes}
        )

    pods = st.fixed_dictionaries({"universal": st.integers(1, 4)}) | st.fixed_dictionaries(
        {"individual": st.lists(st.integers(1, 4), min_size=count, max_size=count)}
    )
    return {
        "domainCount": count,
        "valuesPerLevel": [draw(level()), draw(level())],
        "podCounts": draw(pods),
    }


@given(slices=st.lists(_slice(), max_size=3))
def test_any_v1beta2_topology_assignment_survives_a_v1beta1_round_trip(
    slices: list[dict[str, Any]],
) -> None:
    placed = {"levels": ["block", "host"], "slices": slices}
    wl = {**_workload(), "apiVersion": V1BETA2}
    wl["spec"] = {"podSets": wl["spec"]["podSets"]}
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "topologyAssignment": placed}],
        }
    }
    v1 = convert(wl, V1BETA1)
    domains = v1["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["domains"]
    assert len(domains) == sum(s["domainCount"] for s in slices)
    assert convert(v1, V1BETA2) == wl
