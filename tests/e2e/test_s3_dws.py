"""Scenario S3, DWS provisioning, end to end: ``kq dev --profile s3`` and the real kubectl.

The guide's manifests (``examples/s3``) run on a sandbox whose ``dws-pool`` starts empty: a
simulated cluster autoscaler serves each ProvisioningRequest 30 s of sandbox time after accepting
it. At ``SPEED`` 10 that window lasts 3 s of wall time, long enough to look at the request while
it waits. The failure paths inject faults into waiting requests with ``kq dev provreq``, a
process that takes seconds to start on a loaded machine (8 s measured on two busy cores), so
they run on a second sandbox at ``FAULT_SPEED`` 1, where the window lasts 30 s. Each failure
path runs its own Job, with the retry back-off shortened through the ProvisioningRequestConfig,
and leaves no quota held behind it. A watch on the Workloads records every version, so states
that last a moment (``Retry``) are seen as kq wrote them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from tests.e2e.kqdev import KubectlSession, KubectlWatch, Seen, kq_dev, kubectl_watch
from tests.harness import REPO, wait_until

EXAMPLES = REPO / "examples" / "s3"
SPEED = 10  # provisioning (30 s) takes 3 s, the job's `sleep 120s` 12 s
FAULT_SPEED = 1  # provisioning takes 30 s: time enough to start `kq dev provreq` under load
PROVISIONING_S = 30.0
"""The simulated autoscaler's delay between accepting a request and provisioning it."""
STEP_TIMEOUT_S = 30.0
FAULT_STEP_TIMEOUT_S = STEP_TIMEOUT_S + PROVISIONING_S / FAULT_SPEED
"""A step of the failure paths that waits for a provisioning on the slower sandbox."""
CHECK = "dws-prov"
CLASS = "queued-provisioning.gke.io"
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_NAME = "autoscaling.x-k8s.io/provisioning-class-name"
OLD_CONSUME = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
OLD_CLASS_NAME = "cluster-autoscaler.kubernetes.io/provisioning-class-name"
POOL_LABEL = "cloud.google.com/gke-nodepool"
BOOKED = "kq.dev/provisioning-request"  # the simulated autoscaler's mark on the nodes it booked
BACKOFF_BASE_S = 2
T = TypeVar("T")

pytestmark = pytest.mark.slow


def versions_of(watch: KubectlWatch, job: str) -> list[Seen]:
    """The versions of the Workload of Job ``job``, oldest first."""
    return [s for s in watch.seen() if owner_name(s.object) == job]


@dataclass(frozen=True)
class Sandbox(KubectlSession):
    """A running ``kq dev --profile s3``, driven with the real kubectl."""

    data_dir: Path

    def find(self, kind: str, name: str) -> dict[str, Any] | None:
        out = self.kubectl("get", kind, name, "-n", "default", "--ignore-not-found", "-o", "json")
        return json.loads(out) if out.strip() else None

    def workload(self, job: str) -> dict[str, Any] | None:
        items = self.get("workloads", "-n", "default")["items"]
        return next((wl for wl in items if owner_name(wl) == job), None)

    def pods(self, job: str) -> list[dict[str, Any]]:
        items = self.get("pods", "-n", "default", "-l", f"batch.kubernetes.io/job-name={job}")
        return list(items["items"])

    def events(self, kind: str, name: str) -> list[tuple[str, str]]:
        """The object's events as (reason, message), oldest first (the names sort so)."""
        items = self.get("events", "-n", "default")["items"]
        return [
            (e["reason"], e["message"])
            for e in sorted(items, key=lambda e: e["metadata"]["name"])
            if (e["involvedObject"]["kind"], e["involvedObject"]["name"]) == (kind, name)
        ]

    def provreq(self, fault: str, name: str, message: str) -> None:
        """``kq dev provreq FAULT NAME``, as a person would type it."""
        done = subprocess.run(
            [sys.executable, "-m", "kq", "dev", "provreq", fault, name,
             "--data-dir", str(self.data_dir), "--message", message],
            capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"kq dev provreq {fault} {name}: {done.stderr}"

    def resources_in_use(self) -> dict[str, str]:
        status = self.get("clusterqueue", "dws-cluster-queue").get("status") or {}
        usage = status.get("flavorsUsage") or []
        return {r["name"]: str(r["total"]) for f in usage for r in f["resources"]}


@contextmanager
def s3_sandbox(work: Path, speed: float) -> Iterator[Sandbox]:
    """``kq dev --profile s3`` at ``speed`` with the guide's queueing objects, created unchanged."""
    with kq_dev(work, "s3", speed) as kubeconfig:
        sandbox = Sandbox(kubeconfig, work / "kubectl-cache", data_dir=work / "dev")
        sandbox.kubectl("create", "-f", str(EXAMPLES / "dws-queues.yaml"))
        yield sandbox


@pytest.fixture(scope="module")
def queues(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """The sandbox of the guide's story, at ``SPEED``."""
    with s3_sandbox(tmp_path_factory.mktemp("s3-dws"), SPEED) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def fault_queues(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """The sandbox of the failure paths, at ``FAULT_SPEED``."""
    with s3_sandbox(tmp_path_factory.mktemp("s3-dws-faults"), FAULT_SPEED) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def watch(fault_queues: Sandbox) -> Iterator[KubectlWatch]:
    """Every version of the failure paths' Workloads in ``default``."""
    with kubectl_watch(fault_queues.env, "workloads", "-n", "default") as watching:
        yield watching


@pytest.fixture(scope="module")
def request_watch(fault_queues: Sandbox) -> Iterator[KubectlWatch]:
    """Every version of the failure paths' ProvisioningRequests: a request is deleted once its
    Workload is requeued, so what it was when the fault came is read here."""
    with kubectl_watch(fault_queues.env, "provisioningrequests", "-n", "default") as watching:
        yield watching


@pytest.fixture(scope="module")
def short_backoff(fault_queues: Sandbox) -> Sandbox:
    """``dws-config`` with one retry after a ``BACKOFF_BASE_S`` back-off instead of 3 after 60 s."""
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "dws-queues.yaml").read_text()) if d]
    config = next(d for d in docs if d["kind"] == "ProvisioningRequestConfig")
    config["spec"]["retryStrategy"] = {
        "backoffLimitCount": 1,
        "backoffBaseSeconds": BACKOFF_BASE_S,
        "backoffMaxSeconds": 10,
    }
    fault_queues.kubectl("apply", "-f", "-", input=yaml.safe_dump(config))
    return fault_queues


def until(what: str, check: Callable[[], T | None], within: float = STEP_TIMEOUT_S) -> T:
    """``check``'s first truthy value; fails after ``within`` seconds."""
    return wait_until(check, what, within=within)


def owner_name(obj: dict[str, Any]) -> str:
    owners = obj["metadata"].get("ownerReferences") or [{}]
    return str(owners[0].get("name", ""))


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for item in ((obj or {}).get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return {}


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    return condition(obj, kind).get("status") == "True"


def check_of(workload: dict[str, Any] | None) -> dict[str, Any]:
    entries = ((workload or {}).get("status") or {}).get("admissionChecks") or ()
    return next((dict(e) for e in entries if e["name"] == CHECK), {})


def job_manifest(name: str) -> str:
    """The guide's job.yaml on the sandbox's queued-provisioning pool, under ``name``."""
    text = (EXAMPLES / "job.yaml").read_text().replace("NODEPOOL_NAME", "dws-pool")
    return text.replace("name: sample-job", f"name: {name}")


def request_name(sandbox: Sandbox, job: str, attempt: int) -> str | None:
    workload = sandbox.workload(job)
    return f"{workload['metadata']['name']}-{CHECK}-{attempt}" if workload else None


def waiting_request(sandbox: Sandbox, job: str, attempt: int) -> dict[str, Any]:
    """The Job's request of ``attempt`` once Accepted; fails if it was already Provisioned."""

    def accepted() -> dict[str, Any] | None:
        name = request_name(sandbox, job, attempt)
        request = sandbox.find("provisioningrequest", name) if name else None
        return request if is_true(request, "Accepted") else None

    request = until(f"{job}'s request #{attempt} is Accepted", accepted)
    assert not is_true(request, "Provisioned"), "the request was provisioned before it was seen"
    return request


def inject_while_waiting(
    sandbox: Sandbox, requests: KubectlWatch, fault: str, request: str, message: str
) -> None:
    """``kq dev provreq`` on a request that is not provisioned, and proof that it was not: no
    version of it up to the one the fault wrote was Provisioned."""
    sandbox.provreq(fault, request, message)

    def faulted(version: dict[str, Any]) -> bool:
        return version["metadata"]["name"] == request and any(
            c.get("message") == message
            for c in (version.get("status") or {}).get("conditions") or ()
        )

    history = until(f"{request} carries the fault", lambda: faulted_history(requests, faulted))
    versions = [v.object for v in history[: index(history, faulted) + 1]]
    mine = [v for v in versions if v["metadata"]["name"] == request]
    assert not any(is_true(v, "Provisioned") for v in mine), f"{request} was provisioned first"


def faulted_history(
    requests: KubectlWatch, faulted: Callable[[dict[str, Any]], bool]
) -> list[Seen] | None:
    history = requests.seen()
    return history if index(history, faulted) >= 0 else None


def index(history: list[Seen], test: Callable[[dict[str, Any]], bool], start: int = 0) -> int:
    """The first version from ``start`` on that passes ``test``; -1 if none."""
    return next((i for i in range(start, len(history)) if test(history[i].object)), -1)


def quota_released(sandbox: Sandbox, job: str) -> bool:
    workload = sandbox.workload(job)
    held = workload is not None and "admission" in (workload.get("status") or {})
    return not held and set(sandbox.resources_in_use().values()) == {"0"}


def describe_events(text: str) -> list[tuple[str, str]]:
    """(Reason, Message) rows of the Events table of ``kubectl describe``, in its order."""
    lines = text.split("\nEvents:\n", 1)[1].splitlines()
    header = lines[0]
    reason, age, message = header.index("Reason"), header.index("Age"), header.index("Message")
    # Columns are cut where the header puts them: an Age like "3s (x2 over 5s)" holds spaces.
    return [
        (line[reason:age].strip(), line[message:].strip()) for line in lines[2:] if line.strip()
    ]


# -- Expect 1, 2, 3: the sample Job waits for capacity, is admitted, runs and completes ---------


def test_sample_job_waits_for_provisioned_capacity_then_runs(queues: Sandbox) -> None:
    sandbox = queues
    sandbox.kubectl("create", "-f", "-", input=job_manifest("sample-job"))
    request = waiting_request(sandbox, "sample-job", 1)
    name = request["metadata"]["name"]
    # The Workload and the PodTemplate are read while the request is still not provisioned:
    # the request read after them proves it.
    workload = sandbox.workload("sample-job")
    template = sandbox.find("podtemplate", f"ppt-{name}-main")
    assert not is_true(sandbox.find("provisioningrequest", name), "Provisioned")
    assert_waiting_for_capacity(workload, request, template)

    ready = until("the check is Ready", lambda: ready_workload(sandbox, "sample-job"))
    provisioned = condition(sandbox.find("provisioningrequest", name), "Provisioned")
    assert provisioned["status"] == "True"
    assert check_of(ready)["message"] == provisioned["message"]  # the check relays the request
    assert check_of(ready)["podSetUpdates"] == [
        {"name": "main", "annotations": {CONSUME: name, CLASS_NAME: CLASS}}
    ]
    until("the Workload is Admitted",
          lambda: is_true(sandbox.workload("sample-job"), "Admitted"))  # fmt: skip
    events = [r for r, _ in sandbox.events("Workload", ready["metadata"]["name"])]
    assert events.index("AdmissionCheckUpdated") < events.index("Admitted")
    assert_runs_on_booked_node(sandbox, "sample-job", name)
    assert_booking_end_ignored_after_admission(sandbox, "sample-job", name)

    until("sample-job completes", lambda: is_true(sandbox.get("job", "sample-job"), "Complete"))
    # Completed is written after the Job's condition and the simulated cluster batches events.
    describe = until("the Completed event is recorded", lambda: _with_completed(sandbox))
    assert_job_events_in_order(describe)


def _with_completed(sandbox: Sandbox) -> str | None:
    text = sandbox.kubectl("describe", "job", "sample-job")
    return text if any(r == "Completed" for r, _ in describe_events(text)) else None


def assert_waiting_for_capacity(
    workload: dict[str, Any] | None, request: dict[str, Any], template: dict[str, Any] | None
) -> None:
    """Expect 2 and the first half of 3, at one moment between reservation and admission."""
    assert workload is not None
    assert template is not None
    assert is_true(workload, "QuotaReserved")
    assert not is_true(workload, "Admitted")
    assert check_of(workload)["state"] == "Pending"
    assert is_true(request, "Accepted")
    assert condition(request, "Provisioned")["status"] == "False"
    owner = {k: v for k, v in request["metadata"]["ownerReferences"][0].items() if k != "uid"}
    assert owner == {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "name": workload["metadata"]["name"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert request["metadata"]["ownerReferences"][0]["uid"] == workload["metadata"]["uid"]
    spec = request["spec"]
    assert spec["provisioningClassName"] == CLASS
    assert spec["parameters"] == {"maxRunDurationSeconds": "600"}
    name = template["metadata"]["name"]
    assert spec["podSets"] == [{"count": 1, "podTemplateRef": {"name": name}}]
    # As Kueue, the PodTemplate's controller is the request (so it goes with it), and the
    # request's is the Workload.
    [template_owner] = template["metadata"]["ownerReferences"]
    assert (template_owner["kind"], template_owner["uid"], template_owner["controller"]) == (
        "ProvisioningRequest",
        request["metadata"]["uid"],
        True,
    )
    [container] = template["template"]["spec"]["containers"]
    assert container["resources"]["requests"]["nvidia.com/gpu"] in (1, "1")
    assert template["template"]["spec"]["nodeSelector"] == {POOL_LABEL: "dws-pool"}


def ready_workload(sandbox: Sandbox, job: str) -> dict[str, Any] | None:
    workload = sandbox.workload(job)
    return workload if check_of(workload).get("state") == "Ready" else None


def assert_runs_on_booked_node(sandbox: Sandbox, job: str, request: str) -> None:
    """Expect 3's end: the pod carries the annotations and runs on a node booked for it."""
    pod = until(f"{job}'s pod runs", lambda: running_pod(sandbox, job))
    notes = pod["metadata"]["annotations"]
    assert (notes[CONSUME], notes[CLASS_NAME]) == (request, CLASS)
    booked = [
        n
        for n in sandbox.get("nodes")["items"]
        if n["metadata"].get("annotations", {}).get(BOOKED) == f"default/{request}"
    ]
    assert [n["metadata"]["name"] for n in booked] == [pod["spec"]["nodeName"]]
    assert booked[0]["metadata"]["labels"][POOL_LABEL] == "dws-pool"


def assert_booking_end_ignored_after_admission(sandbox: Sandbox, job: str, request: str) -> None:
    """Once the pods are scheduled the booking ends; Kueue ignores that after admission."""
    until("the booking ends", lambda: is_true(sandbox.find("provisioningrequest", request),
                                              "BookingExpired"))  # fmt: skip
    workload = sandbox.workload(job)
    assert check_of(workload)["state"] == "Ready"
    assert is_true(workload, "Admitted")
    assert not is_true(workload, "Evicted")


def assert_job_events_in_order(describe: str) -> None:
    """Expect 1, read off ``kubectl describe job``'s Events table."""
    rows = describe_events(describe)
    reasons = [reason for reason, _ in rows]
    assert ("Started", "Admitted by clusterQueue dws-cluster-queue") in rows
    started = reasons.index("Started")
    assert started < reasons.index("SuccessfulCreate") < reasons.index("Resumed")
    assert reasons.index("Resumed") < reasons.index("Completed")
    # Suspended (the job controller) and CreatedWorkload (kq) react to the same create, so
    # they race in a real cluster too: only their place before Started is part of the story.
    assert reasons.index("Suspended") < started
    assert reasons.index("CreatedWorkload") < started


# -- Expect 4: failures, retries with the configured back-off, rejection ------------------------


def test_failed_requests_are_retried_after_the_backoff_then_rejected(
    short_backoff: Sandbox, watch: KubectlWatch, request_watch: KubectlWatch
) -> None:
    sandbox, job = short_backoff, "dws-failing-job"
    sandbox.kubectl("create", "-f", "-", input=job_manifest(job))
    first = waiting_request(sandbox, job, 1)["metadata"]["name"]
    inject_while_waiting(sandbox, request_watch, "fail", first, "no capacity (attempt 1)")

    second = waiting_request(sandbox, job, 2)["metadata"]["name"]
    assert_retried(watch, job, "Retrying after failure: no capacity (attempt 1)")

    inject_while_waiting(sandbox, request_watch, "fail", second, "no capacity (attempt 2)")
    assert_deactivated(sandbox, watch, job, "no capacity (attempt 2)")


def test_booking_expired_before_admission_is_retried(
    short_backoff: Sandbox, watch: KubectlWatch, request_watch: KubectlWatch
) -> None:
    sandbox, job = short_backoff, "dws-expiring-job"
    sandbox.kubectl("create", "-f", "-", input=job_manifest(job))
    first = waiting_request(sandbox, job, 1)["metadata"]["name"]
    inject_while_waiting(sandbox, request_watch, "expire", first, "booking over (attempt 1)")

    second = waiting_request(sandbox, job, 2)["metadata"]["name"]
    assert_retried(watch, job, "Retrying after booking expired: booking over (attempt 1)")
    # The new attempt is served and admits the Workload.
    admitted = until(
        "the Workload is admitted on attempt 2",
        lambda: admitted_workload(sandbox, job),
        within=FAULT_STEP_TIMEOUT_S,
    )
    assert check_of(admitted)["podSetUpdates"][0]["annotations"][CONSUME] == second
    sandbox.kubectl("delete", "job", job)
    until("the deleted Job's quota is released", lambda: quota_released(sandbox, job))


def test_revoked_capacity_after_admission_deactivates(
    short_backoff: Sandbox, watch: KubectlWatch
) -> None:
    sandbox, job = short_backoff, "dws-revoked-job"
    sandbox.kubectl("create", "-f", "-", input=job_manifest(job))
    admitted = until(
        f"{job} is admitted", lambda: admitted_workload(sandbox, job), within=FAULT_STEP_TIMEOUT_S
    )
    request = check_of(admitted)["podSetUpdates"][0]["annotations"][CONSUME]
    until(f"{job} runs", lambda: running_pod(sandbox, job), within=FAULT_STEP_TIMEOUT_S)

    sandbox.provreq("revoke", request, "nodes reclaimed")
    assert_deactivated(sandbox, watch, job, "nodes reclaimed")
    until(f"{job}'s pods are gone", lambda: not sandbox.pods(job))


def admitted_workload(sandbox: Sandbox, job: str) -> dict[str, Any] | None:
    workload = sandbox.workload(job)
    return workload if is_true(workload, "Admitted") else None


def running_pod(sandbox: Sandbox, job: str) -> dict[str, Any] | None:
    return next((p for p in sandbox.pods(job) if running(p)), None)


def reserved_again(watch: KubectlWatch, job: str) -> list[Seen] | None:
    """The Workload's history once it reserved quota after a requeue."""
    history = versions_of(watch, job)
    requeued = index(history, lambda wl: is_true(wl, "Requeued"))
    if requeued < 0 or index(history, lambda wl: is_true(wl, "QuotaReserved"), requeued) < 0:
        return None
    return history


def assert_retried(watch: KubectlWatch, job: str, message: str) -> None:
    """Retry, eviction, quota released, requeued no sooner than the back-off, reserved again."""
    history = until(f"{job} reserves quota again", lambda: reserved_again(watch, job))
    retry = index(history, lambda wl: check_of(wl).get("state") == "Retry")
    assert retry >= 0, "the check never went to Retry"
    assert check_of(history[retry].object)["message"] == message
    evicted = index(history, lambda wl: is_true(wl, "Evicted"), retry)
    assert evicted >= 0, "the Workload was not evicted"
    eviction = condition(history[evicted].object, "Evicted")
    assert eviction["reason"] == "AdmissionCheck"
    assert (
        eviction["message"]
        == f'Evicted due to AdmissionCheck in Retry state: "{CHECK}" ({message})'
    )
    released = index(history, lambda wl: "admission" not in wl["status"], evicted)
    assert released >= 0, "the evicted Workload kept its quota"
    waiting = condition(history[released].object, "Requeued")
    assert (waiting["status"], waiting["reason"]) == ("False", "AdmissionCheck")
    requeued = index(history, lambda wl: is_true(wl, "Requeued"), released)
    assert requeued >= 0, "the Workload was not requeued"
    assert condition(history[requeued].object, "Requeued")["reason"] == "BackoffFinished"
    assert not is_true(history[requeued - 1].object, "Requeued")
    state = check_of(history[requeued].object)
    assert (state["retryCount"], state["requeueAfterSeconds"]) == (1, BACKOFF_BASE_S)
    # The back-off counts from the check's lastTransitionTime, which has whole seconds.
    waited = history[requeued].at - history[released].at
    assert waited > BACKOFF_BASE_S - 1.2, f"requeued {waited:.2f} s after the eviction"


def assert_deactivated(sandbox: Sandbox, watch: KubectlWatch, job: str, message: str) -> None:
    """The check Rejected with ``message``; the Workload deactivated, evicted, its quota free."""

    def deactivated() -> dict[str, Any] | None:
        wl = sandbox.workload(job)
        return wl if wl and wl["spec"]["active"] is False and is_true(wl, "Evicted") else None

    workload = until(f"{job}'s Workload is deactivated", deactivated)
    history = versions_of(watch, job)
    rejected = index(history, lambda wl: check_of(wl).get("state") == "Rejected")
    assert rejected >= 0, "the check never went to Rejected"
    assert check_of(history[rejected].object)["message"] == message
    eviction = condition(workload, "Evicted")
    assert eviction["reason"] == "DeactivatedDueToAdmissionCheck"
    assert eviction["message"] == (
        f'The workload is deactivated due to AdmissionCheck in Rejected state: "{CHECK}" '
        f"({message})"
    )
    until(f"{job}'s quota is released", lambda: quota_released(sandbox, job))
    assert sandbox.get("job", job)["spec"]["suspend"] is True


# -- Expect 5: a ProvisioningRequest made by hand, no Kueue involved -------------------------------


def test_a_request_made_by_hand_is_served_and_consumed(queues: Sandbox) -> None:
    sandbox = queues
    # examples/s3/README.md's command: placeholders filled in, the PodTemplate's v10 fixed.
    manifest = (EXAMPLES / "provisioning-request.yaml").read_text()
    for old, new in (
        ("apiVersion: v10\n", "apiVersion: v1\n"),
        ("POD_TEMPLATE_NAME", "my-template"),
        ("NAMESPACE_NAME", "default"),
        ("NODEPOOL_NAME", "dws-pool"),
        ("PROVISIONING_REQUEST_NAME", "my-request"),
        ("MAX_RUN_DURATION_SECONDS", "600"),
        ("COUNT", "1"),
    ):
        manifest = manifest.replace(old, new)
    sandbox.kubectl("apply", "-f", "-", input=manifest)

    request = until("my-request is Provisioned", lambda: provisioned(sandbox, "my-request"))
    assert request["spec"]["provisioningClassName"] == CLASS
    booked = [
        n
        for n in sandbox.get("nodes")["items"]
        if n["metadata"].get("annotations", {}).get(BOOKED) == "default/my-request"
    ]
    assert [n["metadata"]["labels"][POOL_LABEL] for n in booked] == ["dws-pool"]

    sandbox.kubectl("create", "-f", "-", input=yaml.safe_dump(consumer_pod(sandbox)))
    until("the consuming pod runs", lambda: running(sandbox.find("pod", "my-consumer")))
    pod = sandbox.get("pod", "my-consumer")
    assert pod["spec"]["nodeName"] == booked[0]["metadata"]["name"]


def provisioned(sandbox: Sandbox, name: str) -> dict[str, Any] | None:
    request = sandbox.find("provisioningrequest", name)
    return request if is_true(request, "Provisioned") else None


def running(pod: dict[str, Any] | None) -> bool:
    return pod is not None and pod["status"].get("phase") == "Running"


def consumer_pod(sandbox: Sandbox) -> dict[str, Any]:
    """A pod from ``my-template`` with the guide's (older) consume annotations."""
    template = sandbox.get("podtemplate", "my-template")["template"]
    spec = {**template["spec"], "containers": [
        {**c, "command": ["/bin/sh", "-c", "sleep 600"]} for c in template["spec"]["containers"]
    ]}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "my-consumer",
            "namespace": "default",
            "annotations": {OLD_CONSUME: "my-request", OLD_CLASS_NAME: CLASS},
        },
        "spec": spec,
    }
