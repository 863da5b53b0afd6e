"""kq's configuration file: defaults, validation, and errors that name the bad field.

The file is YAML in the shape of Kueue's Configuration API (``config.kueue.x-k8s.io/v1beta1``
or ``v1beta2``, kind ``Configuration``) plus kq's own ``plugins`` section, so a Kueue
configuration carries over. Defaults follow upstream, per version: v1beta2 waits for pods to
be ready unless told otherwise, v1beta1 only when ``waitForPodsReady.enable`` is set. Unknown
keys are errors, because a typo silently ignored is worse. Durations are Go duration strings
("15s", "1m30s").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from kq.api.selectors import parse_label_selector

API_VERSION = "config.kueue.x-k8s.io/v1beta1"
API_VERSION_V1BETA2 = "config.kueue.x-k8s.io/v1beta2"
KIND = "Configuration"

T = TypeVar("T")


class ConfigError(ValueError):
    """The configuration is invalid; the message names the field."""


@dataclass(frozen=True)
class PluginsConfig:
    """Which plugins load: ``disabled`` names are blocked; ``enabled``, if set, is an allow-list."""

    autoload: bool = True
    disabled: tuple[str, ...] = ()
    enabled: tuple[str, ...] | None = None


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


# -- section readers -------------------------------------------------------------------------


class _Section:
    """A mapping at ``path`` whose fields are read once each; leftovers are unknown fields."""

    def __init__(self, value: object, path: str, allowed: set[str]) -> None:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"{path or 'configuration'}: must be a mapping")
        _check_keys(value, allowed, path)
        self.data: dict[str, Any] = value
        self.path = path

    def where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str, default: T, check: Callable[[object], bool], what: str) -> T:
        value: T = self.data.get(key, default)
        if not check(value):
            raise ConfigError(f"{self.where(key)}: must be {what}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        return self.get(key, default, lambda v: isinstance(v, bool), "true or false")

    def text(self, key: str, default: str) -> str:
        return self.get(key, default, lambda v: isinstance(v, str), "a string")

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        value = self.get(key, default, _is_number, "a number")
        if value <= minimum:
            raise ConfigError(f"{self.where(key)}: must be greater than {minimum:g}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self.get(
            key, default, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"
        )
        if value < minimum:
            raise ConfigError(f"{self.where(key)}: must be at least {minimum}")
        return value

    def duration(self, key: str, default: float, *, zero: bool = False) -> float:
        raw = self.data.get(key)
        if raw is None:
            return default
        try:
            seconds = parse_duration(raw) if isinstance(raw, str) else None
        except ValueError:
            seconds = None
        if seconds is None or seconds < 0 or (seconds == 0 and not zero):
            what = "a duration" if zero else "a positive duration"
            raise ConfigError(f"{self.where(key)}: must be {what} such as 15s or 1m30s")
        return seconds

    def names(
        self, key: str, default: tuple[str, ...], choices: tuple[str, ...] = ()
    ) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{self.where(key)}: must be a list of non-empty strings")
        for item in value:
            if choices and item not in choices:
                raise ConfigError(
                    f"{self.where(key)}: unknown value {item!r} (allowed: {', '.join(choices)})"
                )
        return tuple(value)

    def section(self, key: str, allowed: set[str]) -> _Section:
        return _Section(self.data.get(key), self.where(key), allowed)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_keys(section: Mapping[str, Any], allowed: set[str], path: str) -> None:
    unknown = sorted(set(section) - allowed)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise ConfigError(f"{where}: unknown field (allowed: {', '.join(sorted(allowed))})")


def _names(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: must be a list of plugin names")
    return tuple(value)


def _plugins(section: object) -> PluginsConfig:
    if section is None:
        return PluginsConfig()
    if not isinstance(section, dict):
        raise ConfigError("plugins: must be a mapping")
    _check_keys(section, {"autoload", "disabled", "enabled"}, "plugins")
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
    top: _Section, v1beta2: bool, gates: Mapping[str, bool]
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


def _leader_election(top: _Section) -> LeaderElection:
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


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _namespace_selector(top: _Section, namespace: str) -> dict[str, Any] | None:
    """``managedJobsNamespaceSelector``, checked as Kueue checks it."""
    return _label_selector(top, "managedJobsNamespaceSelector", namespace)


def _label_selector(parent: _Section, key: str, namespace: str | None) -> dict[str, Any] | None:
    """A metav1.LabelSelector at ``key`` (``In``/``NotIn`` need values, ``Exists``/
    ``DoesNotExist`` take none); a namespace selector (``namespace`` given) must not select
    ``kube-system`` or kq's own namespace.
    """
    path = parent.where(key)
    raw = parent.data.get(key)
    if raw is None:
        return None
    s = parent.section(key, {"matchLabels", "matchExpressions"})
    match_labels = s.data.get("matchLabels") or {}
    if not isinstance(match_labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()
    ):
        raise ConfigError(f"{s.where('matchLabels')}: must map label keys to string values")
    expressions = s.data.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ConfigError(f"{s.where('matchExpressions')}: must be a list")
    for index, item in enumerate(expressions):
        e = _Section(item, f"{s.where('matchExpressions')}[{index}]", {"key", "operator", "values"})
        if not e.text("key", ""):
            raise ConfigError(f"{e.where('key')}: must not be empty")
        operator = e.text("operator", "")
        values = e.data.get("values") or []
        if operator not in _SELECTOR_OPERATORS:
            raise ConfigError(
                f"{e.where('operator')}: must be one of {', '.join(_SELECTOR_OPERATORS)}"
            )
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ConfigError(f"{e.where('values')}: must be a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise ConfigError(f"{e.where('values')}: must be specified when operator is {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            raise ConfigError(
                f"{e.where('values')}: may not be specified when operator is {operator}"
            )
    selector = parse_label_selector(raw)
    for protected in ("kube-system", namespace) if namespace is not None else ():
        if selector is not None and selector.matches({NAMESPACE_NAME_LABEL: protected}):
            raise ConfigError(f'{path}: should not match the "{protected}" namespace')
    return dict(raw)


def _address(s: _Section, key: str, default: str) -> str:
    value = s.text(key, default)
    _, sep, port = value.rpartition(":")
    if value and (not sep or not port.isdigit() or int(port) > 65535):
        raise ConfigError(f"{s.where(key)}: must be host:port, such as :8443 (or empty)")
    return value


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
}
# Gates kq honours at either value.
SWITCHABLE_GATES = {"DisableWaitForPodsReady", "AdmissionFairSharing"}


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


def _metric_series(top: _Section) -> tuple[bool, bool]:
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


def _metrics(top: _Section) -> tuple[str, bool]:
    """Where /metrics is served ("" or Kueue's "0": nowhere) and whether only to callers the
    API server authorizes; unauthenticated metrics stay on loopback."""
    metrics = top.section("metrics", _METRICS_KEYS)
    address = metrics.text("bindAddress", ":8443")
    address = "" if address == "0" else _address(metrics, "bindAddress", ":8443")
    secure = metrics.flag("secureServing", True)
    if address and not secure and address.rpartition(":")[0] not in _LOOPBACK:
        raise ConfigError(
            "metrics.secureServing: false serves metrics to anyone; bind it to a loopback "
            "address such as 127.0.0.1:8080"
        )
    return address, secure


def _visibility_server(top: _Section) -> VisibilityServer:
    section = top.section("visibilityServer", {"bindAddress", "bindPort"})
    port = section.integer("bindPort", VisibilityServer.bind_port, minimum=0)
    if port > 65535:
        raise ConfigError("visibilityServer.bindPort: must be at most 65535")
    return VisibilityServer(section.text("bindAddress", ""), port)


def _version(top: _Section) -> bool:
    """Whether the document is v1beta2 (kq reads a document without apiVersion as v1beta1)."""
    version = top.data.get("apiVersion", API_VERSION)
    if version not in (API_VERSION, API_VERSION_V1BETA2):
        raise ConfigError(f"apiVersion: must be {API_VERSION} or {API_VERSION_V1BETA2}")
    if top.data.get("kind", KIND) != KIND:
        raise ConfigError(f"kind: must be {KIND}")
    return bool(version == API_VERSION_V1BETA2)


def _fair_sharing(top: _Section, v1beta2: bool) -> FairSharing:
    # v1beta2 has no ``enable``: the section's presence turns fair sharing on.
    fair = top.section(
        "fairSharing", {"preemptionStrategies"} | ({"enable"} if not v1beta2 else set())
    )
    on = "fairSharing" in top.data if v1beta2 else fair.flag("enable", False)
    strategies = FairSharing().preemption_strategies
    chosen = fair.names("preemptionStrategies", strategies, choices=strategies)
    return FairSharing(chosen, enable=on)


def _admission_fair_sharing(
    top: _Section, gates: Mapping[str, bool]
) -> AdmissionFairSharing | None:
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
        if not _is_number(weight) or weight < 0:
            raise ConfigError(
                f"admissionFairSharing.resourceWeights.{name}: must be a number, at least 0"
            )
    if "admissionFairSharing" not in top.data or not gates.get("AdmissionFairSharing", True):
        return None
    return AdmissionFairSharing(half_life, sampling, {str(k): float(v) for k, v in weights.items()})


def _frameworks(top: _Section, v1beta2: bool) -> tuple[str, ...]:
    keys = {"frameworks", "externalFrameworks"} | (set() if v1beta2 else {"podOptions"})
    integrations = top.section("integrations", keys)
    if integrations.data.get("externalFrameworks"):
        raise ConfigError("integrations.externalFrameworks: not supported by kq; remove it")
    return integrations.names("frameworks", ("batch/job",))


def _pod_options(top: _Section, v1beta2: bool, namespace: str) -> PodOptions:
    """v1beta1's ``integrations.podOptions`` (v1beta2 has none: ``_frameworks`` refuses it)."""
    raw = (top.data.get("integrations") or {}).get("podOptions")
    if v1beta2 or raw is None:
        return PodOptions()
    keys = {"frameworks", "externalFrameworks", "podOptions"}
    integrations = _Section(top.data.get("integrations"), "integrations", keys)
    options = integrations.section("podOptions", {"namespaceSelector", "podSelector"})
    return PodOptions(
        namespace_selector=_label_selector(options, "namespaceSelector", namespace),
        pod_selector=_label_selector(options, "podSelector", None),
    )


_GROUP_KIND = re.compile(r"[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?")


def _group_kind_concurrency(top: _Section) -> dict[str, int]:
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
    top = _Section(document, "", _TOP)
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
            health_probe_bind_address=_address(health, "healthProbeBindAddress", ":8081"),
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
