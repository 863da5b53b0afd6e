"""Scenario S4, two teams sharing a cohort, end to end: ``kq dev --profile s4`` and kubectl.

Every Expect line of the story is asserted through the sandbox's HTTP API, on the manifests of
``examples/s4`` applied as they are. Where a step needs a Job the examples do not have (a
second team-B Job, a GPU holder, a priority), it is derived from the nearest example by
changing only its name, size, priority or sleep, so what kq decides still comes from the
examples' queues. Each test starts from no jobs and the example ClusterQueues.

On both backends: ``kq dev`` with its own embedded API server, or ``kq dev --kubeconfig`` on the
shared real kube-apiserver, from which the module removes what it created when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from tests.e2e.kqdev import KubectlSession, KubectlWatch, kq_dev_on, kubectl_watch
from tests.harness import REPO, Cluster, wait_until

EXAMPLES = REPO / "examples" / "s4"
JOBS = EXAMPLES / "jobs"
VARIANTS = EXAMPLES / "variants"
SPEED = 20  # the examples' `sleep 300s` lasts 15 s: long enough for a step, short to wait out
LONG = "3600s"  # the sleep of derived Jobs that must hold their quota for a whole test
STEP_TIMEOUT_S = 30.0
TEAMS = ("team-a", "team-b")
GPU = "nvidia.com/gpu"
ACCELERATOR = "cloud.google.com/gke-accelerator"
MPI_JOB = "training.kubeflow.org/job-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
SPOT_TAINT = "untolerated taint spot=true:NoSchedule in flavor spot"
HELD = (
    "Workload is pending evaluation in the scheduling queue: it waits behind team-a/{head}, "
    "the head of StrictFIFO ClusterQueue team-a-cq, which does not fit"
)
T = TypeVar("T")
Obj = dict[str, Any]

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Sandbox(KubectlSession):
    """A running ``kq dev --profile s4``, driven with the real kubectl."""

    def apply(self, what: Path | Obj) -> None:
        if isinstance(what, Path):
            self.kubectl("apply", "-f", str(what))
        else:
            self.kubectl("apply", "-f", "-", input=yaml.safe_dump(what))

    def workload(self, namespace: str, owner: str) -> Obj | None:
        """The Workload of the job ``owner`` (a Job or an MPIJob)."""
        items = self.get("workloads", "-n", namespace)["items"]
        return next((w for w in items if owner_name(w) == owner), None)

    def usage(self, cq: str) -> dict[tuple[str, str], tuple[str, str]]:
        """ClusterQueue ``flavorsUsage`` as {(flavor, resource): (total, borrowed)}."""
        status = self.get("clusterqueue", cq).get("status") or {}
        return {
            (f["name"], r["name"]): (str(r["total"]), str(r.get("borrowed", "0")))
            for f in status.get("flavorsUsage") or ()
            for r in f["resources"]
        }

    def used(self, cq: str, flavor: str, resource: str) -> tuple[str, str]:
        """(total, borrowed) of one resource; nothing until the first status sync."""
        return self.usage(cq).get((flavor, resource), ("0", "0"))


@pytest.fixture(scope="module")
def sandbox(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    work = tmp_path_factory.mktemp(f"s4-teams-{cluster.backend}")
    with kq_dev_on(cluster, work, "s4", SPEED) as kubeconfig:
        box = Sandbox(kubeconfig, work / "kubectl-cache")
        box.apply(EXAMPLES / "namespaces.yaml")
        for name in ("flavors.yaml", "cluster-queues.yaml", "local-queues.yaml"):
            box.apply(EXAMPLES / name)
        yield box


@pytest.fixture
def s4(sandbox: Sandbox) -> Sandbox:
    """No jobs left from an earlier test, no quota in use, the example ClusterQueues."""
    for team in TEAMS:
        # Waits until they are gone: a Job of the same name applied later must be a new one.
        sandbox.kubectl("delete", "jobs,mpijobs", "--all", "-n", team)
    sandbox.apply(EXAMPLES / "cluster-queues.yaml")

    def idle() -> bool:
        if any(sandbox.get("workloads", "-n", team)["items"] for team in TEAMS):
            return False
        return all(t == "0" for cq in ("team-a-cq", "team-b-cq") for t, _ in usage_of(sandbox, cq))

    until("no workloads and no quota in use", idle)
    return sandbox


def usage_of(sandbox: Sandbox, cq: str) -> list[tuple[str, str]]:
    return list(sandbox.usage(cq).values())


def until(what: str, check: Callable[[], T | None]) -> T:
    """``check``'s first truthy value; fails after ``STEP_TIMEOUT_S``."""
    return wait_until(check, what, within=STEP_TIMEOUT_S)


def after_second_of(stamp: str) -> None:
    """Return once the clock is past the whole second of the API timestamp ``stamp``."""
    at = datetime.fromisoformat(stamp).timestamp()
    until(f"the clock passes {stamp}", lambda: time.time() >= at + 1)


def owner_name(obj: Obj) -> str:
    owners = obj["metadata"].get("ownerReferences") or [{}]
    return str(owners[0].get("name", ""))


def condition(obj: Obj | None, kind: str) -> Obj:
    for item in ((obj or {}).get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return {}


def is_true(obj: Obj | None, kind: str) -> bool:
    return condition(obj, kind).get("status") == "True"


def admitted(sandbox: Sandbox, namespace: str, owner: str) -> Obj:
    def check() -> Obj | None:
        workload = sandbox.workload(namespace, owner)
        return workload if is_true(workload, "Admitted") else None

    return until(f"{owner} is admitted", check)


def pending(sandbox: Sandbox, namespace: str, owner: str, reason: str = "") -> Obj:
    """The Workload once kq has said why it waits (QuotaReserved=False with a message)."""

    last: list[Obj] = [{}]

    def check() -> Obj | None:
        workload = sandbox.workload(namespace, owner)
        said = last[0] = condition(workload, "QuotaReserved")
        told = said.get("status") == "False" and said.get("message")
        return workload if told and reason in ("", said.get("reason")) else None

    try:
        return until(f"{owner} is pending with a message", check)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; QuotaReserved was {last[0]}") from None


def flavors(workload: Obj) -> dict[str, dict[str, str]]:
    """Flavor per resource, per pod set, of an admitted Workload."""
    assignments = workload["status"]["admission"]["podSetAssignments"]
    return {a["name"]: a["flavors"] for a in assignments}


def job(example: str, name: str, *, pods: int | None = None, sleep: str | None = None) -> Obj:
    """An example Job under a new name; ``pods`` sets parallelism and completions."""
    doc: Obj = yaml.safe_load((JOBS / example).read_text())
    doc["metadata"]["name"] = name
    if pods is not None:
        doc["spec"]["parallelism"] = doc["spec"]["completions"] = pods
    if sleep is not None:
        container(doc)["args"] = [sleep]
    return doc


def container(doc: Obj) -> Obj:
    first: Obj = doc["spec"]["template"]["spec"]["containers"][0]
    return first


def requests(doc: Obj) -> Obj:
    found: Obj = container(doc)["resources"]["requests"]
    return found


def in_team_b(doc: Obj) -> Obj:
    doc["metadata"]["namespace"] = "team-b"
    doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-b"
    return doc


def gpus(doc: Obj, count: int, model: str) -> Obj:
    requests(doc)[GPU] = container(doc)["resources"]["limits"][GPU] = count
    doc["spec"]["template"]["spec"]["nodeSelector"] = {ACCELERATOR: model}
    return doc


# -- Expect 1: borrowing, same flavor only, up to the borrowingLimit ------------------------------


def test_1_b_borrows_a_unused_on_demand_up_to_its_borrowing_limit(s4: Sandbox) -> None:
    # 3 x 3 CPUs: 9 on-demand CPUs against B's nominal 6.
    s4.apply(JOBS / "team-b-borrowing-job.yaml")
    workload = admitted(s4, "team-b", "team-b-borrowing")
    assert flavors(workload) == {"main": {"cpu": "on-demand", "memory": "on-demand"}}
    until("team-b-cq shows 3 borrowed CPUs",
          lambda: s4.used("team-b-cq", "on-demand", "cpu") == ("9", "3"))  # fmt: skip
    assert all(total == "0" for total, _ in usage_of(s4, "team-a-cq"))  # A's quota was unused

    # 2 more would be 11, over nominal 6 + borrowingLimit 4; spot is not tolerated.
    over = job("team-b-borrowing-job.yaml", "team-b-over", pods=1)
    requests(over)["cpu"] = "2"
    s4.apply(over)
    message = condition(pending(s4, "team-b", "team-b-over"), "QuotaReserved")["message"]
    assert "insufficient unused quota for cpu in flavor on-demand, 1 more needed" in message
    assert SPOT_TAINT in message


def test_1_b_borrows_a100_as_a100_never_h100(s4: Sandbox) -> None:
    # 2 x 3 A100s: B's own 2 and all 4 of A's; B's own H100s stay free.
    s4.apply(gpus(in_team_b(job("team-a-gpu-head-job.yaml", "team-b-a100", pods=2)), 3,
                  "nvidia-tesla-a100"))  # fmt: skip
    workload = admitted(s4, "team-b", "team-b-a100")
    assert flavors(workload)["main"][GPU] == "a100"
    until("team-b-cq shows 4 borrowed A100s",
          lambda: s4.used("team-b-cq", "a100", GPU) == ("6", "4"))  # fmt: skip
    assert s4.used("team-b-cq", "h100", GPU) == ("0", "0")

    s4.apply(gpus(in_team_b(job("team-a-gpu-head-job.yaml", "team-b-a100-more")), 1,
                  "nvidia-tesla-a100"))  # fmt: skip
    said = condition(pending(s4, "team-b", "team-b-a100-more"), "QuotaReserved")
    assert "insufficient unused quota for nvidia.com/gpu in flavor a100" in said["message"]
    assert "flavor h100 doesn't match node affinity" in said["message"]


# -- Expect 2: A lends no more than its lendingLimit ----------------------------------------------


def test_2_a_lends_at_most_its_lending_limit(s4: Sandbox) -> None:
    # B's own borrowingLimit taken away, so only A's lendingLimit (4 CPUs) bounds B.
    queues = list(yaml.safe_load_all((EXAMPLES / "cluster-queues.yaml").read_text()))
    team_b = next(q for q in queues if q["metadata"]["name"] == "team-b-cq")
    for resource in team_b["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        del resource["borrowingLimit"]
    s4.apply(team_b)

    lend = job("team-b-borrowing-job.yaml", "team-b-lend", pods=2)
    requests(lend)["cpu"] = "5"
    s4.apply(lend)
    admitted(s4, "team-b", "team-b-lend")
    until("team-b-cq shows 4 borrowed CPUs",
          lambda: s4.used("team-b-cq", "on-demand", "cpu") == ("10", "4"))  # fmt: skip

    more = job("team-b-borrowing-job.yaml", "team-b-lend-more", pods=1)
    requests(more)["cpu"] = "1"
    s4.apply(more)
    message = condition(pending(s4, "team-b", "team-b-lend-more"), "QuotaReserved")["message"]
    assert "insufficient unused quota for cpu in flavor on-demand, 1 more needed" in message
    # A still has 10 on-demand CPUs unused: it is the lendingLimit that says no.
    assert s4.used("team-a-cq", "on-demand", "cpu") == ("0", "0")


# -- Expect 3: reclaim within the cohort, Any then Never -----------------------------------------


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def team_b_job(name: str, priority: str) -> Obj:
    """One pod of 3 CPUs at a WorkloadPriorityClass; it runs the example's 300 s."""
    doc = job("team-b-borrowing-job.yaml", name, pods=1)
    doc["metadata"]["labels"][PRIORITY_LABEL] = priority
    return doc


def test_3_reclaim_any_preempts_the_newest_lowest_borrower_never_waits(s4: Sandbox) -> None:
    s4.apply(priority_class("s4-low", 10))
    s4.apply(priority_class("s4-high", 100))
    # 9 CPUs, 3 of them borrowed from A; admitted one after the other, so "new" is newest.
    for name, priority in (("b-high", "s4-high"), ("b-old", "s4-low"), ("b-new", "s4-low")):
        s4.apply(team_b_job(name, priority))
        # Reservation times have whole seconds: b-new must be newer than b-old, not equal.
        after_second_of(
            condition(admitted(s4, "team-b", name), "QuotaReserved")["lastTransitionTime"]
        )

    # A's 8 fit its nominal 10 but the cohort has 7 free: one 3-CPU borrower has to go.
    s4.apply(job("team-a-reclaim-job.yaml", "team-a-reclaim", sleep=LONG))

    def evicted(name: str) -> Obj | None:
        workload = s4.workload("team-b", name)
        return workload if is_true(workload, "Evicted") else None

    victim = until("b-new is evicted", lambda: evicted("b-new"))
    preempted = condition(victim, "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InCohortReclamation")
    assert condition(victim, "Evicted")["reason"] == "Preempted"
    admitted(s4, "team-a", "team-a-reclaim")
    assert [n for n in ("b-high", "b-old") if evicted(n)] == []  # fewest: the others stay
    assert s4.get("job", "b-new", "-n", "team-b")["spec"]["suspend"] is True

    # Never: A's Job deleted, b-new back in; A asks again and waits for B's Jobs to end.
    s4.kubectl("delete", "job", "team-a-reclaim", "-n", "team-a")  # waits until it is gone
    admitted(s4, "team-b", "b-new")
    s4.apply(VARIANTS / "team-a-cq-reclaim-never.yaml")
    s4.apply(JOBS / "team-a-reclaim-job.yaml")
    waiting = pending(s4, "team-a", "team-a-reclaim", "WaitingForQuota")
    assert (
        "insufficient unused quota for cpu in flavor on-demand, 1 more needed"
        in (condition(waiting, "QuotaReserved")["message"])
    )
    assert [n for n in ("b-high", "b-old", "b-new") if evicted(n)] == []

    workload = admitted(s4, "team-a", "team-a-reclaim")
    finished = [n for n in ("b-high", "b-old") if is_true(s4.workload("team-b", n), "Finished")]
    assert finished, "A was admitted before any of B's Jobs ended"
    # One ended Job frees enough; the other may end after A's admission, before this look.
    assert condition(workload, "QuotaReserved")["lastTransitionTime"] >= min(
        condition(s4.workload("team-b", n), "Finished")["lastTransitionTime"] for n in finished
    )
    assert [n for n in ("b-high", "b-old", "b-new") if evicted(n)] == []


# -- Expect 4: no spot without the toleration ----------------------------------------------------


def fill_on_demand(sandbox: Sandbox) -> None:
    """The cohort's 16 on-demand CPUs in use by A: 8 of its own, 8 more borrowing 6 from B."""
    sandbox.apply(job("team-a-reclaim-job.yaml", "team-a-reclaim", sleep=LONG))
    admitted(sandbox, "team-a", "team-a-reclaim")
    untolerating = job("team-a-spot-tolerating-job.yaml", "team-a-no-toleration", sleep=LONG)
    del untolerating["spec"]["template"]["spec"]["tolerations"]
    sandbox.apply(untolerating)
    workload = admitted(sandbox, "team-a", "team-a-no-toleration")
    assert flavors(workload) == {"main": {"cpu": "on-demand", "memory": "on-demand"}}
    until("team-a-cq uses all 16 on-demand CPUs",
          lambda: sandbox.used("team-a-cq", "on-demand", "cpu") == ("16", "6"))  # fmt: skip


def test_4_a_workload_without_the_spot_toleration_never_gets_spot(s4: Sandbox) -> None:
    fill_on_demand(s4)
    s4.apply(JOBS / "team-a-cpu-only-job.yaml")
    said = condition(pending(s4, "team-a", "team-a-cpu-only"), "QuotaReserved")
    assert "insufficient unused quota for cpu in flavor on-demand" in said["message"]
    assert SPOT_TAINT in said["message"]

    # Spot had room all along: a tolerating Job gets it at once.
    s4.apply(JOBS / "team-a-spot-tolerating-job.yaml")
    spot = admitted(s4, "team-a", "team-a-spot")
    assert flavors(spot) == {"main": {"cpu": "spot", "memory": "spot"}}
    still = s4.workload("team-a", "team-a-cpu-only")
    assert still is not None
    assert "admission" not in still["status"]
    assert SPOT_TAINT in condition(still, "QuotaReserved")["message"]


# -- Expect 5: StrictFIFO holds a CPU-only workload behind a GPU head, BestEffortFIFO does not ---


def test_5_strict_fifo_blocks_behind_the_gpu_head_best_effort_fifo_does_not(s4: Sandbox) -> None:
    s4.apply(VARIANTS / "team-a-cq-strict-fifo.yaml")
    # A's 4 A100s, then 4 H100s (2 borrowed from B): no GPU left for the head.
    for holder, model in (("gpu-holder-1", "a100"), ("gpu-holder-2", "h100")):
        s4.apply(job("team-a-gpu-head-job.yaml", holder, sleep=LONG))
        assert flavors(admitted(s4, "team-a", holder))["main"][GPU] == model
    s4.apply(JOBS / "team-a-gpu-head-job.yaml")
    head = pending(s4, "team-a", "team-a-gpu-head", "WaitingForQuota")
    # Queue order is creation time, in whole seconds: created in the same second, the CPU-only
    # workload could sort first (Kueue breaks such ties arbitrarily too).
    after_second_of(head["metadata"]["creationTimestamp"])
    s4.apply(JOBS / "team-a-cpu-only-job.yaml")

    # The CPU-only workload would fit, but no cycle looks past the head; kq says so.
    held = pending(s4, "team-a", "team-a-cpu-only", "PendingEvaluation")
    assert condition(held, "QuotaReserved")["message"] == HELD.format(head=head["metadata"]["name"])
    assert "admission" not in held["status"]
    assert s4.get("job", "team-a-cpu-only", "-n", "team-a")["spec"]["suspend"] is True

    # BestEffortFIFO (the example queue): the head waits aside and the CPU-only one goes.
    s4.apply(EXAMPLES / "cluster-queues.yaml")
    admitted(s4, "team-a", "team-a-cpu-only")
    still = s4.workload("team-a", "team-a-gpu-head")
    assert still is not None
    assert not is_true(still, "QuotaReserved")

    # Capacity changes (an A100 holder goes): the head is retried and admitted.
    s4.kubectl("delete", "job", "gpu-holder-1", "-n", "team-a", "--wait=false")
    assert flavors(admitted(s4, "team-a", "team-a-gpu-head"))["main"][GPU] == "a100"


# -- Expect 6: InOrder borrows on-demand first, MinimizeBorrowing takes spot first ---------------


def test_6_in_order_borrows_on_demand_minimize_borrowing_takes_own_spot(s4: Sandbox) -> None:
    s4.apply(job("team-a-reclaim-job.yaml", "team-a-reclaim", sleep=LONG))
    admitted(s4, "team-a", "team-a-reclaim")
    # 8 more CPUs: on-demand only by borrowing 6, spot within A's own 10.
    s4.apply(JOBS / "team-a-spot-tolerating-job.yaml")
    in_order = admitted(s4, "team-a", "team-a-spot")
    assert flavors(in_order) == {"main": {"cpu": "on-demand", "memory": "on-demand"}}
    until("team-a-cq borrows 6 on-demand CPUs",
          lambda: s4.used("team-a-cq", "on-demand", "cpu") == ("16", "6"))  # fmt: skip

    s4.kubectl("delete", "job", "team-a-spot", "-n", "team-a")
    s4.apply(VARIANTS / "team-a-cq-minimize-borrowing.yaml")
    s4.apply(JOBS / "team-a-spot-tolerating-job.yaml")
    minimal = admitted(s4, "team-a", "team-a-spot")
    assert flavors(minimal) == {"main": {"cpu": "spot", "memory": "spot"}}

    def settled() -> dict[tuple[str, str], tuple[str, str]] | None:
        usage = s4.usage("team-a-cq")
        return usage if usage.get(("spot", "cpu")) == ("8", "0") else None

    assert until("team-a-cq uses 8 spot CPUs", settled)[("on-demand", "cpu")] == ("8", "0")


# -- Expect 7: an MPIJob is one Workload of two pod sets, started all or nothing -----------------


def running_pods(watch: KubectlWatch) -> dict[str, set[str]]:
    """Names of the MPIJob's pods seen Running or Succeeded, by role."""
    roles: dict[str, set[str]] = {}
    for seen in watch.seen():
        pod = seen.object
        if pod["status"].get("phase") in ("Running", "Succeeded"):
            role = pod["metadata"]["labels"]["training.kubeflow.org/job-role"]
            roles.setdefault(role, set()).add(pod["metadata"]["name"])
    return roles


@pytest.fixture
def mpi_pods(s4: Sandbox) -> Iterator[KubectlWatch]:
    """Every version of the MPIJob's pods."""
    with kubectl_watch(s4.env, "pods", "-n", "team-a", "-l", f"{MPI_JOB}=team-a-mpi") as watching:
        yield watching


def test_7_an_mpijob_is_one_workload_started_all_or_nothing(
    s4: Sandbox, mpi_pods: KubectlWatch
) -> None:
    fill_on_demand(s4)
    s4.apply(JOBS / "team-a-mpijob.yaml")
    waiting = pending(s4, "team-a", "team-a-mpi")
    assert [(p["name"], p["count"]) for p in waiting["spec"]["podSets"]] == [
        ("launcher", 1),
        ("worker", 4),
    ]
    # Nothing starts while the Workload waits: the MPIJob stays suspended, without pods.
    assert s4.get("mpijob", "team-a-mpi", "-n", "team-a")["spec"]["runPolicy"]["suspend"] is True
    assert s4.get("pods", "-n", "team-a", "-l", f"{MPI_JOB}=team-a-mpi")["items"] == []
    assert running_pods(mpi_pods) == {}

    s4.kubectl("delete", "job", "team-a-no-toleration", "-n", "team-a", "--wait=false")
    workload = admitted(s4, "team-a", "team-a-mpi")
    assignments = workload["status"]["admission"]["podSetAssignments"]
    assert [(a["name"], a["count"]) for a in assignments] == [("launcher", 1), ("worker", 4)]
    # All five pods start, then mpirun ends and the MPIJob succeeds.
    until("the MPIJob succeeds",
          lambda: is_true(s4.get("mpijob", "team-a-mpi", "-n", "team-a"), "Succeeded"))  # fmt: skip
    started = until("the launcher and 4 workers are seen running", lambda: all_started(mpi_pods))
    assert {role: len(names) for role, names in started.items()} == {"launcher": 1, "worker": 4}


def all_started(watch: KubectlWatch) -> dict[str, set[str]] | None:
    started = running_pods(watch)
    return started if len(started.get("worker", ())) == 4 and started.get("launcher") else None
