"""Requests as Kueue counts them: limits for missing requests, LimitRange defaults and bounds.

Messages are upstream's (``pkg/workload/resources.go``, ``pkg/util/limitrange``), with the
reason ``Misconfigured`` the scheduler gives a workload that fails ``ValidateAdmissibility``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kq.api.limitrange import LimitRangeSummary, parse_limit_range, summarize
from kq.api.podrequests import parse_pod_resources, pod_requests, total_requests
from kq.api.workload import Workload, parse_workload
from kq.scheduler.decisions import Admit, Decision, Pending
from kq.workload.resources import adjusted, resources_error
from tests.core.world import World

NS = "team"


def container(
    requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    return {"name": "c", "image": "busybox", "resources": resources}


def workload(name: str, *pod_specs: Mapping[str, Any], count: int = 1) -> Workload:
    pod_sets = [
        {"name": f"ps{i}", "count": count, "template": {"spec": dict(spec)}}
        for i, spec in enumerate(pod_specs)
    ]
    obj = {
        "metadata": {"namespace": NS, "name": name, "uid": uuid.uuid4().hex, "generation": 1},
        "spec": {"queueName": "lq", "podSets": pod_sets},
    }
    parsed = parse_workload(obj)
    assert isinstance(parsed, Workload), parsed
    return parsed


def limit_range(*items: Mapping[str, Any]) -> LimitRangeSummary:
    summary = summarize([parse_limit_range({"spec": {"limits": list(items)}})])
    assert summary is not None
    return summary


def pods(*containers: Mapping[str, Any]) -> dict[str, Any]:
    return {"containers": list(containers)}


def test_limits_stand_in_for_missing_requests() -> None:
    spec = pods(container({"memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}))
    assert pod_requests(spec) == {"cpu": 2000, "memory": 1024**3}


def test_requests_above_limits_are_misconfigured() -> None:
    wl = workload("w", pods(container({"cpu": "200m"}, {"cpu": "100m"})))
    assert resources_error(wl) == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not exceed its limits'
    )


def test_several_violations_are_listed_in_brackets_init_containers_first() -> None:
    over = container({"cpu": "2", "memory": "2Gi"}, {"cpu": "1", "memory": "1Gi"})
    wl = workload("w", pods(container({"cpu": "1"})), {**pods(over), "initContainers": [over]})
    assert resources_error(wl) == (
        "resources validation failed: ["
        'spec.podSets[1].template.spec.initContainers[0]: Invalid value: ["cpu","memory"]: '
        "requests must not exceed its limits, "
        'spec.podSets[1].template.spec.containers[0]: Invalid value: ["cpu","memory"]: '
        "requests must not exceed its limits]"
    )


def test_container_defaults_fill_what_is_missing() -> None:
    summary = limit_range(
        {"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}},
    )
    wl = adjusted(workload("w", pods(container(), container({"cpu": "2"}, {"cpu": "3"}))), summary)
    assert wl.pod_sets[0].requests == {"cpu": 500 + 2000}
    assert resources_error(wl) is None


def test_a_default_request_above_the_limit_makes_it_invalid() -> None:
    summary = limit_range({"type": "Container", "defaultRequest": {"cpu": "2"}})
    wl = adjusted(workload("w", pods(container(limits={"cpu": "1"}))), summary)
    assert resources_error(wl) == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not exceed its limits'
    )


def test_container_bounds() -> None:
    summary = limit_range({"type": "Container", "max": {"cpu": "300m"}, "min": {"memory": "1Gi"}})
    wl = adjusted(workload("w", pods(container({"cpu": "500m", "memory": "512Mi"}))), summary)
    path = "spec.podSets[0].template.spec.containers[0]"
    assert resources_error(wl) == (
        "resources didn't satisfy LimitRange constraints: ["
        f'{path}: Invalid value: ["cpu"]: requests must not be above the limitRange max, '
        f'{path}: Invalid value: ["memory"]: requests must not be below the limitRange min]'
    )


def test_a_limit_above_the_container_max_is_outside_too() -> None:
    summary = limit_range({"type": "Container", "max": {"cpu": "1"}})
    wl = adjusted(workload("w", pods(container({"cpu": "500m"}, {"cpu": "2"}))), summary)
    assert resources_error(wl) == (
        "resources didn't satisfy LimitRange constraints: "
        "spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not be above the limitRange max'
    )


def test_pod_bounds_apply_to_the_pod_total() -> None:
    summary = limit_range({"type": "Pod", "max": {"cpu": "1"}})
    fits = adjusted(workload("a", pods(container({"cpu": "500m"}))), summary)
    assert resources_error(fits) is None
    over = adjusted(
        workload("b", pods(container({"cpu": "600m"}), container({"cpu": "600m"}))), summary
    )
    assert resources_error(over) == (
        "resources didn't satisfy LimitRange constraints: spec.podSets[0].template.spec: "
        'Invalid value: ["cpu"]: requests must not be above the limitRange max'
    )


def test_summary_keeps_tightest_bounds_and_first_defaults() -> None:
    first = parse_limit_range(
        {
            "spec": {
                "limits": [
                    {"type": "Container", "max": {"cpu": "4"}, "default": {"cpu": "1"}},
                    {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
                ]
            }
        }
    )
    second = parse_limit_range(
        {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "default": {"cpu": "3"}}]}}
    )
    summary = summarize([first, second])
    assert summary is not None
    assert summary.pod is None
    assert summary.container is not None
    assert dict(summary.container.max) == {"cpu": 2000}
    assert dict(summary.container.default) == {"cpu": 1000}
    volumes = parse_limit_range({"spec": {"limits": [{"type": "PersistentVolumeClaim"}]}})
    assert summarize([volumes]) is None


def test_sidecars_and_overhead_count_after_defaults() -> None:
    summary = limit_range({"type": "Container", "defaultRequest": {"cpu": "100m"}})
    spec: dict[str, Any] = {
        "initContainers": [{**container(), "restartPolicy": "Always"}],
        "containers": [container()],
        "overhead": {"cpu": "50m"},
    }
    wl = adjusted(workload("w", spec), summary)
    assert wl.pod_sets[0].requests == {"cpu": 250}
    assert total_requests(parse_pod_resources(spec)) == {"cpu": 50}


def scenario(
    summary: LimitRangeSummary | None, *names_and_specs: tuple[str, Sequence[Any]]
) -> World:
    world = World()
    world.flavor("f")
    world.cluster_queue("cq", [{"f": {"cpu": 1}}])
    world.local_queue(NS, "lq", "cq")
    if summary is not None:
        world.scheduler.limit_ranges[NS] = summary
    for name, containers in names_and_specs:
        assert world.scheduler.workload_changed(workload(name, pods(*containers))) is None
    return world


def decisions(world: World, cycles: int) -> dict[str, Decision]:
    """Each workload's latest decision over a few cycles (one head per queue per cycle)."""
    out: dict[str, Decision] = {}
    for result in world.run(cycles):
        out.update(result.by_key)
    return out


def test_a_defaulted_request_takes_quota_on_a_full_queue() -> None:
    summary = limit_range({"type": "Container", "defaultRequest": {"cpu": "1"}})
    world = scenario(summary, ("first", [container()]), ("second", [container()]))
    decided = list(decisions(world, 2).values())
    assert sorted(type(d).__name__ for d in decided) == ["Admit", "Pending"]
    [pending] = [d for d in decided if isinstance(d, Pending)]
    assert "insufficient unused quota for cpu in flavor f, 1 more needed" in pending.message


def test_without_limit_ranges_a_container_without_requests_takes_nothing() -> None:
    world = scenario(None, ("first", [container()]), ("second", [container()]))
    decided = decisions(world, 2)
    assert [type(d) for d in decided.values()] == [Admit, Admit]


def test_the_scheduler_leaves_a_misconfigured_workload_pending() -> None:
    summary = limit_range({"type": "Container", "max": {"cpu": "300m"}})
    world = scenario(
        summary,
        ("big", [container({"cpu": "500m"})]),
        ("bad", [container({"cpu": "2"}, {"cpu": "1"})]),
    )
    decided = decisions(world, 2)
    big, bad = decided[f"{NS}/big"], decided[f"{NS}/bad"]
    assert isinstance(big, Pending)
    assert big.reason == "Misconfigured"
    assert big.message.startswith("resources didn't satisfy LimitRange constraints: ")
    assert isinstance(bad, Pending)
    assert bad.reason == "Misconfigured"
    assert bad.message.startswith("resources validation failed: ")
