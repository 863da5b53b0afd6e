"""Parsing API objects into values: invalid specs become reasons, never exceptions."""

from __future__ import annotations

from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.api.cohort import Cohort, parse_cohort
from kq.api.invalid import Invalid
from kq.api.localqueue import parse_local_queue
from kq.api.priority import (
    WorkloadPriorityClass,
    parse_workload_priority_class,
)
from kq.api.quotas import ResourceQuota
from kq.api.selectors import parse_node_constraints
from kq.api.workload import Workload, parse_workload
from kq.cache.inactive import inactive_reason
from tests.core.world import resource_groups


def cq(spec: dict[str, object]) -> ClusterQueue | Invalid:
    return parse_cluster_queue({"metadata": {"name": "cq"}, "spec": spec})


def test_lending_limit_above_nominal_is_invalid() -> None:
    result = cq({"cohort": "c", "resourceGroups": resource_groups([{"f": {"cpu": (2, None, 3)}}])})
    assert isinstance(result, Invalid)
    assert "lendingLimit: must be less than or equal to nominalQuota" in result.message


def test_borrowing_limit_needs_a_cohort() -> None:
    result = cq({"resourceGroups": resource_groups([{"f": {"cpu": (2, 1, None)}}])})
    assert isinstance(result, Invalid)
    assert "need a cohort" in result.message


def test_legacy_fungibility_values_and_defaults() -> None:
    result = cq({"flavorFungibility": {"whenCanBorrow": "Borrow"}})
    assert isinstance(result, ClusterQueue)
    assert result.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert result.flavor_fungibility.when_can_preempt == "TryNextFlavor"
    assert result.queueing_strategy == "BestEffortFIFO"
    assert result.namespace_selector is not None
    assert result.namespace_selector.matches({"kubernetes.io/metadata.name": "any"})


def test_missing_flavor_makes_the_queue_inactive() -> None:
    result = cq({"resourceGroups": resource_groups([{"ghost": {"cpu": 1}}])})
    assert isinstance(result, ClusterQueue)
    assert inactive_reason(result, {}, {}, ()) == (
        "FlavorNotFound",
        "Can't admit new workloads: references missing ResourceFlavor(s): ghost.",
    )
    stopped = parse_cluster_queue(
        {
            "metadata": {"name": "cq"},
            "spec": {
                "stopPolicy": "Hold",
                "resourceGroups": resource_groups([{"a": {"cpu": 1}, "b": {"cpu": 1}}]),
            },
        }
    )
    assert isinstance(stopped, ClusterQueue)
    assert inactive_reason(stopped, {}, {}, ()) == (
        "Stopped",
        "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): a,b.",
    )


def test_workload_requests_sum_containers_and_respect_init_and_limits() -> None:
    spec = {
        "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
        "containers": [
            {"resources": {"requests": {"cpu": "500m"}}},
            {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
        ],
    }
    workload = parse_workload(
        {
            "metadata": {
                "name": "w",
                "namespace": "ns",
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {
                "queueName": "q",
                "podSets": [{"name": "main", "count": 2, "template": {"spec": spec}}],
            },
        }
    )
    assert isinstance(workload, Workload)
    assert dict(workload.pod_sets[0].requests) == {"cpu": 3000, "memory": 1024**3}
    assert workload.creation_time == 1767225600.0


def test_workload_with_two_min_counts_is_invalid() -> None:
    pod_set = {"count": 2, "minCount": 1, "template": {"spec": {"containers": []}}}
    result = parse_workload(
        {
            "metadata": {"name": "w"},
            "spec": {"podSets": [{**pod_set, "name": "a"}, {**pod_set, "name": "b"}]},
        }
    )
    assert isinstance(result, Invalid)
    assert "at most one podSet" in result.message


def test_workload_priority_class_needs_a_value() -> None:
    assert parse_workload_priority_class({"metadata": {"name": "p"}, "value": 5}) == (
        WorkloadPriorityClass("p", 5)
    )
    invalid = parse_workload_priority_class({"metadata": {"name": "p"}})
    assert isinstance(invalid, Invalid)
    assert invalid.message == "value: Required value"


def test_bad_quantity_names_the_field() -> None:
    result = cq({"resourceGroups": resource_groups([{"f": {"cpu": "lots"}}])})
    assert isinstance(result, Invalid)
    assert result.message.startswith(
        "invalid spec: resourceGroups[0].flavors[0].resources[0].nominalQuota:"
    )


def test_cohort_and_local_queue_parsing() -> None:
    cohort = parse_cohort(
        {
            "metadata": {"name": "child"},
            "spec": {
                "parentName": "root",
                "resourceGroups": resource_groups([{"f": {"cpu": (1, 2, 3)}}]),
            },
        }
    )
    assert isinstance(cohort, Cohort)
    assert cohort.quotas[("f", "cpu")] == ResourceQuota(1000, 2000, 3000)  # no lending check
    assert isinstance(parse_local_queue({"metadata": {"name": "q"}, "spec": {}}), Invalid)


def test_node_affinity_ignores_keys_the_flavor_does_not_set() -> None:
    spec = {
        "nodeSelector": {"zone": "a", "unrelated": "x"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "gpu", "operator": "In", "values": ["a100"]}
                            ]
                        },
                        {"matchExpressions": [{"key": "other", "operator": "Exists"}]},
                    ]
                }
            }
        },
    }
    constraints = parse_node_constraints(spec)
    assert constraints.matches_flavor({"zone": "a", "gpu": "a100"})
    assert not constraints.matches_flavor({"zone": "b"})
    assert constraints.matches_flavor({"gpu": "h100"})  # a term lost all keys: matches anything


def test_documented_gke_manifest_without_covered_resources_or_namespace_selector() -> None:
    """Scenario S2's ClusterQueue, as GKE documents it, omits both fields Kueue expects."""
    result = parse_cluster_queue(
        {
            "metadata": {"name": "tpu-training-cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "flavors": [
                            {
                                "name": "tpu-v6e-slice",
                                "resources": [{"name": "google.com/tpu", "nominalQuota": 32}],
                            }
                        ]
                    }
                ]
            },
        }
    )
    assert isinstance(result, ClusterQueue)
    assert result.resource_groups[0].covered_resources == ("google.com/tpu",)
    assert result.namespace_selector is not None
    assert result.namespace_selector.matches({"kubernetes.io/metadata.name": "default"})


def test_pod_sets_are_parsed_once_per_generation() -> None:
    def obj(generation: int, cpu: str) -> dict[str, object]:
        container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
        return {
            "metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "generation": generation},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
                ],
            },
        }

    first, again, edited = (
        parse_workload(obj(1, "1")),
        parse_workload(obj(1, "1")),
        parse_workload(obj(2, "2")),
    )
    assert isinstance(first, Workload)
    assert isinstance(again, Workload)
    assert isinstance(edited, Workload)
    assert again.pod_sets is first.pod_sets
    assert edited.pod_sets[0].requests == {"cpu": 2000}
