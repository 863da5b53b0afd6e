"""``kq demo s3``: scenario S3 (Dynamic Workload Scheduler) scripted on ``kq dev --profile s3``.

The guide's Job waits for a GPU node that a simulated cluster autoscaler creates for kq's
ProvisioningRequest; then a request fails twice (a retry, then a rejection), a provisioned one
loses its capacity, and a request made by hand is served without Kueue. Faults are injected
with ``kq dev provreq``, as a person would.
"""

from __future__ import annotations

from typing import Any

import yaml

from kq.sandbox.demo_kit import (
    REPO,
    DemoError,
    Kubectl,
    Session,
    condition,
    get,
    is_true,
    show,
    until,
)

EXAMPLES = REPO / "examples" / "s3"
SPEED = 10.0  # provisioning (30 s of sandbox time) takes 3 s: time enough to inject a fault
CHECK = "dws-prov"
CLASS = "queued-provisioning.gke.io"
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_NAME = "autoscaling.x-k8s.io/provisioning-class-name"
POOL_LABEL = "cloud.google.com/gke-nodepool"
BOOKED = "kq.dev/provisioning-request"  # the simulated autoscaler's mark on the nodes it booked
STATUS_COLUMNS = (
    "custom-columns=NAME:.metadata.name,ACTIVE:.spec.active,"
    'EVICTED:.status.conditions[?(@.type=="Evicted")].reason'
)

CONDITIONS = 'jsonpath={range .status.conditions[*]}{.type}={.status}: {.message}{"\\n"}{end}'


def play(session: Session, speed: float) -> None:
    print(f"Embedded cluster ready (profile s3: 2 CPU nodes and an empty queued-provisioning GPU "
          f"pool dws-pool, {speed:g}x time)")  # fmt: skip
    print(f"  export KUBECONFIG={session.env['KUBECONFIG']}\n")
    print("== Queueing objects (examples/s3/dws-queues.yaml, as published)")
    print(session.kubectl("create", "-f", str(EXAMPLES / "dws-queues.yaml")))
    _provisioned(session.kubectl, speed)
    _failed_twice(session)
    _revoked(session)
    _by_hand(session.kubectl)


def _job(name: str) -> str:
    text = (EXAMPLES / "job.yaml").read_text().replace("NODEPOOL_NAME", "dws-pool")
    return text.replace("name: sample-job", f"name: {name}")


def _workload(kubectl: Kubectl, job: str) -> dict[str, Any]:
    for wl in get(kubectl, "workloads")["items"]:
        if wl["metadata"]["ownerReferences"][0]["name"] == job:
            return dict(wl)
    return {}


def _check(workload: dict[str, Any]) -> dict[str, Any]:
    entries = (workload.get("status") or {}).get("admissionChecks") or ()
    return next((dict(e) for e in entries if e["name"] == CHECK), {})


def _request(kubectl: Kubectl, name: str) -> dict[str, Any]:
    out = kubectl("get", "provisioningrequest", name, "--ignore-not-found", "-o", "json")
    return dict(yaml.safe_load(out)) if out.strip() else {}


def _waiting_request(kubectl: Kubectl, job: str, attempt: int) -> str:
    """The name of the Job's request of ``attempt`` once Accepted and not yet Provisioned."""
    found: list[dict[str, Any]] = []

    def accepted() -> bool:
        workload = _workload(kubectl, job)
        name = f"{workload['metadata']['name']}-{CHECK}-{attempt}" if workload else ""
        found[:] = [_request(kubectl, name)] if name else []
        return bool(found) and is_true(found[0], "Accepted")

    until(f"{job}'s ProvisioningRequest #{attempt} is Accepted", accepted)
    if is_true(found[0], "Provisioned"):
        raise DemoError(f"{job}'s request was provisioned before it could be looked at")
    return str(found[0]["metadata"]["name"])


def _provreq(session: Session, fault: str, name: str, message: str) -> None:
    print(f"$ kq dev provreq {fault} {name} --message '{message}'")
    print(session.kq("dev", "provreq", fault, name, "--message", message))


def _deactivated(kubectl: Kubectl, job: str, message: str) -> None:
    """Wait for the check's rejection to deactivate the Workload and release its quota."""

    def done() -> bool:
        wl = _workload(kubectl, job)
        evicted = condition(wl, "Evicted")
        return (
            wl.get("spec", {}).get("active") is False
            and evicted.get("reason") == "DeactivatedDueToAdmissionCheck"
            and "admission" not in wl.get("status", {})
        )

    until(f"{job}'s Workload is deactivated", done)
    until("dws-cluster-queue counts no quota in use", lambda: _quota_in_use(kubectl) == {"0"})
    expected = f'AdmissionCheck in Rejected state: "{CHECK}" ({message})'
    if not condition(_workload(kubectl, job), "Evicted")["message"].endswith(expected):
        raise DemoError(f"{job}'s eviction message does not end with {expected!r}")
    show(kubectl, "deactivated; its quota released", "get", "workloads", "-o", STATUS_COLUMNS)


def _quota_in_use(kubectl: Kubectl) -> set[str]:
    status = get(kubectl, "clusterqueue", "dws-cluster-queue").get("status") or {}
    return {str(r["total"]) for f in status.get("flavorsUsage") or () for r in f["resources"]}


def _provisioned(kubectl: Kubectl, speed: float) -> None:
    print(f"== The sample Job (examples/s3/job.yaml on dws-pool): 30 s of sandbox time, "
          f"{30 / speed:g} s here, to get its node")  # fmt: skip
    print(kubectl("create", "-f", "-", input=_job("sample-job")))
    name = _waiting_request(kubectl, "sample-job", 1)
    workload, template = _workload(kubectl, "sample-job"), f"ppt-{name}-main"
    _check_waiting(workload, _request(kubectl, name), template)
    show(kubectl, "quota reserved, not admitted", "get", "workloads")
    check = _check(workload)
    print(f"  {CHECK}: {check['state']} ({check.get('message', '')})\n")
    show(
        kubectl, "created by kq, owned by the Workload", "get", "provisioningrequests,podtemplates"
    )

    until("the check is Ready and the Workload admitted", lambda: is_true(
        _workload(kubectl, "sample-job"), "Admitted"))  # fmt: skip
    if not is_true(_request(kubectl, name), "Provisioned"):
        raise DemoError(f"the Workload was admitted before {name} was provisioned")
    show(kubectl, "the autoscaler created the node", "get", "nodes", "-L", POOL_LABEL)
    show(kubectl, "admitted", "get", "workloads")
    until("the pod runs on the booked node", lambda: _on_booked_node(kubectl, "sample-job", name))
    show(kubectl, "the pod runs on the new node", "get", "pods", "-o", "wide")
    until("sample-job completes", lambda: is_true(get(kubectl, "job", "sample-job"), "Complete"))
    # The job controller's Completed event is written after the condition, and the simulated
    # cluster batches its events (up to 1 s), so the table is read once the event is in it.
    until("the Job's Completed event is recorded", lambda: "Completed" in _reasons(
        _job_events(kubectl)))  # fmt: skip
    events = _job_events(kubectl)
    print(f"$ kubectl describe job sample-job    # its events\n{events}")
    _check_event_order(events)


def _check_waiting(workload: dict[str, Any], request: dict[str, Any], template: str) -> None:
    """Between quota reservation and admission: the check waits on kq's request."""
    wrong = []
    if not is_true(workload, "QuotaReserved") or is_true(workload, "Admitted"):
        wrong.append("the Workload is not reserved-but-not-admitted")
    if _check(workload).get("state") != "Pending":
        wrong.append(f"the check is {_check(workload).get('state')}, not Pending")
    owner = request["metadata"]["ownerReferences"][0]
    if (owner["kind"], owner["uid"], owner["controller"]) != (
        "Workload",
        workload["metadata"]["uid"],
        True,
    ):
        wrong.append("the request is not controlled by the Workload")
    spec = request["spec"]
    if spec["provisioningClassName"] != CLASS:
        wrong.append(f"class {spec['provisioningClassName']}")
    if spec.get("parameters") != {"maxRunDurationSeconds": "600"}:
        wrong.append(f"parameters {spec.get('parameters')}")
    if spec["podSets"] != [{"count": 1, "podTemplateRef": {"name": template}}]:
        wrong.append(f"podSets {spec['podSets']}")
    if wrong:
        raise DemoError("; ".join(wrong))


def _on_booked_node(kubectl: Kubectl, job: str, request: str) -> bool:
    pods = get(kubectl, "pods", "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    running = [p for p in pods if p["status"].get("phase") == "Running"]
    if not running:
        return False
    notes = running[0]["metadata"].get("annotations") or {}
    if (notes.get(CONSUME), notes.get(CLASS_NAME)) != (request, CLASS):
        raise DemoError(f"the pod's annotations are {notes}")
    node = get(kubectl, "node", running[0]["spec"]["nodeName"])
    return bool(node["metadata"].get("annotations", {}).get(BOOKED) == f"default/{request}")


def _job_events(kubectl: Kubectl) -> str:
    return kubectl("describe", "job", "sample-job").split("\nEvents:\n", 1)[1]


def _reasons(events: str) -> list[str]:
    lines = events.splitlines()
    start, end = lines[0].index("Reason"), lines[0].index("Age")
    return [line[start:end].strip() for line in lines[2:] if line.strip()]


def _check_event_order(events: str) -> None:
    reasons = _reasons(events)
    story = ["Started", "SuccessfulCreate", "Resumed", "Completed"]
    # Suspended and CreatedWorkload answer the same create: their order is a race.
    at = {r: reasons.index(r) for r in ["Suspended", "CreatedWorkload", *story] if r in reasons}
    order = [at.get(r, -1) for r in story]
    if (
        len(at) < 6
        or order != sorted(order)
        or max(at["Suspended"], at["CreatedWorkload"]) > order[0]
    ):
        raise DemoError(f"the Job's events are out of the story's order: {reasons}")


def _failed_twice(session: Session) -> None:
    kubectl = session.kubectl
    print("== Provisioning fails: a retry after the back-off, then a rejection")
    config = next(d for d in yaml.safe_load_all((EXAMPLES / "dws-queues.yaml").read_text())
                  if d and d["kind"] == "ProvisioningRequestConfig")  # fmt: skip
    config["spec"]["retryStrategy"] = {
        "backoffLimitCount": 1,
        "backoffBaseSeconds": 2,
        "backoffMaxSeconds": 10,
    }
    print("dws-config gets retryStrategy: {backoffLimitCount: 1, backoffBaseSeconds: 2}")
    print(kubectl("apply", "-f", "-", input=yaml.safe_dump(config)))
    print(kubectl("create", "-f", "-", input=_job("failing-job")))
    _provreq(session, "fail", _waiting_request(kubectl, "failing-job", 1), "no capacity")
    second = _waiting_request(kubectl, "failing-job", 2)
    workload = _workload(kubectl, "failing-job")
    if condition(workload, "Requeued").get("reason") != "BackoffFinished":
        raise DemoError("the Workload got a new request without a back-off")
    _check_retried(kubectl, workload["metadata"]["name"])
    show(kubectl, "Retry, evicted, requeued after the back-off, a new request", "get", "events",
         "--field-selector", f"involvedObject.name={workload['metadata']['name']}")  # fmt: skip
    _provreq(session, "fail", second, "still no capacity")
    _deactivated(kubectl, "failing-job", "still no capacity")


def _check_retried(kubectl: Kubectl, workload: str) -> None:
    """The Workload's events tell the retry: the check went Retry, and that evicted it."""
    events = get(kubectl, "events", "--field-selector", f"involvedObject.name={workload}")
    said = {(e["reason"], e["message"]) for e in events["items"]}
    retrying = "Retrying after failure: no capacity"
    for expected in (
        ("AdmissionCheckUpdated", f"Admission check {CHECK} updated state from Pending to Retry "
                                  f"with message: {retrying}"),
        ("EvictedDueToAdmissionCheck",
         f'Evicted due to AdmissionCheck in Retry state: "{CHECK}" ({retrying})'),
    ):  # fmt: skip
        if expected not in said:
            raise DemoError(f"no event {expected} on {workload}")


def _revoked(session: Session) -> None:
    kubectl = session.kubectl
    print("== Capacity revoked after admission")
    print(kubectl("create", "-f", "-", input=_job("revoked-job")))
    until("revoked-job is admitted", lambda: is_true(_workload(kubectl, "revoked-job"), "Admitted"))
    updates = _check(_workload(kubectl, "revoked-job"))["podSetUpdates"]
    name = updates[0]["annotations"][CONSUME]
    until("revoked-job runs", lambda: _on_booked_node(kubectl, "revoked-job", name))
    _provreq(session, "revoke", name, "nodes reclaimed")
    _deactivated(kubectl, "revoked-job", "nodes reclaimed")


def _by_hand(kubectl: Kubectl) -> None:
    print("== Without Kueue: a ProvisioningRequest and a consuming pod made by hand")
    manifest = (EXAMPLES / "provisioning-request.yaml").read_text()
    for old, new in (
        ("apiVersion: v10\n", "apiVersion: v1\n"), ("POD_TEMPLATE_NAME", "my-template"),
        ("NAMESPACE_NAME", "default"), ("NODEPOOL_NAME", "dws-pool"),
        ("PROVISIONING_REQUEST_NAME", "my-request"), ("MAX_RUN_DURATION_SECONDS", "600"),
        ("COUNT", "1"),
    ):  # fmt: skip
        manifest = manifest.replace(old, new)
    print(kubectl("apply", "-f", "-", input=manifest))
    until("my-request is Provisioned", lambda: is_true(_request(kubectl, "my-request"),
                                                       "Provisioned"))  # fmt: skip
    show(kubectl, "served by the simulated autoscaler", "get", "provisioningrequest", "my-request",
         "-o", CONDITIONS)  # fmt: skip
    template = get(kubectl, "podtemplate", "my-template")["template"]
    template["metadata"] = {
        "name": "my-consumer",
        "annotations": {
            "cluster-autoscaler.kubernetes.io/consume-provisioning-request": "my-request",
            "cluster-autoscaler.kubernetes.io/provisioning-class-name": CLASS,
        },
    }
    template["spec"]["containers"][0]["command"] = ["/bin/sh", "-c", "sleep 600"]
    pod = {"apiVersion": "v1", "kind": "Pod", **template}
    print(kubectl("create", "-f", "-", input=yaml.safe_dump(pod)))
    until("my-consumer runs on my-request's node", lambda: _consumer_placed(kubectl))
    show(kubectl, "on the node provisioned for my-request", "get", "pods", "my-consumer", "-o",
         "wide")  # fmt: skip


def _consumer_placed(kubectl: Kubectl) -> bool:
    pod = get(kubectl, "pod", "my-consumer")
    if pod["status"].get("phase") != "Running":
        return False
    node = get(kubectl, "node", pod["spec"]["nodeName"])
    if node["metadata"].get("annotations", {}).get(BOOKED) != "default/my-request":
        raise DemoError(f"my-consumer runs on {pod['spec']['nodeName']}, not my-request's node")
    return True
