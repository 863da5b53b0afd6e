"""The pure driver: pop heads, snapshot, run a cycle, then assume or requeue each head."""

from __future__ import annotations

from dataclasses import replace

from kq.api.conditions import Condition, with_condition
from kq.api.limitrange import LimitRangeSummary
from kq.api.priority import POD_PRIORITY_CLASS_SOURCE, WORKLOAD_PRIORITY_CLASS_SOURCE
from kq.api.workload import QUOTA_RESERVED, Workload
from kq.cache.cache import Cache, CachedWorkload
from kq.queue.manager import QueueManager
from kq.queue.requeue import RequeueReason
from kq.scheduler.cycle import CycleResult, schedule
from kq.scheduler.decisions import Admit, Pending
from kq.scheduler.early import release_fitting
from kq.scheduler.held import held_words, parked_words
from kq.scheduler.last import LastDecisions
from kq.scheduler.observers import Observers
from kq.scheduler.plugins import AdmissionPlugins
from kq.scheduler.trust import distrust
from kq.workload.info import admission_usage, new_info, with_obj
from kq.workload.resources import adjusted


class Scheduler:
    """Ties the cache and queues together; the runtime writes what ``run_cycle`` returns."""

    def __init__(
        self,
        cache: Cache,
        queues: QueueManager,
        plugins: AdmissionPlugins,
        observers: Observers | None = None,
    ) -> None:
        self.cache = cache
        self.queues = queues
        self.plugins = plugins
        self.observers = observers or Observers()
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.limit_ranges: dict[str, LimitRangeSummary] = {}
        """Per namespace, the summary of its LimitRanges (namespaces without any are absent)."""
        self.last = LastDecisions()
        """Each workload's last decision and the assignment it was made on (``explain``)."""
        self.untrusted: dict[str, str] = {}
        """Quota holders whose admission kq could not have made (see ``trust``), with why:
        never counted; the controller evicts them."""

    def run_cycle(self, now: float) -> CycleResult:
        """One cycle; ``now`` stamps the assumed ``QuotaReserved`` condition."""
        self.queues.take_requeues(now)
        heads = self.queues.heads(self.cache.active())
        if not heads:
            # Arrivals in parked shapes are told why they wait without costing a try.
            return CycleResult((), 0, held=parked_words(self.queues, now))
        snapshot = self.cache.snapshot()
        snapshot.fair_sharing = self.plugins.fair_sharing
        preemptors = self.queues.preemptors(heads)
        result = schedule(snapshot, heads, self.plugins, self.namespace_labels, preemptors)
        self.last.record(result, now)
        by_key = result.by_key
        for info in heads:
            decision = by_key[info.key]
            if isinstance(decision, Admit):
                usage = admission_usage(info.obj, decision.admission)
                reserved = Condition(
                    QUOTA_RESERVED,
                    "True",
                    "QuotaReserved",
                    f"Quota reserved in ClusterQueue {info.cluster_queue}",
                    now,
                )
                admitted = info.obj.with_admission(
                    decision.admission, with_condition(info.obj.conditions, reserved, now)
                )
                self.cache.assume_workload(with_obj(info, admitted, usage))
                self.queues.admitted(info.key)
            elif isinstance(decision, Pending):
                words = (decision.reason, decision.message)
                self.queues.requeue(info, decision.requeue, words, now)
            else:
                self.queues.requeue(info, RequeueReason.PENDING_PREEMPTION)
        self.observers.notify(result)
        # Read after the requeues above: who waits behind a head depends on where it went.
        held = held_words(self.queues, result.decisions) + parked_words(self.queues, now)
        return replace(result, held=held) if held else result

    def workload_changed(self, workload: Workload) -> str | None:
        """Route an informer event: quota holders to the cache, pending ones to their queue.

        Returns why a pending workload can't be queued (LocalQueue/ClusterQueue missing).
        """
        key = workload.key
        cached = self.cache.workload(key)
        if workload.is_finished:
            self.workload_deleted(key)
            return None
        self.untrusted.pop(key, None)
        if workload.has_quota_reservation and workload.admission is not None:
            self.queues.delete_workload(key)
            why = None if _counted_as_is(cached, workload) else self._distrust(workload)
            if why is not None:
                self.untrusted[key] = why
                if cached is not None:
                    self.release(key)
                return None
            info = new_info(workload, workload.admission.cluster_queue)
            self.cache.add_workload(info, admitted=workload.is_admitted)
            if cached is not None and not cached.assumed and _may_free_room(cached, workload):
                self.queues.requeue_inadmissible(self.cache.cohort_tree_of(info.cluster_queue))
            return None
        if cached is not None and cached.assumed:
            return None  # our admission write is not visible yet; this event is older
        if cached is not None:
            self.release(key)
        if not workload.active:
            self.queues.delete_workload(key)
            return None
        summary = self.limit_ranges.get(workload.namespace)
        return self.queues.add_workload(adjusted(workload, summary))

    def workload_deleted(self, key: str) -> None:
        """Gone or finished: out of its queue, and its quota (if any) released."""
        self.untrusted.pop(key, None)
        self.last.forget(key)
        self.queues.delete_workload(key)
        self.release(key)

    def _distrust(self, workload: Workload) -> str | None:
        assert workload.admission is not None
        lq = self.queues.local_queues.get(f"{workload.namespace}/{workload.queue_name}")
        queue_cq = None if lq is None else lq.cluster_queue
        cq = self.cache.cluster_queues.get(workload.admission.cluster_queue)
        return distrust(workload, workload.admission, queue_cq, cq)

    def release(self, key: str) -> None:
        """A quota holder finished, was deleted or evicted: free it and wake its cohort."""
        placed = self.cache.placements.holds(key)
        info = self.cache.delete_workload(key)
        if info is not None:
            # Nodes it held may be what a parked workload of any cohort waits for.
            queues = self.queues.queues if placed else self.cache.cohort_tree_of(info.cluster_queue)
            if self.queues.paced:
                release_fitting(self.cache, self.queues, queues)
            self.queues.requeue_inadmissible(queues)

    def cluster_queue_changed(self, name: str) -> None:
        """A ClusterQueue was created or its spec changed: retry its whole cohort tree."""
        self.queues.requeue_inadmissible(self.cache.cohort_tree_of(name))

    def cohort_changed(self, name: str) -> None:
        """A Cohort was created, changed or deleted: retry every queue under its root."""
        self.queues.requeue_inadmissible(self.cache.queues_under_cohort(name))

    def flavors_or_checks_changed(self) -> None:
        """A ResourceFlavor or AdmissionCheck changed: any queue may now fit or be active."""
        self.queues.requeue_inadmissible(list(self.queues.queues))

    def forget(self, key: str) -> None:
        """The admission write failed: give the quota back (the runtime re-adds the workload)."""
        cached = self.cache.workload(key)
        self.cache.forget_workload(key)
        if cached is not None:
            self.queues.requeue_inadmissible(self.cache.cohort_tree_of(cached.info.cluster_queue))


def _counted_as_is(cached: CachedWorkload | None, workload: Workload) -> bool:
    """kq's own admission (assumed when written), or one it counted before, unchanged: a
    ClusterQueue edited since does not undo it."""
    return cached is not None and cached.info.obj.admission == workload.admission


def _may_free_room(old: CachedWorkload, new: Workload) -> bool:
    """Whether a quota holder's update may let parked workloads in, as Kueue's workload
    controller judges it: fewer pods in use (reclaimable pods of an admitted workload) or a
    new priority, which changes who may preempt it. An assumed entry is our own admission,
    still pending as far as the API is concerned, so it frees nothing."""
    if old.admitted and new.is_admitted and old.info.obj.reclaimable_pods != new.reclaimable_pods:
        return True
    return _priority_changed(old.info.obj, new)


def _priority_changed(old: Workload, new: Workload) -> bool:
    """Only a WorkloadPriorityClass priority is followed (a pod PriorityClass's is fixed), and
    the boost, as Kueue requeues on a change of its annotation."""
    if new.priority_boost != old.priority_boost:
        return True
    if (
        old.priority_class_source == POD_PRIORITY_CLASS_SOURCE
        or new.priority_class_source != WORKLOAD_PRIORITY_CLASS_SOURCE
    ):
        return False
    if new.priority_class_name and new.priority_class_name != old.priority_class_name:
        return True
    return new.priority != old.priority
