"""An in-memory cluster for driving the pure controllers in tests (a test driver, not product code).

It applies actions the way the API server and garbage collector would, as far as the simulated
controllers depend on it: uids and timestamps on create, merge patches, graceful pod deletion,
finalizers, and background/foreground cascading through ownerReferences.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from kq.sandbox.cluster import serving
from kq.sandbox.cluster.actions import Action, Create, Event, Obj, Patch, meta
from kq.sandbox.cluster.clock import ManualClock, rfc3339
from kq.sandbox.cluster.eviction import next_eviction, reconcile_evictions
from kq.sandbox.cluster.job_controller import deadline, reconcile_job, release_orphans
from kq.sandbox.cluster.jobset_controller import reconcile_jobset
from kq.sandbox.cluster.kubelet import DEFAULT_RUN_SECONDS, next_wakeup, reconcile_pods
from kq.sandbox.cluster.mpijob_controller import reconcile_mpijob
from kq.sandbox.cluster.node_lifecycle import reconcile_nodes
from kq.sandbox.cluster.profiles import Profile
from kq.sandbox.cluster.provisioning import next_wakeup as provisioning_wakeup
from kq.sandbox.cluster.provisioning import reconcile_provisioning
from kq.sandbox.cluster.raycluster_controller import reconcile_raycluster
from kq.sandbox.cluster.rayjob_controller import reconcile_rayjob, shutdown_at
from kq.sandbox.cluster.scheduling import schedule

FOREGROUND = "foregroundDeletion"
Key = tuple[str, str, str]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class World:
    def __init__(self, clock: ManualClock | None = None, profile: Profile | None = None) -> None:
        self.clock = clock or ManualClock()
        self.profile = profile  # with a profile, the simulated autoscaler runs too
        self.run_seconds = profile.default_run_seconds if profile else DEFAULT_RUN_SECONDS
        self.objects: dict[Key, Obj] = {}
        self.events: list[Event] = []
        self._serial = 0

    # -- storage ---------------------------------------------------------------------------
    def add(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        m = obj.setdefault("metadata", {})
        if obj["kind"] != "Node":
            m.setdefault("namespace", "default")
        self._serial += 1
        m["uid"] = str(uuid.UUID(int=self._serial))
        m["creationTimestamp"] = rfc3339(self.clock.now())
        m["resourceVersion"] = str(self._serial)
        self.objects[self._key(obj)] = obj
        return obj

    @staticmethod
    def _key(obj: Obj) -> Key:
        return str(obj["kind"]), str(meta(obj).get("namespace", "")), str(meta(obj)["name"])

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for k, o in sorted(self.objects.items()) if k[0] == kind]

    def get(self, kind: str, name: str, namespace: str = "default") -> Obj:
        return self.objects[(kind, "" if kind == "Node" else namespace, name)]

    def find(self, kind: str, name: str, namespace: str = "default") -> Obj | None:
        return self.objects.get((kind, "" if kind == "Node" else namespace, name))

    # -- applying actions ------------------------------------------------------------------
    def apply(self, actions: Iterable[Action]) -> int:
        """Apply actions in order; returns how many changed state (events do not)."""
        changed = 0
        for action in actions:
            if isinstance(action, Event):
                self.events.append(action)
            elif isinstance(action, Create):
                changed += self._create(action.obj)
            elif isinstance(action, Patch):
                key = (action.ref.kind, action.ref.namespace, action.ref.name)
                if key in self.objects:
                    before = self.objects[key]
                    after = merge_patch(before, action.patch)
                    if after != before:
                        self.objects[key] = after
                        changed += 1
                        self._maybe_remove(key)
            else:
                key = (action.ref.kind, action.ref.namespace, action.ref.name)
                changed += self._delete(key, action.propagation, action.grace_period_seconds)
        return changed

    def _create(self, obj: Obj) -> int:
        if obj["kind"] == "Binding":
            pod = self.objects[("Pod", meta(obj)["namespace"], meta(obj)["name"])]
            pod["spec"]["nodeName"] = obj["target"]["name"]
            status = pod.setdefault("status", {"phase": "Pending"})
            others = [c for c in status.get("conditions") or () if c["type"] != "PodScheduled"]
            status["conditions"] = [
                *others,
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(self.clock.now()),
                },
            ]
            return 1  # fmt: skip
        if self._key(obj) in self.objects:
            return 0  # AlreadyExists: the controller sees it next round
        created = self.add(obj)
        if created["kind"] == "Pod":
            created.setdefault("status", {"phase": "Pending"})
        return 1

    def _delete(self, key: Key, propagation: str, grace: int | None) -> int:
        obj = self.objects.get(key)
        if obj is None:
            return 0
        m = obj["metadata"]
        if m.get("deletionTimestamp") and (
            grace is None or m.get("deletionGracePeriodSeconds") == 0
        ):
            return 0
        bound = obj["kind"] == "Pod" and obj.get("spec", {}).get("nodeName")
        m["deletionTimestamp"] = m.get("deletionTimestamp") or rfc3339(self.clock.now())
        m["deletionGracePeriodSeconds"] = (grace if grace is not None else 30) if bound else 0
        if propagation == "Foreground" and self._dependents(m["uid"]):
            m["finalizers"] = [*(m.get("finalizers") or []), FOREGROUND]
        self._maybe_remove(key)
        return 1

    def _maybe_remove(self, key: Key) -> None:
        obj = self.objects.get(key)
        if obj is None:
            return
        m = obj["metadata"]
        done = m.get("deletionTimestamp") and not m.get("finalizers")
        if done and m.get("deletionGracePeriodSeconds", 0) == 0:
            del self.objects[key]

    def _dependents(self, uid: str) -> list[Key]:
        return [
            k
            for k, o in self.objects.items()
            if any(r.get("uid") == uid for r in meta(o).get("ownerReferences") or ())
        ]

    def collect_garbage(self) -> int:
        """Delete dependents of deleted or deleting-in-foreground owners."""
        changed = 0
        uids = {meta(o)["uid"] for o in self.objects.values()}
        for key, obj in list(self.objects.items()):
            if key not in self.objects:
                continue
            m = obj["metadata"]
            owners = [r["uid"] for r in m.get("ownerReferences") or ()]
            if owners and not any(u in uids for u in owners) and not m.get("deletionTimestamp"):
                changed += self._delete(key, "Background", None)
            if FOREGROUND in (m.get("finalizers") or ()):
                deps = self._dependents(m["uid"])
                for dep in deps:
                    if not self.objects[dep]["metadata"].get("deletionTimestamp"):
                        changed += self._delete(dep, "Foreground", None)
                if not deps:
                    m["finalizers"] = [f for f in m["finalizers"] if f != FOREGROUND] or None
                    if m["finalizers"] is None:
                        del m["finalizers"]
                    self._maybe_remove(key)
                    changed += 1
        return changed

    # -- the control loop ------------------------------------------------------------------
    def round(self) -> int:
        """Run every controller once, applying each one's actions before the next runs."""
        now = self.clock.now
        changed = self.apply(reconcile_nodes(self.of_kind("Node"), now()))
        changed += self.apply(reconcile_evictions(self.of_kind("Pod"), self.of_kind("Node"), now()))
        if self.profile is not None:
            changed += self.apply(
                reconcile_provisioning(self.of_kind("ProvisioningRequest"),
                                       self.of_kind("PodTemplate"), self.of_kind("Node"),
                                       self.of_kind("Pod"), self.profile, now())
            )  # fmt: skip
        changed += self.apply(schedule(self.of_kind("Pod"), self.of_kind("Node"), now()))
        for actions in serving.before_kubelet(self.of_kind):
            changed += self.apply(actions)
        changed += self.apply(
            reconcile_pods(self.of_kind("Pod"), self.of_kind("Node"), now(), self.run_seconds)
        )
        for job in self.of_kind("Job"):
            changed += self.apply(reconcile_job(job, self.of_kind("Pod"), now()))
        changed += self.apply(release_orphans(self.of_kind("Pod"), self.of_kind("Job")))
        for jobset in self.of_kind("JobSet"):
            changed += self.apply(reconcile_jobset(jobset, self.of_kind("Job"), now()))
        for rayjob in self.of_kind("RayJob"):
            changed += self.apply(
                reconcile_rayjob(rayjob, self.of_kind("RayCluster"), self.of_kind("Job"), now())
            )
        for cluster in self.of_kind("RayCluster"):
            changed += self.apply(reconcile_raycluster(cluster, self.of_kind("Pod"), now()))
        for mpijob in self.of_kind("MPIJob"):
            changed += self.apply(reconcile_mpijob(mpijob, self.of_kind("Job"), self.of_kind("Pod"),
                                                   self.of_kind("ConfigMap"), now()))  # fmt: skip
        for actions in serving.passes(self.of_kind, now()):
            changed += self.apply(actions)
        return changed + self.collect_garbage()

    def settle(self, max_rounds: int = 200) -> None:
        """Run rounds until nothing changes (quiescent at the current instant)."""
        for _ in range(max_rounds):
            if not self.round():
                return
        raise AssertionError("the world did not settle")

    def next_wakeup(self) -> datetime | None:
        """The earliest time-driven change: a pod's end or eviction, a Job deadline, an autoscaler
        step."""
        now = self.clock.now()
        moments = [
            next_wakeup(self.of_kind("Pod"), self.run_seconds),
            next_eviction(self.of_kind("Pod"), self.of_kind("Node")),
        ]
        moments += [deadline(job) for job in self.of_kind("Job")]
        moments += [shutdown_at(rayjob) for rayjob in self.of_kind("RayJob")]
        moments.append(serving.next_wakeup(self.of_kind))
        if self.profile is not None:
            moments.append(provisioning_wakeup(self.of_kind("ProvisioningRequest"), now))
        # A moment already past was acted on by the settled round (a RayJob's shutdown).
        return min((m for m in moments if m is not None and m > now), default=None)

    def run(self, until: Callable[[World], bool], max_seconds: float = 3600.0) -> None:
        """Settle, then jump the clock to the next pod deadline, until ``until`` holds."""
        start = self.clock.now()
        while True:
            self.settle()
            if until(self):
                return
            wake = self.next_wakeup()
            if wake is None or (wake - start).total_seconds() > max_seconds:
                raise AssertionError("the world went quiet before the condition held")
            self.clock.advance(max((wake - self.clock.now()).total_seconds(), 0.0))
