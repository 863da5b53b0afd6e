"""kq's configuration file: Kueue's Configuration document (``config.kueue.x-k8s.io/v1beta1``
or ``v1beta2``, kind ``Configuration``) plus kq's ``plugins`` section, validated into a
``KqConfig``. Defaults follow upstream, per version: v1beta2 waits for pods to be ready unless
told otherwise, v1beta1 only when ``waitForPodsReady.enable`` is set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kq.config import (
    API_VERSION,
    API_VERSION_V1BETA2,
    KIND,
    AdmissionFairSharing,
    ClientConnection,
    ConfigError,
    FairSharing,
    Health,
    KqConfig,
    LeaderElection,
    PluginsConfig,
    PodOptions,
    RequeuingStrategy,
    VisibilityServer,
    WaitForPodsReady,
    Webhook,
)
from kq.config_reader import Section, check_keys, host_port, is_number, label_selector


def _names(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: must be a list of plugin names")
    return tuple(value)


def _plugins(section: object) -> PluginsConfig:
    if section is None:
        return PluginsConfig()
    if not isinstance(section, dict):
        raise ConfigError("plugins: must be a mapping")
    check_keys(section, {"autoload", "disabled", "enabled"}, "plugins")
    autoload = section.get("autoload", True)
    if not isinstance(autoload, bool):
        raise ConfigError("plugins.autoload: must be true or false")
    enabled = section.get("enabled")
    return PluginsConfig(
        autoload=autoload,
        disabled=_names(section.get("disabled", []), "plugins.disabled"),
        enabled=None if enabled is None else _names(enabled, "plugins.enabled"),
    )


def _wait_for_pods_ready(
    top: Section, v1beta2: bool, gates: Mapping[str, bool]
) -> WaitForPodsReady:
    """Upstream's defaults: v1beta2 is on unless the ``DisableWaitForPodsReady`` gate is set
    (timeout 30m, no blockAdmission); v1beta1 only with ``enable`` (timeout 5m, blockAdmission
    as enable). Both default ``recoveryTimeout`` to the timeout; "0s" turns it off."""
    keys = {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"}
    s = top.section("waitForPodsReady", keys if v1beta2 else keys | {"enable"})
    enable = not gates.get("DisableWaitForPodsReady", False) if v1beta2 else s.flag("enable", False)
    r = s.section(
        "requeuingStrategy",
        {"timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"},
    )
    timestamp = r.text("timestamp", "Eviction")
    if timestamp not in ("Eviction", "Creation"):
        raise ConfigError(f"{r.where('timestamp')}: must be Eviction or Creation")
    limit = r.data.get("backoffLimitCount")
    strategy = RequeuingStrategy(
        timestamp=timestamp,
        backoff_limit_count=None if limit is None else r.integer("backoffLimitCount", 0),
        backoff_base_seconds=r.integer("backoffBaseSeconds", 60, minimum=1),
        backoff_max_seconds=r.integer("backoffMaxSeconds", 3600, minimum=1),
    )
    timeout = s.duration("timeout", 1800.0 if v1beta2 else 300.0)
    return WaitForPodsReady(
        enable=enable,
        timeout=timeout,
        block_admission=s.flag("blockAdmission", enable and not v1beta2),
        requeuing_strategy=strategy,
        recovery_timeout=s.duration("recoveryTimeout", timeout, zero=True) or None,
    )


def _leader_election(top: Section) -> LeaderElection:
    s = top.section(
        "leaderElection",
        {
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceName",
            "resourceNamespace",
            "resourceLock",
        },
    )
    if s.text("resourceLock", "leases") != "leases":
        raise ConfigError(f"{s.where('resourceLock')}: only leases are supported")
    election = LeaderElection(
        leader_elect=s.flag("leaderElect", True),
        lease_duration=s.duration("leaseDuration", 15.0),
        renew_deadline=s.duration("renewDeadline", 10.0),
        retry_period=s.duration("retryPeriod", 2.0),
        resource_name=s.text("resourceName", "c1f6bfd2.kueue.x-k8s.io")
        or "c1f6bfd2.kueue.x-k8s.io",
        resource_namespace=s.text("resourceNamespace", ""),
    )
    if election.renew_deadline >= election.lease_duration:
        raise ConfigError(f"{s.where('renewDeadline')}: must be less than leaseDuration")
    # client-go's rule: a renewal needs room for at least one jittered retry.
    if election.renew_deadline <= 1.2 * election.retry_period:
        raise ConfigError(f"{s.where('retryPeriod')}: must be less than renewDeadline / 1.2")
    return election


def _namespace_selector(top: Section, namespace: str) -> dict[str, Any] | None:
    """``managedJobsNamespaceSelector``, checked as Kueue checks it."""
    return label_selector(top, "managedJobsNamespaceSelector", namespace)


_TOP = {
    "apiVersion",
    "kind",
    "namespace",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "waitForPodsReady",
    "integrations",
    "fairSharing",
    "admissionFairSharing",
    "clientConnection",
    "leaderElection",
    "metrics",
    "health",
    "webhook",
    "visibilityServer",
    "featureGates",
    "plugins",
    "controller",
}


# Kueue feature gates whose behaviour kq has, at the value it has it; setting any other gate,
# or one of these to the other value, would ask for behaviour kq does not provide.
HONOURED_GATES = {
    "PartialAdmission": True,
    "SchedulingEquivalenceHashing": True,
    "FinishOrphanedWorkloads": True,
    "ManagedJobsNamespaceSelectorAlwaysRespected": True,
    "FairSharingPreemptWithinNominal": True,
    "FairSharingPrioritizeNonBorrowing": True,
    "MetricForWorkloadCreationLatency": True,
    # Alpha and off in Kueue v0.19; kq always takes a cycle's preemptors first (Kueue#13662).
    "PrioritizePreemptorWorkloads": True,
}
# Gates kq honours at either value.
SWITCHABLE_GATES = {
    "DisableWaitForPodsReady",
    "AdmissionFairSharing",
    "PriorityBoost",
    "SchedulerLongRequeueInterval",
}


def _feature_gates(raw: object) -> dict[str, bool]:
    if not isinstance(raw, dict) or not all(isinstance(v, bool) for v in raw.values()):
        raise ConfigError("featureGates: must map gate names to true or false")
    for gate, value in raw.items():
        if gate in SWITCHABLE_GATES:
            continue
        if gate not in HONOURED_GATES:
            raise ConfigError(f"featureGates.{gate}: kq does not implement this feature gate")
        if value != HONOURED_GATES[gate]:
            wanted = str(HONOURED_GATES[gate]).lower()
            raise ConfigError(f"featureGates.{gate}: kq always behaves as {gate}={wanted}")
    return dict(raw)


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_METRICS_KEYS = {"bindAddress", "secureServing", "enableClusterQueueResources", "localQueueMetrics"}


def _metric_series(top: Section) -> tuple[bool, bool]:
    """Which optional series to report: LocalQueue ones (on by default, as Kueue) and
    per-flavor ClusterQueue quotas (off by default)."""
    metrics = top.section("metrics", _METRICS_KEYS)
    local = metrics.section("localQueueMetrics", {"enable", "localQueueSelector"})
    if local.data.get("localQueueSelector") is not None:
        raise ConfigError(
            "metrics.localQueueMetrics.localQueueSelector: not supported by kq; remove it "
            "(every LocalQueue reports its series)"
        )
    return local.flag("enable", True), metrics.flag("enableClusterQueueResources", False)


def _metrics(top: Section) -> tuple[str, bool]:
    """Where /metrics is served ("" or Kueue's "0": nowhere) and whether only to callers the
    API server authorizes; unauthenticated metrics stay on loopback."""
    metrics = top.section("metrics", _METRICS_KEYS)
    address = metrics.text("bindAddress", ":8443")
    address = "" if address == "0" else host_port(metrics, "bindAddress", ":8443")
    secure = metrics.flag("secureServing", True)
    if address and not secure and address.rpartition(":")[0] not in _LOOPBACK:
        raise ConfigError(
            "metrics.secureServing: false serves metrics to anyone; bind it to a loopback "
            "address such as 127.0.0.1:8080"
        )
    return address, secure


def _visibility_server(top: Section) -> VisibilityServer:
    section = top.section("visibilityServer", {"bindAddress", "bindPort"})
    port = section.integer("bindPort", VisibilityServer.bind_port, minimum=0)
    if port > 65535:
        raise ConfigError("visibilityServer.bindPort: must be at most 65535")
    return VisibilityServer(section.text("bindAddress", ""), port)


def _version(top: Section) -> bool:
    """Whether the document is v1beta2 (kq reads a document without apiVersion as v1beta1)."""
    version = top.data.get("apiVersion", API_VERSION)
    if version not in (API_VERSION, API_VERSION_V1BETA2):
        raise ConfigError(f"apiVersion: must be {API_VERSION} or {API_VERSION_V1BETA2}")
    if top.data.get("kind", KIND) != KIND:
        raise ConfigError(f"kind: must be {KIND}")
    return bool(version == API_VERSION_V1BETA2)


def _fair_sharing(top: Section, v1beta2: bool) -> FairSharing:
    # v1beta2 has no ``enable``: the section's presence turns fair sharing on.
    fair = top.section(
        "fairSharing", {"preemptionStrategies"} | ({"enable"} if not v1beta2 else set())
    )
    on = "fairSharing" in top.data if v1beta2 else fair.flag("enable", False)
    strategies = FairSharing().preemption_strategies
    chosen = fair.names("preemptionStrategies", strategies, choices=strategies)
    return FairSharing(chosen, enable=on)


def _admission_fair_sharing(top: Section, gates: Mapping[str, bool]) -> AdmissionFairSharing | None:
    keys = {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}
    afs = top.section("admissionFairSharing", keys)
    default = AdmissionFairSharing()
    half_life = afs.duration("usageHalfLifeTime", default.usage_half_life_time, zero=True)
    sampling = afs.duration("usageSamplingInterval", default.usage_sampling_interval)
    weights = afs.data.get("resourceWeights") or {}
    if not isinstance(weights, dict):
        raise ConfigError(
            "admissionFairSharing.resourceWeights: must map resource names to numbers"
        )
    for name, weight in weights.items():
        if not is_number(weight) or weight < 0:
            raise ConfigError(
                f"admissionFairSharing.resourceWeights.{name}: must be a number, at least 0"
            )
    if "admissionFairSharing" not in top.data or not gates.get("AdmissionFairSharing", True):
        return None
    return AdmissionFairSharing(half_life, sampling, {str(k): float(v) for k, v in weights.items()})


def _frameworks(top: Section, v1beta2: bool) -> tuple[str, ...]:
    keys = {"frameworks", "externalFrameworks"} | (set() if v1beta2 else {"podOptions"})
    integrations = top.section("integrations", keys)
    if integrations.data.get("externalFrameworks"):
        raise ConfigError("integrations.externalFrameworks: not supported by kq; remove it")
    return integrations.names("frameworks", ("batch/job",))


def _pod_options(top: Section, v1beta2: bool, namespace: str) -> PodOptions:
    """v1beta1's ``integrations.podOptions`` (v1beta2 has none: ``_frameworks`` refuses it)."""
    raw = (top.data.get("integrations") or {}).get("podOptions")
    if v1beta2 or raw is None:
        return PodOptions()
    keys = {"frameworks", "externalFrameworks", "podOptions"}
    integrations = Section(top.data.get("integrations"), "integrations", keys)
    options = integrations.section("podOptions", {"namespaceSelector", "podSelector"})
    return PodOptions(
        namespace_selector=label_selector(options, "namespaceSelector", namespace),
        pod_selector=label_selector(options, "podSelector", None),
    )


_GROUP_KIND = re.compile(r"[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?")


def _group_kind_concurrency(top: Section) -> dict[str, int]:
    controller = top.section("controller", {"groupKindConcurrency"})
    raw = controller.data.get("groupKindConcurrency") or {}
    if not isinstance(raw, dict):
        raise ConfigError("controller.groupKindConcurrency: must map Kind.group to a number")
    section = controller.section("groupKindConcurrency", set(raw))
    for key in raw:
        if not isinstance(key, str) or not _GROUP_KIND.fullmatch(key):
            raise ConfigError(
                f"controller.groupKindConcurrency.{key}: must be Kind.group, such as Job.batch"
            )
        section.integer(key, 1, minimum=1)
    return dict(raw)


def parse_config(document: object) -> KqConfig:
    """Validate a parsed YAML document into a ``KqConfig``."""
    if document is None:
        return KqConfig()
    if not isinstance(document, dict):
        raise ConfigError("configuration: the document must be a mapping")
    top = Section(document, "", _TOP)
    v1beta2 = _version(top)
    namespace = top.text("namespace", "kueue-system")
    if not namespace:
        raise ConfigError("namespace: must not be empty")
    client = top.section("clientConnection", {"qps", "burst"})
    health = top.section(
        "health", {"healthProbeBindAddress", "readinessEndpointName", "livenessEndpointName"}
    )
    webhook = top.section("webhook", {"port", "certDir", "host"})
    gates = _feature_gates(top.data.get("featureGates") or {})
    metrics_address, secure_metrics = _metrics(top)
    local_queue_metrics, cluster_queue_resource_metrics = _metric_series(top)
    port = webhook.integer("port", 9443, minimum=1)
    if port > 65535:
        raise ConfigError("webhook.port: must be at most 65535")
    return KqConfig(
        namespace=namespace,
        manage_jobs_without_queue_name=top.flag("manageJobsWithoutQueueName", False),
        managed_jobs_namespace_selector=_namespace_selector(top, namespace),
        wait_for_pods_ready=_wait_for_pods_ready(top, v1beta2, gates),
        frameworks=_frameworks(top, v1beta2),
        pod_options=_pod_options(top, v1beta2, namespace),
        fair_sharing=_fair_sharing(top, v1beta2),
        admission_fair_sharing=_admission_fair_sharing(top, gates),
        client_connection=ClientConnection(
            qps=client.number("qps", 300.0), burst=client.integer("burst", 500, minimum=1)
        ),
        leader_election=_leader_election(top),
        metrics_bind_address=metrics_address,
        metrics_secure_serving=secure_metrics,
        local_queue_metrics=local_queue_metrics,
        cluster_queue_resource_metrics=cluster_queue_resource_metrics,
        health=Health(
            health_probe_bind_address=host_port(health, "healthProbeBindAddress", ":8081"),
            readiness_endpoint_name=health.text("readinessEndpointName", "readyz"),
            liveness_endpoint_name=health.text("livenessEndpointName", "healthz"),
        ),
        webhook=Webhook(
            port=port,
            cert_dir=webhook.text("certDir", Webhook().cert_dir),
            host=webhook.text("host", ""),
        ),
        visibility_server=_visibility_server(top),
        feature_gates=dict(gates),
        plugins=_plugins(document.get("plugins")),
        group_kind_concurrency=_group_kind_concurrency(top),
    )


def load_config(path: Path | None) -> KqConfig:
    """Read and validate the configuration file; no file means all defaults."""
    if path is None:
        return KqConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return parse_config(document)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
