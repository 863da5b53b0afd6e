"""kq's configuration: the settings, their defaults, and the error that names a bad field.

``kq.config_file`` reads them from a YAML file in the shape of Kueue's Configuration API
(``config.kueue.x-k8s.io/v1beta1`` or ``v1beta2``, kind ``Configuration``) plus kq's own
``plugins`` section, so a Kueue configuration carries over. Defaults follow upstream; where they
differ per version, ``kq.config_file`` chooses them. Durations are Go duration strings
("15s", "1m30s").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

API_VERSION = "config.kueue.x-k8s.io/v1beta1"
API_VERSION_V1BETA2 = "config.kueue.x-k8s.io/v1beta2"
KIND = "Configuration"


class ConfigError(ValueError):
    """The configuration is invalid; the message names the field."""


@dataclass(frozen=True)
class PluginsConfig:
    """Which plugins load: ``disabled`` names are blocked; ``enabled``, if set, is an allow-list."""

    autoload: bool = True
    disabled: tuple[str, ...] = ()
    enabled: tuple[str, ...] | None = None


LONG_REQUEUE_GATE = "SchedulerLongRequeueInterval"
REQUEUE_PERIOD_S = 1.0
"""Kueue's requeue batch period: how long a retry of parked workloads waits (seconds)."""
LONG_REQUEUE_PERIOD_S = 10.0
"""Kueue's requeue batch period under that gate."""


@dataclass(frozen=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"
    backoff_limit_count: int | None = None
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600


@dataclass(frozen=True)
class WaitForPodsReady:
    enable: bool = False
    timeout: float = 300.0
    # Upstream defaults blockAdmission to the value of enable.
    block_admission: bool = False
    requeuing_strategy: RequeuingStrategy = field(default_factory=RequeuingStrategy)
    recovery_timeout: float | None = None
    """How long a workload whose pods were ready may wait for a failed pod's replacement."""


@dataclass(frozen=True)
class FairSharing:
    preemption_strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    enable: bool = False

    def strategies_if_enabled(self) -> tuple[str, ...] | None:
        return self.preemption_strategies if self.enable else None


@dataclass(frozen=True)
class AdmissionFairSharing:
    """Kueue's ``admissionFairSharing``: LocalQueue usage decaying with a half-life orders the
    pending workloads of ClusterQueues whose ``admissionScope`` asks for it."""

    usage_half_life_time: float = 0.0
    """Seconds after which past usage counts half; 0 forgets it at once."""
    usage_sampling_interval: float = 300.0
    resource_weights: Mapping[str, float] = field(default_factory=dict)
    """Per resource name; a resource not listed weighs 1."""


@dataclass(frozen=True)
class ClientConnection:
    """Client-side rate limit; kq's default suits a large cluster (Kueue's perf test: 50/100)."""

    qps: float = 300.0
    burst: int = 500


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = "c1f6bfd2.kueue.x-k8s.io"
    # Empty means the configuration's namespace.
    resource_namespace: str = ""


@dataclass(frozen=True)
class Health:
    health_probe_bind_address: str = ":8081"
    readiness_endpoint_name: str = "readyz"
    liveness_endpoint_name: str = "healthz"


@dataclass(frozen=True)
class Webhook:
    port: int = 9443
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"
    host: str = ""
    """Address to listen on; empty means every interface, as in Kueue."""


@dataclass(frozen=True)
class VisibilityServer:
    """Kueue's ``visibilityServer``: where the aggregated visibility API is served."""

    bind_address: str = ""
    """Empty means every interface, as in Kueue."""
    bind_port: int = 8082
    """0: not served (kq's own; Kueue always serves it)."""


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server puts on every Namespace, with the namespace's name."""


def default_namespace_selector(namespace: str) -> dict[str, Any]:
    """Kueue's default ``managedJobsNamespaceSelector``: every namespace but the system ones."""
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system", namespace]}
        ]
    }


@dataclass(frozen=True)
class PodOptions:
    """v1beta1's ``integrations.podOptions``: which pods the ``pod`` framework may gate, on top
    of ``managedJobsNamespaceSelector``; ``None`` selects everything."""

    namespace_selector: Mapping[str, Any] | None = None
    pod_selector: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class KqConfig:
    namespace: str = "kueue-system"
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] | None = None
    """``managedJobsNamespaceSelector``; None stands for Kueue's default, which depends on
    ``namespace`` (see ``jobs_namespace_selector``)."""
    wait_for_pods_ready: WaitForPodsReady = field(default_factory=WaitForPodsReady)
    frameworks: tuple[str, ...] = ("batch/job",)
    pod_options: PodOptions = field(default_factory=lambda: PodOptions())
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    admission_fair_sharing: AdmissionFairSharing | None = None
    """Set by the ``admissionFairSharing`` section, unless feature gate AdmissionFairSharing
    is false."""
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    metrics_bind_address: str = ":8443"
    metrics_secure_serving: bool = True
    """kq's ``metrics.secureServing``: HTTPS with TokenReview and SubjectAccessReview, as
    Kueue; off only on a loopback address (kq dev, tests)."""
    local_queue_metrics: bool = True
    """``metrics.localQueueMetrics.enable``: the ``kueue_local_queue_*`` series."""
    cluster_queue_resource_metrics: bool = False
    """``metrics.enableClusterQueueResources``: per-flavor quota and usage series."""
    health: Health = field(default_factory=Health)
    webhook: Webhook = field(default_factory=Webhook)
    visibility_server: VisibilityServer = field(default_factory=VisibilityServer)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    plugins: PluginsConfig = field(default_factory=PluginsConfig)
    group_kind_concurrency: Mapping[str, int] = field(default_factory=dict)
    """Kueue's ``controller.groupKindConcurrency``: workers per reconciled kind, keyed
    ``Kind.group`` (``Job.batch``, ``Workload.kueue.x-k8s.io``)."""

    def workers(self, group_kind: str, default: int = 4) -> int:
        return self.group_kind_concurrency.get(group_kind, default)

    @property
    def requeue_period(self) -> float:
        """Seconds between retries of a ClusterQueue's parked workloads (``kq.queue.pacing``):
        Kueue's, long with its gate ``SchedulerLongRequeueInterval``."""
        return (
            LONG_REQUEUE_PERIOD_S if self.feature_gates.get(LONG_REQUEUE_GATE) else REQUEUE_PERIOD_S
        )

    @property
    def lease_namespace(self) -> str:
        return self.leader_election.resource_namespace or self.namespace

    @property
    def jobs_namespace_selector(self) -> Mapping[str, Any]:
        """The label selector a job's namespace must match for kq to manage the job."""
        if self.managed_jobs_namespace_selector is None:
            return default_namespace_selector(self.namespace)
        return self.managed_jobs_namespace_selector


# -- durations -------------------------------------------------------------------------------

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string such as ``1m30s`` or ``250ms``; ValueError otherwise."""
    if text == "0":
        return 0.0
    if not text:
        raise ValueError(f"not a Go duration: {text!r}")
    position, total = 0, 0.0
    while position < len(text):
        match = _DURATION.match(text, position)
        if match is None:
            raise ValueError(f"not a Go duration: {text!r}")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return total
