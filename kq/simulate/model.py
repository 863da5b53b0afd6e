"""The parsed setup, and the admission core built from it as ``kq run`` builds its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kq.api.admissioncheck import AdmissionCheck
from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.api.cohort import Cohort, parse_cohort
from kq.api.invalid import Invalid
from kq.api.localqueue import LocalQueue, parse_local_queue
from kq.api.node import Node
from kq.api.priority import WorkloadPriorityClass, parse_workload_priority_class
from kq.api.resourceflavor import ResourceFlavor, parse_resource_flavor
from kq.api.topology import Topology
from kq.cache.cache import Cache
from kq.config import NAMESPACE_NAME_LABEL, ConfigError, KqConfig
from kq.config_file import parse_config
from kq.plugins import build_plugin_manager
from kq.queue.manager import QueueManager
from kq.scheduler.observers import load_observers
from kq.scheduler.plugins import AdmissionPlugins, load_admission_plugins
from kq.scheduler.scheduler import Scheduler
from kq.simulate import nodes
from kq.simulate.setup import Obj, ObjectKey, Setup
from kq.simulate.source import InputError


@dataclass
class Model:
    """What the core needs from the setup, parsed and checked."""

    config: KqConfig
    flavors: dict[str, ResourceFlavor] = field(default_factory=dict)
    cohorts: dict[str, Cohort] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[str, LocalQueue] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    workload_classes: dict[str, int] = field(default_factory=dict)
    pod_classes: dict[str, int] = field(default_factory=dict)
    default_pod_priority: int | None = None
    """The value of the PriorityClass marked ``globalDefault``, as pods without a class get."""
    checks: set[str] = field(default_factory=set)
    topologies: dict[str, Topology] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)


def _config(setup: Setup) -> KqConfig:
    try:
        config = parse_config(setup.config)
    except ConfigError as exc:
        raise InputError(f"{setup.config_origin}: configuration: {exc}") from exc
    if config.admission_fair_sharing is not None:
        # Its usage decays on the wall clock in a controller the simulation does not run.
        raise InputError(
            f"{setup.config_origin}: configuration: admissionFairSharing: not simulated by "
            "kq simulate; remove it (or set featureGates.AdmissionFairSharing: false)"
        )
    return config


def _parsed(setup: Setup, key: ObjectKey, parser: Callable[[Obj], object]) -> Any:
    result = parser(setup.objects[key])
    if isinstance(result, Invalid):
        raise InputError(f"{setup.origins[key]}: {key[0]} {key[1]}: {result.message}")
    return result


def _priority_class(setup: Setup, key: ObjectKey, model: Model) -> None:
    obj = setup.objects[key]
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{setup.origins[key]}: PriorityClass {key[1]}: value: Required integer")
    model.pod_classes[key[1]] = value
    if obj.get("globalDefault") is True:
        model.default_pod_priority = value


def _namespace(setup: Setup, key: ObjectKey, model: Model) -> None:
    labels = (setup.objects[key].get("metadata") or {}).get("labels") or {}
    model.namespaces[key[1]] = {str(k): str(v) for k, v in labels.items()}


def parse_model(setup: Setup) -> Model:
    """Parse every object; an invalid one stops the simulation with its file and line."""
    model = Model(_config(setup))
    for key in setup.objects:
        kind, name = key
        if kind == "ResourceFlavor":
            model.flavors[name] = _parsed(setup, key, parse_resource_flavor)
        elif kind == "Cohort":
            model.cohorts[name] = _parsed(setup, key, parse_cohort)
        elif kind == "ClusterQueue":
            model.cluster_queues[name] = _parsed(setup, key, parse_cluster_queue)
        elif kind == "LocalQueue":
            model.local_queues[name] = _parsed(setup, key, parse_local_queue)
        elif kind == "WorkloadPriorityClass":
            wpc: WorkloadPriorityClass = _parsed(setup, key, parse_workload_priority_class)
            model.workload_classes[name] = wpc.value
        elif kind == "PriorityClass":
            _priority_class(setup, key, model)
        elif kind == "Namespace":
            _namespace(setup, key, model)
        elif kind == "AdmissionCheck":
            model.checks.add(name)
        elif kind in ("Topology", "Node", "NodePool"):
            _topology_object(setup, key, model)
    for lq in model.local_queues.values():
        # The API server labels every namespace with its name; selectors rely on it.
        labels = model.namespaces.setdefault(lq.namespace, {})
        labels.setdefault(NAMESPACE_NAME_LABEL, lq.namespace)
    _check_references(setup, model)
    nodes.check_topologies(model.flavors, model.topologies, len(model.nodes))
    return model


def _topology_object(setup: Setup, key: ObjectKey, model: Model) -> None:
    """A Topology, a Node, or the nodes of a NodePool."""
    kind, obj, origin = key[0], setup.objects[key], setup.origins[key]
    if kind == "Topology":
        model.topologies[key[1]] = nodes.topology(origin, obj)
        return
    listed = [nodes.node(origin, obj)] if kind == "Node" else []
    if kind == "NodePool":
        listed = nodes.pool_nodes(origin, obj)
    for node in listed:
        if node.name in model.nodes:
            raise InputError(f"{origin}: Node {node.name} is listed twice")
        model.nodes[node.name] = node


def _check_references(setup: Setup, model: Model) -> None:
    if not model.cluster_queues:
        raise InputError("the setup has no ClusterQueue: nothing could be admitted")
    for key, lq in model.local_queues.items():
        if lq.cluster_queue not in model.cluster_queues:
            raise InputError(
                f"{setup.origins[('LocalQueue', key)]}: LocalQueue {key}: spec.clusterQueue: "
                f"ClusterQueue {lq.cluster_queue} is not in the setup"
            )


@dataclass
class Core:
    """The admission core of one simulated cluster."""

    cache: Cache
    queues: QueueManager
    scheduler: Scheduler
    plugins: AdmissionPlugins


def load_plugins(config: KqConfig) -> tuple[AdmissionPlugins, Any]:
    """The plugins ``kq run`` would load with this configuration, and its plugin manager."""
    pm = build_plugin_manager(config.plugins)
    pm.hook.kq_configure.call_historic(kwargs={"config": config})
    boost = config.feature_gates.get("PriorityBoost", False)
    strategies = config.fair_sharing.strategies_if_enabled()
    return load_admission_plugins(pm, strategies, boost, config.requeue_period), pm


def build_core(setup: Setup, model: Model) -> Core:
    """Cache, queues and scheduler as ``kq run``'s feed fills them; refuses a queue that could
    never admit (unknown plugin, missing flavor, cohort cycle) rather than simulate it idle."""
    plugins, pm = load_plugins(model.config)
    pods_ready = model.config.wait_for_pods_ready
    eviction_timestamp = not pods_ready.enable or pods_ready.requeuing_strategy.timestamp == (
        "Eviction"
    )
    cache = Cache()
    queues = QueueManager(plugins.strategies, eviction_timestamp, plugins.requeue_period)
    scheduler = Scheduler(cache, queues, plugins, load_observers(pm))
    for flavor in model.flavors.values():
        cache.set_flavor(flavor)
    for cohort in model.cohorts.values():
        cache.set_cohort(cohort)
    for name, topology in model.topologies.items():
        cache.set_topology(name, topology)
    for name, node in model.nodes.items():
        cache.set_node(name, node)
    # Admission checks are taken as passing at once: no check controller runs here.
    needed = {c for cq in model.cluster_queues.values() for c in cq.admission_checks}
    for name in sorted(needed | model.checks):
        cache.set_admission_check(AdmissionCheck(name, "kq.dev/simulated", active=True))
    for name, cq in model.cluster_queues.items():
        unknown = plugins.unknown(cq)
        if unknown is not None:
            raise InputError(
                f"{setup.origins[('ClusterQueue', name)]}: ClusterQueue {name}: {unknown}"
            )
        cache.set_cluster_queue(cq)
        queues.set_cluster_queue(name, cq.queueing_strategy)
    for name in model.cluster_queues:
        inactive = cache.inactive_reason(name)
        if inactive is not None:
            origin = setup.origins[("ClusterQueue", name)]
            raise InputError(f"{origin}: ClusterQueue {name}: {inactive[1]}")
    for lq in model.local_queues.values():
        queues.set_local_queue(lq)
    scheduler.namespace_labels.update({ns: dict(ls) for ns, ls in model.namespaces.items()})
    return Core(cache, queues, scheduler, plugins)
