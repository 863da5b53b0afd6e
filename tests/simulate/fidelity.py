"""One trace, twice: through ``kq simulate``'s core, and as Jobs submitted to a live ``kq dev``.

Both sides report the same things: each admission (workload, when) in order, and each
preemption (victim, preemptor). Time is wall seconds on both: kq dev's kq runs on the wall
clock, its simulated cluster at ``--speed``, so a Job that should run R wall seconds declares
``kq.dev/run-seconds: R * speed``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from kq.api.priority import PRIORITY_CLASS_LABEL
from kq.api.topology import EXCLUSIVE_TOPOLOGY
from kq.runtime.client import KubeClient
from kq.runtime.resources import JOBS, Resource
from kq.scheduler.decisions import Admit, Victim
from kq.simulate.engine import Engine, Listener
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup
from tests.e2e.kqdev import KubectlWatch
from tests.harness import wait_until

Obj = dict[str, Any]
RUN_SECONDS = "kq.dev/run-seconds"
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", namespaced=True)
_UID = re.compile(r"\(UID: ([^,)]+)")


@dataclass
class Decisions:
    """What one side decided: admissions in order, with their times, and preemptions."""

    admissions: list[tuple[float, str]] = field(default_factory=list)
    preemptions: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(victim, preemptor) -> how many times."""
    finished: set[str] = field(default_factory=set)
    finishes: list[float] = field(default_factory=list)


class _Recorder(Listener):
    def __init__(self) -> None:
        self.decisions = Decisions()

    def admitted(self, decision: Admit, now: float) -> None:
        self.decisions.admissions.append((now, decision.key))

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        self.decisions.preemptions[(victim.key, preemptor)] += 1

    def finished(self, key: str, now: float) -> None:
        self.decisions.finished.add(key)
        self.decisions.finishes.append(now)


def simulated(setup: Sequence[Path], entries: Sequence[Obj]) -> Decisions:
    prepared = prepare("fidelity", load_setup(list(setup)), entries)
    recorder = _Recorder()
    Engine(prepared.core.scheduler, prepared.arrivals, recorder).run()
    return recorder.decisions


def margin(decisions: Decisions, entries: Sequence[Obj]) -> float:
    """The shortest time between two arrivals, or an arrival and a finish, or two finish
    instants in the simulation (0 when two coincide): how much latency kq dev may add before
    two of them could swap. Finishes at one instant count once: they are workloads admitted
    together with one run time, whose ends kq dev sees a few milliseconds apart."""
    instants = sorted([float(e["arrival"]) for e in entries] + sorted(set(decisions.finishes)))
    return min((b - a for a, b in pairwise(instants)), default=0.0)


def _template(entry: Mapping[str, Any], pod_set: Mapping[str, Any], speed: float,
              pod_classes: Collection[str]) -> Obj:  # fmt: skip
    """A pod template of ``pod_set``'s requests that runs the entry's run time."""
    requests = {k: str(v) for k, v in pod_set["requests"].items()}
    # A real API server wants limits on extended resources (google.com/tpu): equal requests.
    limits = {k: v for k, v in requests.items() if "/" in k}
    resources = {"requests": requests, **({"limits": limits} if limits else {})}
    container = {"name": "work", "image": "busybox", "resources": resources}
    pod: Obj = {"containers": [container], "restartPolicy": "Never",
                "tolerations": list(pod_set.get("tolerations") or ()),
                "nodeSelector": dict(pod_set.get("nodeSelector") or {})}  # fmt: skip
    if entry.get("priorityClass") in pod_classes:
        pod["priorityClassName"] = entry["priorityClass"]
    return {"metadata": {"annotations": {RUN_SECONDS: str(entry["runtime"] * speed)}},
            "spec": pod}  # fmt: skip


def _metadata(entry: Mapping[str, Any], pod_classes: Collection[str]) -> Obj:
    assert "priority" not in entry, "a job takes a priority class, not a number"
    labels = {"kueue.x-k8s.io/queue-name": entry["queue"].split("/")[-1]}
    if entry.get("priorityClass") and entry["priorityClass"] not in pod_classes:
        labels[PRIORITY_CLASS_LABEL] = entry["priorityClass"]
    return {"name": entry["name"], "namespace": entry["queue"].split("/")[0], "labels": labels}


def job(entry: Mapping[str, Any], speed: float, pod_classes: Collection[str] = ()) -> Obj:
    """The Job a trace entry stands for (one pod set: ``count`` pods of ``requests``)."""
    count = int(entry.get("count", 1))
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(entry, pod_classes),
            "spec": {"suspend": True, "parallelism": count, "completions": count,
                     "template": _template(entry, entry, speed, pod_classes)}}  # fmt: skip


def jobset(entry: Mapping[str, Any], speed: float, pod_classes: Collection[str] = ()) -> Obj:
    """The JobSet of a multislice entry: one child Job per slice of its one pod set, each
    slice alone in its domain (``exclusiveTopology``), as kq's JobSet integration reads it."""
    (pod_set,) = entry["podSets"]
    size = int(pod_set["topologyRequest"]["podSetSliceSize"])
    meta = _metadata(entry, pod_classes)
    meta["annotations"] = {EXCLUSIVE_TOPOLOGY: entry["exclusiveTopology"]}
    child = {"parallelism": size, "completions": size, "backoffLimit": 0,
             "template": _template(entry, pod_set, speed, pod_classes)}  # fmt: skip
    replicated = {"name": pod_set["name"], "replicas": int(pod_set["count"]) // size,
                  "template": {"spec": child}}  # fmt: skip
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
            "spec": {"suspend": True, "replicatedJobs": [replicated]}}  # fmt: skip


async def submit(
    kubeconfig: Path, entries: Sequence[Obj], speed: float, start: float,
    pod_classes: Collection[str] = (),
) -> None:  # fmt: skip
    """Create each entry's Job (JobSet, when it asks for exclusive slices) at ``start``
    (monotonic) plus its arrival."""
    async with await KubeClient.connect(kubeconfig) as client:
        for entry in sorted(entries, key=lambda e: e["arrival"]):
            await asyncio.sleep(max(0.0, start + entry["arrival"] - time.monotonic()))
            if entry.get("exclusiveTopology"):
                await client.create(JOBSETS, jobset(entry, speed, pod_classes))
            else:
                await client.create(JOBS, job(entry, speed, pod_classes))


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['ownerReferences'][0]['name']}"


def _true(obj: Obj) -> dict[str, Obj]:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return {c["type"]: c for c in conditions if c.get("status") == "True"}


def observed(watch: KubectlWatch, start: float, trace: Collection[str]) -> Decisions:
    """The trace's Workloads' transitions as the watch delivered them (the server's commit
    order). Others are left out: on the shared real API server, other tests' leftovers may be
    admitted while this one runs."""
    out, reserved, evicted, uids = Decisions(), set(), set(), {}
    for seen in watch.seen():
        obj = seen.object
        if not obj["metadata"].get("ownerReferences"):
            continue
        key = _key(obj)
        if key not in trace:
            continue
        uids[obj["metadata"]["uid"]] = key
        true = _true(obj)
        if "QuotaReserved" in true and key not in reserved:
            out.admissions.append((seen.at - start, key))
        reserved.discard(key) if "QuotaReserved" not in true else reserved.add(key)
        eviction = true.get("Evicted")
        if eviction is not None and eviction.get("reason") == "Preempted":
            stamp = (key, eviction.get("lastTransitionTime"))
            if stamp not in evicted:
                evicted.add(stamp)
                found = _UID.search(eviction.get("message", ""))
                out.preemptions[(key, found[1] if found else "?")] += 1
        if "Finished" in true:
            out.finished.add(key)
    # Preemptors are named by UID in the message; every Workload's UID was seen by now.
    out.preemptions = Counter({(v, uids.get(p, p)): n for (v, p), n in out.preemptions.items()})
    return out


def run_on_kq_dev(
    kubeconfig: Path, watch: KubectlWatch, entries: Sequence[Obj], speed: float, within: float,
    pod_classes: Collection[str] = (),
) -> Decisions:  # fmt: skip
    """Submit the trace on time, wait until every workload finished, and read what happened;
    ``pod_classes``: priority classes that are PriorityClasses (set on pods, not labels)."""
    # Arrivals fall a quarter second into a wall-clock second: Kueue's creationTimestamp has
    # whole seconds, and workloads one second apart must not share one through jitter.
    start = time.monotonic() + 1.25 - time.time() % 1.0
    asyncio.run(submit(kubeconfig, entries, speed, start, pod_classes))
    names = {f"{e['queue'].split('/')[0]}/{e['name']}" for e in entries}
    wait_until(lambda: observed(watch, start, names).finished >= names,
               "every workload to finish", within=within)  # fmt: skip
    return observed(watch, start, names)


def groups(decisions: Decisions) -> dict[tuple[str, int], int]:
    """(workload, nth admission) -> index of the instant it was admitted at."""
    out, nth, instants = {}, Counter[str](), sorted({at for at, _ in decisions.admissions})
    index = {at: i for i, at in enumerate(instants)}
    for at, key in decisions.admissions:
        nth[key] += 1
        out[(key, nth[key])] = index[at]
    return out


def order_differences(simulation: Decisions, live: Decisions) -> list[str]:
    """Where kq dev's admission order breaks the simulator's: its admissions, in order, must
    be the simulator's, and their instants (in the simulator) must never go backwards."""
    expected, problems, nth, last = groups(simulation), [], Counter[str](), -1
    for at, key in live.admissions:
        nth[key] += 1
        instant = expected.get((key, nth[key]))
        if instant is None:
            problems.append(f"{key} admitted (#{nth[key]}) at {at:.1f} s: not in the simulation")
        elif instant < last:
            problems.append(f"{key} admitted (#{nth[key]}) at {at:.1f} s, out of order")
        else:
            last = instant
    missing = set(expected) - {(k, n) for k, n in _numbered(live)}
    problems += [f"{k} admission #{n} never happened in kq dev" for k, n in sorted(missing)]
    return problems


def _numbered(decisions: Decisions) -> list[tuple[str, int]]:
    nth: Counter[str] = Counter()
    out = []
    for _, key in decisions.admissions:
        nth[key] += 1
        out.append((key, nth[key]))
    return out
