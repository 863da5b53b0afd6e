"""ClusterFacts for ``decide``, read from the informers' stores."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.api.selectors import LabelSelector, parse_label_selector
from kq.config import NAMESPACE_NAME_LABEL, KqConfig, PodOptions, default_namespace_selector
from kq.jobframework.constants import DEFAULT_LOCAL_QUEUE, SUSPENDING_PARENT_ANNOTATION
from kq.jobframework.interface import GenericJob
from kq.jobframework.objects import (
    Obj,
    annotations_of,
    controller_owner,
    labels,
    meta,
    name,
    namespace,
)
from kq.jobframework.priority import Priorities
from kq.jobframework.queue_name import is_managed
from kq.jobframework.reconciler import ClusterFacts
from kq.jobframework.webhook import WebhookFacts
from kq.jobframework.workload import is_admitted
from kq.runtime.store import OWNER_INDEX, Store


@dataclass(frozen=True)
class JobFrameworkOptions:
    """The configuration the job controllers read."""

    frameworks: tuple[str, ...] = ("batch/job",)
    """Framework names to run (``integrations.frameworks``); other registered ones idle."""
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] = field(
        default_factory=lambda: default_namespace_selector("kueue-system")
    )
    pod_options: PodOptions = field(default_factory=PodOptions)
    wait_for_pods_ready: bool = False
    events_namespace: str = "kueue-system"
    """Where events about cluster-scoped objects go (the controller's namespace)."""
    leader_poll_interval: float = 1.0

    @classmethod
    def from_config(cls, config: KqConfig) -> JobFrameworkOptions:
        return cls(
            frameworks=tuple(config.frameworks),
            manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
            managed_jobs_namespace_selector=config.jobs_namespace_selector,
            pod_options=config.pod_options,
            wait_for_pods_ready=config.wait_for_pods_ready.enable,
            events_namespace=config.namespace,
        )


@dataclass(frozen=True)
class Caches:
    """The shared stores every job controller reads."""

    workloads: Store
    flavors: Store
    workload_priority_classes: Store
    priority_classes: Store
    namespaces: Store
    local_queues: Store


class FactSource:
    """Builds the facts for one job from the caches and the other job kinds' stores."""

    def __init__(
        self,
        caches: Caches,
        options: JobFrameworkOptions,
        jobs: Mapping[tuple[str, str], tuple[GenericJob, Store]],
    ) -> None:
        self._caches = caches
        self._options = options
        # Integration and store of every running job kind, by (apiVersion, kind).
        self._jobs = jobs
        self._selector: LabelSelector | None = parse_label_selector(
            options.managed_jobs_namespace_selector
        )
        pods = options.pod_options
        # Unlike the namespace selector, an absent pod option selects everything.
        self._pod_namespaces = parse_label_selector(pods.namespace_selector)
        self._pods = parse_label_selector(pods.pod_selector)

    def facts(self, job: Obj) -> ClusterFacts:
        return ClusterFacts(
            flavors={name(f): f for f in self._caches.flavors.values()},
            priorities=self._priorities(),
            manage_jobs_without_queue_name=self._options.manage_jobs_without_queue_name,
            namespace_managed=self.namespace_managed(namespace(job)) and self.pod_selected(job),
            wait_for_pods_ready=self._options.wait_for_pods_ready,
            # A pod is a top-level job to the controller, as upstream's (IsTopLevel): only the
            # webhook looks at its owners, and leaves a managed owner's pods unmarked.
            ancestor_admitted=None if _is_pod(job) else self.ancestor_admitted(job),
        )

    def webhook_facts(self, ns: str, job: Obj) -> WebhookFacts:
        """What the job webhooks need to know about ``job`` in namespace ``ns``."""
        # A job under review on CREATE may not carry its namespace yet.
        job = {**job, "metadata": {**meta(job), "namespace": ns}}
        return WebhookFacts(
            manage_jobs_without_queue_name=self._options.manage_jobs_without_queue_name,
            namespace_managed=self.namespace_managed(ns),
            excluded=not self.pod_selected(job)
            or (_is_pod(job) and not _suspended_by_parent(job) and not self.namespace_managed(ns)),
            default_local_queue_exists=f"{ns}/{DEFAULT_LOCAL_QUEUE}" in self._caches.local_queues,
            ancestor_managed=self.ancestor_admitted(job) is not None,
        )

    def namespace_managed(self, ns: str) -> bool:
        """Whether namespace ``ns`` matches ``managedJobsNamespaceSelector``.

        A namespace not in the cache is judged by its name label alone. Upstream skips the
        job instead, but the embedded API server keeps no object for ``default``, and a real
        one only lags: the Namespace handler reconciles the job again when it arrives.
        """
        if self._selector is None:
            return False
        return self._selector.matches(self._namespace_labels(ns))

    def pod_selected(self, job: Obj) -> bool:
        """Whether v1beta1's ``podOptions`` let kq manage ``job``; only pods are filtered."""
        if not _is_pod(job) or _suspended_by_parent(job):
            return True  # a serving owner's webhook chose its pods (upstream skips the rest)
        if "pod" not in self._options.frameworks:
            return False  # enabled only implicitly, for a serving owner's pods
        if self._pods is not None and not self._pods.matches(dict(labels(job))):
            return False
        if self._pod_namespaces is None:
            return True
        return self._pod_namespaces.matches(self._namespace_labels(namespace(job)))

    def _namespace_labels(self, ns: str) -> dict[str, str]:
        obj = self._caches.namespaces.get(ns)
        ns_labels = dict(labels(obj)) if obj is not None else {}
        # The API server sets this label on every Namespace; the embedded one may not.
        ns_labels.setdefault(NAMESPACE_NAME_LABEL, ns)
        return ns_labels

    def ancestor_admitted(self, job: Obj) -> bool | None:
        """Whether the Workload of the kq-managed job owning ``job`` is admitted.

        ``None`` when no running job kind controls ``job``, or its owner is not managed. An
        owner not (yet) in the cache counts as managed and not admitted: the child waits.
        """
        owner = controller_owner(job)
        if owner is None or _suspended_by_parent(job):
            return None
        found = self._jobs.get((str(owner.get("apiVersion", "")), str(owner.get("kind", ""))))
        if found is None:
            return None
        _, store = found
        parent = store.get(f"{namespace(job)}/{owner.get('name', '')}")
        if parent is not None and not is_managed(
            parent,
            manage_jobs_without_queue_name=self._options.manage_jobs_without_queue_name,
            namespace_managed=self.namespace_managed(namespace(job)),
        ):
            return None
        workloads = self._caches.workloads.by_index(OWNER_INDEX, str(owner.get("uid", "")))
        return any(is_admitted(wl) for wl in workloads)

    def _priorities(self) -> Priorities:
        pod_classes = self._caches.priority_classes.values()
        return Priorities(
            workload_classes={
                name(c): int(c.get("value", 0))
                for c in self._caches.workload_priority_classes.values()
            },
            pod_classes={name(c): int(c.get("value", 0)) for c in pod_classes},
            global_defaults=[name(c) for c in pod_classes if c.get("globalDefault")],
        )


def _suspended_by_parent(obj: Obj) -> bool:
    """A pod a serving owner (Deployment, StatefulSet, LeaderWorkerSet) handed to kq."""
    return _is_pod(obj) and SUSPENDING_PARENT_ANNOTATION in annotations_of(obj)


def _is_pod(obj: Obj) -> bool:
    return (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Pod")
