"""``kq demo``: scenario S1 scripted on the embedded default, shown as a user would see it.

It starts ``kq dev`` (embedded API server, simulated TPU cluster, kq controller), applies the
documented manifests from ``examples/s1`` with the real kubectl, waits for each step of the
story and prints the kubectl output, then stops the sandbox. Each wait checks what the
scenario expects, so a broken story fails the demo instead of printing something wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from kq.sandbox.readyline import NotReady, stop, wait_for_kubeconfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "s1"
STEP_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0
POOL_LABEL = "cloud.google.com/gke-nodepool"


class DemoError(RuntimeError):
    """A step of the story did not happen in time; the message says which."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speed", type=float, default=20.0, help="time acceleration factor")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if shutil.which("kubectl") is None:
        print("kq demo: the demo drives the real kubectl, and none is on PATH", file=sys.stderr)
        return 2
    if not EXAMPLES.is_dir():
        print(f"kq demo: {EXAMPLES} not found: run it from a kq checkout", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kq-demo-") as workdir:
        try:
            with _sandbox(Path(workdir), args.speed) as kubectl:
                _story(kubectl)
        except DemoError as exc:
            print(f"\nkq demo: FAILED: {exc}", file=sys.stderr)
            return 1
    print("\nS1 done: every expectation of the story held.")
    return 0


Kubectl = Callable[..., str]


@contextmanager
def _sandbox(workdir: Path, speed: float) -> Iterator[Kubectl]:
    log = (workdir / "kq-dev.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "kq", "dev", "--data-dir", str(workdir / "dev"), "--fresh",
         "--profile", "s1", "--speed", f"{speed:g}"],
        stdout=subprocess.PIPE, stderr=log, text=True,
    )  # fmt: skip
    try:
        kubeconfig = wait_for_kubeconfig(process, workdir / "kq-dev.log", READY_TIMEOUT_S)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig),
               "KUBECACHEDIR": str(workdir / "kubectl-cache")}  # fmt: skip

        def kubectl(*args: str, input: str | None = None) -> str:
            done = subprocess.run(["kubectl", *args], input=input, capture_output=True,
                                  text=True, env=env, timeout=60, check=False)  # fmt: skip
            if done.returncode != 0:
                raise DemoError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
            return done.stdout

        print(f"Embedded cluster ready (profile s1: 3 TPU v5e slices of 8 chips, {speed:g}x time)")
        print(f"  export KUBECONFIG={kubeconfig}\n")
        yield kubectl
    except NotReady as exc:
        raise DemoError(str(exc)) from None
    finally:
        stop(process, timeout=15)
        log.close()


def _show(kubectl: Kubectl, title: str, *args: str) -> None:
    print(f"$ kubectl {' '.join(args)}    # {title}")
    print(kubectl(*args))


def _documents(path: Path) -> dict[str, str]:
    """The manifest's documents by object name, as written (applied verbatim)."""
    texts = [doc for doc in path.read_text().split("\n---") if doc.strip()]
    return {yaml.safe_load(text)["metadata"]["name"]: text for text in texts}


def _workloads(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    items = json.loads(kubectl("get", "workloads", "-o", "json"))["items"]
    return {wl["metadata"]["ownerReferences"][0]["name"]: wl for wl in items}


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any]:
    for condition in (workload.get("status") or {}).get("conditions") or ():
        if condition["type"] == kind:
            return dict(condition)
    return {}


def _is(workload: dict[str, Any] | None, kind: str) -> bool:
    return workload is not None and _condition(workload, kind).get("status") == "True"


def _until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out waiting until {what}")
        time.sleep(0.2)


def _chips_in_use(kubectl: Kubectl) -> str:
    # The first queue status write may not have landed yet.
    cq = json.loads(kubectl("get", "clusterqueue", "cluster-queue", "-o", "json"))
    status = cq.get("status") or {}
    usage = status.get("flavorsUsage") or [{"resources": [{"total": "0"}]}]
    return str(usage[0]["resources"][0]["total"])


def _pools_by_child_job(kubectl: Kubectl, jobset: str) -> int:
    """How many node pools run the JobSet's Running pods, if no two child Jobs share one."""
    nodes = json.loads(kubectl("get", "nodes", "-o", "json"))["items"]
    pool = {n["metadata"]["name"]: n["metadata"]["labels"].get(POOL_LABEL) for n in nodes}
    pods = json.loads(
        kubectl("get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={jobset}", "-o", "json")
    )["items"]
    pools_of_job: dict[str, set[str | None]] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") != "Running":
            return 0
        job = pod["metadata"]["labels"].get("job-name", "")
        pools_of_job.setdefault(job, set()).add(pool.get(pod["spec"].get("nodeName", "")))
    used = [p for pools in pools_of_job.values() for p in pools]
    return len(used) if len(pods) == 6 and len(set(used)) == len(used) else 0


def _story(kubectl: Kubectl) -> None:
    jobsets = _documents(EXAMPLES / "jobsets-multislice-standard.yaml")
    print("== Queueing objects (examples/s1/kueue.yaml, as documented)")
    print(kubectl("apply", "-f", str(EXAMPLES / "kueue.yaml")))

    print("== The 3-slice JobSet (24 chips) first, then the 1-slice and 2-slice ones")
    print(kubectl("apply", "-f", "-", input=jobsets["multislice-3slice"]), end="")
    _until("multislice-3slice is admitted",
           lambda: _is(_workloads(kubectl).get("multislice-3slice"), "Admitted"))  # fmt: skip
    for name in ("multislice-1slice", "multislice-2slice"):
        print(kubectl("apply", "-f", "-", input=jobsets[name]), end="")

    def both_pending() -> bool:
        wls = _workloads(kubectl)
        return all(
            name in wls and _condition(wls[name], "QuotaReserved").get("status") == "False"
            for name in ("multislice-1slice", "multislice-2slice")
        )

    _until("the 1-slice and 2-slice workloads are pending", both_pending)
    print()
    _show(kubectl, "only the 3-slice one is admitted", "get", "workloads")
    for name, wl in sorted(_workloads(kubectl).items()):
        if not _is(wl, "Admitted"):
            print(f"  {name}: {_condition(wl, 'QuotaReserved').get('message')}")
    # ClusterQueue status is batched (1 s, as Kueue), so it trails the Workloads a little.
    _until("the ClusterQueue reports the 3-slice JobSet's 24 chips in use",
           lambda: _chips_in_use(kubectl) == "24")  # fmt: skip
    print(f"  cluster-queue flavorsUsage: {_chips_in_use(kubectl)} of 24 chips\n")
    _until("the 3-slice JobSet runs 6 pods, each child Job on its own node pool",
           lambda: _pools_by_child_job(kubectl, "multislice-3slice") == 3)  # fmt: skip
    _show(kubectl, "6 pods, one child Job per node pool", "get", "pods", "-o", "wide")

    _until("the 1-slice and 2-slice workloads are admitted after the 3-slice one finishes",
           lambda: all(_is(_workloads(kubectl).get(n), "Admitted")
                       for n in ("multislice-1slice", "multislice-2slice")))  # fmt: skip
    if not _is(_workloads(kubectl)["multislice-3slice"], "Finished"):
        raise DemoError("the waiting JobSets were admitted before the 3-slice one finished")
    _show(kubectl, "3-slice finished; 1-slice and 2-slice admitted", "get", "workloads")

    _until("every workload is finished",
           lambda: all(_is(wl, "Finished") for wl in _workloads(kubectl).values()))  # fmt: skip
    _show(kubectl, "all finished", "get", "workloads")
    _show(kubectl, "every JobSet completed", "get", "jobsets")
    _until("the ClusterQueue reports no chips in use", lambda: _chips_in_use(kubectl) == "0")
    print(f"  cluster-queue flavorsUsage: {_chips_in_use(kubectl)} of 24 chips")
