"""Story S4 through ``kubectl kq`` (kueuectl's verbs) and what ``kq dev`` records by default:
the decisions' traces (on Events and in ``explain``) and, at ``--log-level debug``, one log
line per decision. Same sandbox as ``test_s4_teams``: ``kq dev --profile s4`` on the test's
backend, the examples' queues, the real kubectl."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.explained import explain, missing
from tests.e2e.kqdev import kq_dev_on
from tests.e2e.test_s4_teams import (
    EXAMPLES,
    LONG,
    Sandbox,
    admitted,
    after_second_of,
    job,
    pending,
    requests,
    until,
    usage_of,
)
from tests.harness import Cluster
from tests.visibility.test_kubectl_kq import table

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent  # where kubectl-kq is installed
WAITER_CPU = 2  # more than the borrowing job leaves of team B's on-demand CPUs
TRACE = re.compile(r"[0-9a-f]{32}")
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def dev(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Sandbox, Path]]:
    """The sandbox, and kq dev's log (JSON lines: its stderr is a file)."""
    work = tmp_path_factory.mktemp(f"s4-cli-{cluster.backend}")
    with kq_dev_on(cluster, work, "s4", 20, extra=("--log-level", "debug")) as kubeconfig:
        box = Sandbox(kubeconfig, work / "kubectl-cache")
        box.apply(EXAMPLES / "namespaces.yaml")
        for name in ("flavors.yaml", "cluster-queues.yaml", "local-queues.yaml"):
            box.apply(EXAMPLES / name)
        yield box, work / "kq-dev.log"


def decisions(log: Path, key: str) -> list[Obj]:
    """The debug lines ``kq dev`` wrote for ``key``'s decisions."""
    out = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "decision" and entry.get("workload") == key:
                out.append(entry)
    return out


def kq(sandbox: Sandbox, *args: str) -> str:
    env = {**sandbox.env, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["kubectl", "kq", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, f"kubectl kq {' '.join(args)}: {done.stderr}"
    return done.stdout


def quota_reserved_event(sandbox: Sandbox, workload: str) -> Obj | None:
    events = sandbox.get("events", "-n", "team-b")["items"]
    found = [
        e
        for e in events
        if e["involvedObject"].get("name") == workload and e.get("reason") == "QuotaReserved"
    ]
    return found[-1] if found else None


def quota(cq: Obj, flavor: str, resource: str) -> Obj:
    return next(
        r
        for group in cq["spec"]["resourceGroups"]
        for f in group["flavors"]
        if f["name"] == flavor
        for r in f["resources"]
        if r["name"] == resource
    )


def lendable(resource: Obj) -> int:
    return int(resource["lendingLimit" if "lendingLimit" in resource else "nominalQuota"])


def on_demand_cpu_capacity(name: str) -> int:
    """What ``name`` may use of on-demand CPUs while the rest of its cohort uses none: its
    nominal quota plus what it may borrow, bounded by what the others lend."""
    docs = yaml.safe_load_all((EXAMPLES / "cluster-queues.yaml").read_text())
    cqs = {cq["metadata"]["name"]: cq for cq in docs}
    own = quota(cqs[name], "on-demand", "cpu")
    own_cohort = cqs[name]["spec"]["cohort"]
    others = [q for n, q in cqs.items() if n != name and q["spec"]["cohort"] == own_cohort]
    lent = sum(lendable(quota(cq, "on-demand", "cpu")) for cq in others)
    limit = int(own["borrowingLimit"]) if "borrowingLimit" in own else lent
    return int(own["nominalQuota"]) + min(limit, lent)


def test_s4_through_kubectl_kq(dev: tuple[Sandbox, Path]) -> None:
    sandbox, log = dev
    # S4 expectation 1: B borrows A's on-demand CPUs; two more B jobs wait, in queue order.
    # The example job, sleeping long enough for its pods to be listed running.
    sandbox.apply(job("team-b-borrowing-job.yaml", "team-b-borrowing", sleep=LONG))
    borrowing = admitted(sandbox, "team-b", "team-b-borrowing")
    # Traces by default: the admission's Event names the deciding cycle's trace, and explain
    # shows the same one.
    name = borrowing["metadata"]["name"]
    event = until("the QuotaReserved event", lambda: quota_reserved_event(sandbox, name))
    trace_id = event["metadata"].get("annotations", {}).get("kq.dev/trace-id", "")
    assert TRACE.fullmatch(trace_id), event["metadata"]
    assert f"Decision trace: {trace_id}" in kq(sandbox, "explain", "workload", name, "-n", "team-b")

    until("team-b-cq shows its usage",
          lambda: any(t != "0" for t, _ in usage_of(sandbox, "team-b-cq")))  # fmt: skip
    for waiter in ("team-b-over", "team-b-over-2"):
        over = job("team-b-borrowing-job.yaml", waiter, pods=1)
        requests(over)["cpu"] = str(WAITER_CPU)
        sandbox.apply(over)
        # Queue order is creation time in whole seconds: the second one must come later.
        after_second_of(pending(sandbox, "team-b", waiter)["metadata"]["creationTimestamp"])

    rows = {r["NAME"]: r for r in table(kq(sandbox, "list", "clusterqueue"))}
    assert rows["team-b-cq"]["COHORT"] == rows["team-a-cq"]["COHORT"] != ""
    assert (rows["team-b-cq"]["ADMITTED WORKLOADS"], rows["team-b-cq"]["ACTIVE"]) == ("1", "true")
    until("team-b-cq counts 2 pending",
          lambda: {r["NAME"]: r for r in table(kq(sandbox, "list", "cq"))}["team-b-cq"][
              "PENDING WORKLOADS"] == "2")  # fmt: skip

    # explain: each waiter misses the on-demand CPUs the borrowing job leaves, and spot is
    # closed to it (no toleration of the spot taint).
    borrowing_doc = job("team-b-borrowing-job.yaml", "team-b-borrowing")
    held = borrowing_doc["spec"]["parallelism"] * int(requests(borrowing_doc)["cpu"])
    free = on_demand_cpu_capacity("team-b-cq") - held
    first = pending(sandbox, "team-b", "team-b-over")["metadata"]["name"]
    for waiter in ("team-b-over", "team-b-over-2"):
        wl = pending(sandbox, "team-b", waiter)["metadata"]["name"]
        explained = explain(sandbox.env, "team-b", wl)
        short = WAITER_CPU - free
        assert missing(explained) == {("on-demand", "cpu"): (short, WAITER_CPU, free)}, explained
        assert re.search(r"flavor spot: does not fit \(.*taint.*spot", explained), explained
        assert f"held in team-b-cq by: team-b/{name} {held} " in explained, explained
    # The second, of the first's shape, is parked with it untried: it reads the first's decision.
    assert f"Not tried itself: team-b/{first} has its shape" in explained, explained

    queues = table(kq(sandbox, "list", "localqueue", "-A"))
    # On the shared real API server other tests' queues may be listed too.
    assert {(r["NAMESPACE"], r["NAME"], r["CLUSTERQUEUE"]) for r in queues} >= {
        ("team-a", "team-a", "team-a-cq"),
        ("team-b", "team-b", "team-b-cq"),
    }
    flavors = {r["NAME"] for r in table(kq(sandbox, "list", "resourceflavor"))}
    assert flavors >= {"on-demand", "spot", "a100", "h100"}

    workloads = {r["JOB NAME"]: r for r in table(kq(sandbox, "list", "workload", "-n", "team-b"))}
    assert workloads["team-b-borrowing"]["STATUS"] == "ADMITTED"
    assert workloads["team-b-borrowing"]["JOB TYPE"] == "job.batch"
    assert workloads["team-b-borrowing"]["POSITION IN QUEUE"] == ""
    assert [workloads[n]["STATUS"] for n in ("team-b-over", "team-b-over-2")] == ["PENDING"] * 2
    assert [workloads[n]["POSITION IN QUEUE"] for n in ("team-b-over", "team-b-over-2")] == [
        "0",
        "1",
    ]
    pending_only = table(kq(sandbox, "list", "workload", "-n", "team-b", "--status", "pending"))
    assert {r["JOB NAME"] for r in pending_only} == {"team-b-over", "team-b-over-2"}

    as_json = json.loads(kq(sandbox, "list", "workload", "-n", "team-b", "-o", "json"))
    assert as_json["kind"] == "List"
    assert {w["metadata"]["name"] for w in as_json["items"]} == set(
        r["NAME"] for r in workloads.values()
    )
    as_yaml = yaml.safe_load(kq(sandbox, "list", "cq", "-o", "yaml"))
    assert {q["metadata"]["name"] for q in as_yaml["items"]} >= {"team-a-cq", "team-b-cq"}

    # The borrowing job's 3 pods, found by the Job's pod label as kueuectl does.
    def running() -> list[dict[str, str]] | None:
        out = kq(sandbox, "list", "pods", "--for", "job/team-b-borrowing", "-n", "team-b")
        rows = table(out) if out else []
        return rows if len(rows) == 3 and all(r["STATUS"] == "Running" for r in rows) else None

    pods = until("the borrowing job's 3 pods run", running)
    assert all(r["NAME"].startswith("team-b-borrowing-") and r["READY"] == "1/1" for r in pods)
    pods_json = json.loads(kq(sandbox, "list", "pods", "--for", "job/team-b-borrowing", "-n",
                              "team-b", "-o", "json"))  # fmt: skip
    assert {p["metadata"]["name"] for p in pods_json["items"]} == {r["NAME"] for r in pods}

    # At --log-level debug, one line per decision, with the same trace.
    key = f"team-b/{name}"
    lines = until("the admission's decision line", lambda: decisions(log, key) or None)
    assert any(d["result"] == "Admit" and d["trace_id"] == trace_id for d in lines), lines
    waiting = pending(sandbox, "team-b", "team-b-over")
    said = decisions(log, f"team-b/{waiting['metadata']['name']}")
    assert said, "no decision line for a pending workload"
    assert said[-1]["result"] == "Pending", said
    assert said[-1]["message"], said
