from __future__ import annotations

from pathlib import Path

import pytest

from kq.config import (
    API_VERSION_V1BETA2,
    ConfigError,
    KqConfig,
    PluginsConfig,
    PodOptions,
    parse_duration,
)
from kq.config_file import load_config, parse_config

V1BETA2 = API_VERSION_V1BETA2


def test_missing_file_means_defaults() -> None:
    assert load_config(None) == KqConfig()


def test_plugins_section_is_parsed() -> None:
    config = parse_config({"plugins": {"disabled": ["a"], "enabled": ["b"], "autoload": False}})
    assert config.plugins == PluginsConfig(autoload=False, disabled=("a",), enabled=("b",))


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"plugin": {}}, "plugin"),
        ({"plugins": {"disable": ["a"]}}, "plugins.disable"),
        ({"plugins": {"disabled": "a"}}, "plugins.disabled"),
        ({"plugins": {"autoload": "yes"}}, "plugins.autoload"),
        (["not", "a", "mapping"], "configuration"),
    ],
)
def test_errors_name_the_field(document: object, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}:"):
        parse_config(document)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kq.yaml"
    path.write_text("plugins: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


KUEUE_CONFIGURATION = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
namespace: kq-system
manageJobsWithoutQueueName: true
waitForPodsReady:
  enable: true
  timeout: 2m30s
  recoveryTimeout: 45s
  requeuingStrategy:
    timestamp: Creation
    backoffLimitCount: 5
integrations:
  frameworks: ["batch/job", "jobset.x-k8s.io/jobset"]
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare]
clientConnection:
  qps: 50
  burst: 100
leaderElection:
  leaderElect: true
  leaseDuration: 20s
  renewDeadline: 15s
  retryPeriod: 500ms
  resourceName: my-lease
metrics:
  bindAddress: 127.0.0.1:9090
health:
  healthProbeBindAddress: :8081
webhook:
  port: 9443
  host: 127.0.0.1
featureGates:
  PartialAdmission: true
plugins:
  disabled: [x]
"""


def test_a_kueue_configuration_is_read(tmp_path: Path) -> None:
    path = tmp_path / "kq.yaml"
    path.write_text(KUEUE_CONFIGURATION)
    config = load_config(path)
    assert config.namespace == "kq-system"
    assert config.manage_jobs_without_queue_name
    ready = config.wait_for_pods_ready
    assert (ready.enable, ready.timeout, ready.block_admission) == (True, 150.0, True)
    assert ready.requeuing_strategy.timestamp == "Creation"
    assert ready.requeuing_strategy.backoff_limit_count == 5
    assert ready.recovery_timeout == 45.0
    assert config.frameworks == ("batch/job", "jobset.x-k8s.io/jobset")
    assert config.fair_sharing.preemption_strategies == ("LessThanOrEqualToFinalShare",)
    assert not config.fair_sharing.enable  # v1beta1: only `enable: true` turns it on
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    election = config.leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        20.0,
        15.0,
        0.5,
    )
    assert config.lease_namespace == "kq-system"
    assert config.metrics_bind_address == "127.0.0.1:9090"
    assert config.feature_gates == {"PartialAdmission": True}
    assert (config.webhook.port, config.webhook.host) == (9443, "127.0.0.1")
    assert config.plugins.disabled == ("x",)


def test_defaults_follow_upstream() -> None:
    config = KqConfig()
    election = config.leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        15.0,
        10.0,
        2.0,
    )
    assert election.resource_name == "c1f6bfd2.kueue.x-k8s.io"
    assert config.lease_namespace == "kueue-system"
    assert config.wait_for_pods_ready.timeout == 300.0
    assert config.health.readiness_endpoint_name == "readyz"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15.0), ("1m30s", 90.0), ("250ms", 0.25), ("1h", 3600.0), ("1.5s", 1.5), ("0", 0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "1d", "s", "1m 30s", "-1s"])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a Go duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}},
            "leaderElection.renewDeadline: must be less than leaseDuration",
        ),
        ({"leaderElection": {"retryPeriod": "9s"}}, "leaderElection.retryPeriod:"),
        ({"leaderElection": {"leaseDuration": "15"}}, "leaderElection.leaseDuration:"),
        ({"waitForPodsReady": {"timeout": 5}}, "waitForPodsReady.timeout:"),
        ({"waitForPodsReady": {"enabled": True}}, "waitForPodsReady.enabled: unknown field"),
        (
            {"waitForPodsReady": {"requeuingStrategy": {"timestamp": "Now"}}},
            "waitForPodsReady.requeuingStrategy.timestamp:",
        ),
        ({"clientConnection": {"qps": 0}}, "clientConnection.qps:"),
        ({"clientConnection": {"burst": "many"}}, "clientConnection.burst:"),
        (
            {"fairSharing": {"preemptionStrategies": ["Greedy"]}},
            "fairSharing.preemptionStrategies:",
        ),
        ({"metrics": {"bindAddress": "8080"}}, "metrics.bindAddress:"),
        (
            {"metrics": {"bindAddress": ":8080", "secureServing": False}},
            "metrics.secureServing: false serves metrics to anyone",
        ),
        ({"webhook": {"port": 70000}}, "webhook.port:"),
        ({"featureGates": {"A": "yes"}}, "featureGates:"),
        ({"featureGates": {"TopologyAwareScheduling": True}}, "featureGates.TopologyAware"),
        ({"featureGates": {"PartialAdmission": False}}, "featureGates.PartialAdmission: kq always"),
        ({"integrations": {"externalFrameworks": ["Foo.v1.example.com"]}}, "integrations.ext"),
        (
            {"integrations": {"podOptions": {"namespaceSelector": {}}}},
            'integrations.podOptions.namespaceSelector: should not match the "kube-system"',
        ),
        ({"integrations": {"podOptions": {"podSelector": []}}}, "integrations.podOptions.podSel"),
        ({"apiVersion": "config.kueue.x-k8s.io/v1alpha1"}, "apiVersion:"),
        ({"apiVersion": V1BETA2, "fairSharing": {"enable": True}}, "fairSharing.enable: unknown"),
        ({"apiVersion": V1BETA2, "waitForPodsReady": {"enable": True}}, "waitForPodsReady.enable"),
        ({"apiVersion": V1BETA2, "integrations": {"podOptions": {}}}, "integrations.podOptions"),
        ({"waitForPodsReady": {"recoveryTimeout": "-1s"}}, "waitForPodsReady.recoveryTimeout:"),
        ({"controller": {"groupKindConcurrency": {"Job.batch": 0}}}, "controller.groupKindConcu"),
        ({"controller": {"groupKindConcurrency": {"job": 1}}}, "controller.groupKindConcurrency"),
        ({"controller": {"groupKindConcurrency": [1]}}, "controller.groupKindConcurrency:"),
        ({"controller": {"cacheSync": "1m"}}, "controller.cacheSync: unknown field"),
        ({"kind": "Nope"}, "kind:"),
        ({"integrations": {"frameworks": "batch/job"}}, "integrations.frameworks:"),
    ],
)
def test_validation_names_the_field(document: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    assert str(caught.value).startswith(message)


def test_managed_jobs_namespace_selector_defaults_to_all_but_the_system_namespaces() -> None:
    expected = {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", "kq-system"],
            }
        ]
    }
    assert parse_config({"namespace": "kq-system"}).jobs_namespace_selector == expected
    assert KqConfig(namespace="kq-system").jobs_namespace_selector == expected
    assert KqConfig().jobs_namespace_selector["matchExpressions"][0]["values"] == [
        "kube-system",
        "kueue-system",
    ]


def test_managed_jobs_namespace_selector_is_read() -> None:
    selector = {
        "matchLabels": {"managed-by-kueue": "true"},
        "matchExpressions": [{"key": "team", "operator": "Exists"}],
    }
    config = parse_config({"managedJobsNamespaceSelector": selector})
    assert config.managed_jobs_namespace_selector == selector
    assert config.jobs_namespace_selector == selector


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({}, 'managedJobsNamespaceSelector: should not match the "kube-system" namespace'),
        (
            {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                   "values": ["kube-system"]}]},
            'managedJobsNamespaceSelector: should not match the "kueue-system" namespace',
        ),
        ("team=a", "managedJobsNamespaceSelector: must be a mapping"),
        ({"matchLabel": {}}, "managedJobsNamespaceSelector.matchLabel: unknown field"),
        ({"matchLabels": {"a": 1}}, "managedJobsNamespaceSelector.matchLabels:"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            "managedJobsNamespaceSelector.matchExpressions[0].operator:",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "managedJobsNamespaceSelector.matchExpressions[0].values: must be specified",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "managedJobsNamespaceSelector.matchExpressions[0].values: may not be specified",
        ),
        (
            {"matchExpressions": [{"operator": "Exists"}]},
            "managedJobsNamespaceSelector.matchExpressions[0].key: must not be empty",
        ),
    ],
)  # fmt: skip
def test_managed_jobs_namespace_selector_is_validated_as_upstream(
    selector: object, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"managedJobsNamespaceSelector": selector})
    assert str(caught.value).startswith(message)


# Kueue v0.19's own config/components/manager/controller_manager_config.yaml, uncommented
# parts as shipped (kq has no integration for some frameworks: it warns at start-up).
KUEUE_DEFAULT_V1BETA2 = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - "batch/job"
  - "kubeflow.org/mpijob"
  - "ray.io/rayjob"
  - "jobset.x-k8s.io/jobset"
"""


def test_kueues_default_v1beta2_configuration_is_read(tmp_path: Path) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(KUEUE_DEFAULT_V1BETA2)
    config = load_config(path)
    # v1beta2 waits for pods by default: 30 minutes, recovery as long, admission not blocked.
    ready = config.wait_for_pods_ready
    assert (ready.enable, ready.timeout, ready.recovery_timeout) == (True, 1800.0, 1800.0)
    assert not ready.block_admission
    assert config.workers("Workload.kueue.x-k8s.io") == 10
    assert config.workers("Job.batch") == 5
    assert config.workers("JobSet.jobset.x-k8s.io") == 4  # not named: kq's default
    assert config.metrics_bind_address == ":8443"


@pytest.mark.parametrize(
    ("document", "enable", "timeout", "recovery", "block"),
    [
        ({"apiVersion": V1BETA2}, True, 1800.0, 1800.0, False),
        (
            {"apiVersion": V1BETA2, "featureGates": {"DisableWaitForPodsReady": True}},
            False,
            1800.0,
            1800.0,
            False,
        ),
        ({"apiVersion": V1BETA2, "waitForPodsReady": {"timeout": "2m"}}, True, 120.0, 120.0, False),
        (
            {"apiVersion": V1BETA2, "waitForPodsReady": {"recoveryTimeout": "0s"}},
            True,
            1800.0,
            None,
            False,
        ),
        ({}, False, 300.0, 300.0, False),
        ({"waitForPodsReady": {"enable": True}}, True, 300.0, 300.0, True),
        ({"waitForPodsReady": {"enable": True, "timeout": "1m"}}, True, 60.0, 60.0, True),
    ],
)
def test_wait_for_pods_ready_defaults_per_version(
    document: dict[str, object], enable: bool, timeout: float, recovery: float | None, block: bool
) -> None:
    ready = parse_config(document).wait_for_pods_ready
    assert (ready.enable, ready.timeout, ready.recovery_timeout) == (enable, timeout, recovery)
    assert ready.block_admission == block


@pytest.mark.parametrize(
    ("metrics", "address", "secure"),
    [
        ({}, ":8443", True),
        ({"bindAddress": "0"}, "", True),
        ({"bindAddress": ""}, "", True),
        ({"bindAddress": "127.0.0.1:9090", "secureServing": False}, "127.0.0.1:9090", False),
        ({"bindAddress": ":9443"}, ":9443", True),
    ],
)
def test_metrics_are_served_securely_unless_on_loopback(
    metrics: dict[str, object], address: str, secure: bool
) -> None:
    config = parse_config({"metrics": metrics})
    assert (config.metrics_bind_address, config.metrics_secure_serving) == (address, secure)


def test_fair_sharing_is_on_with_enable_in_v1beta1_and_with_the_section_in_v1beta2() -> None:
    on = parse_config({"fairSharing": {"enable": True}})
    assert on.fair_sharing.strategies_if_enabled() == (
        "LessThanOrEqualToFinalShare",
        "LessThanInitialShare",
    )
    assert parse_config({"apiVersion": V1BETA2, "fairSharing": {}}).fair_sharing.enable
    assert parse_config({}).fair_sharing.strategies_if_enabled() is None


def test_v1beta1_pod_options_select_the_pods_kq_may_gate() -> None:
    selector = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["ml"]}]}
    parsed = parse_config(
        {"integrations": {"frameworks": ["pod"], "podOptions": {"podSelector": selector}}}
    )
    assert parsed.pod_options == PodOptions(namespace_selector=None, pod_selector=selector)
    assert parse_config({}).pod_options == PodOptions()


def test_retries_of_parked_workloads_are_paced_as_kueues_are() -> None:
    def period(gates: dict[str, bool]) -> float:
        return parse_config({"featureGates": gates}).requeue_period

    assert period({"SchedulerLongRequeueInterval": True}) == 10.0
    assert period({"SchedulerLongRequeueInterval": False}) == 1.0
    assert period({}) == 1.0
