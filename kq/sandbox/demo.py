"""``kq demo [s1|s3]``: a scenario scripted on the embedded default, shown as a user would see it.

It starts ``kq dev`` (embedded API server, simulated cluster, kq controller), applies the
documented manifests from ``examples/<story>`` with the real kubectl, waits for each step of the
story and prints the kubectl output, then stops the sandbox. Each wait checks what the
scenario expects, so a broken story fails the demo instead of printing something wrong.
S1 (multislice TPU JobSets) is here; S3 (DWS provisioning) is in ``demo_s3``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kq.sandbox import demo_s3
from kq.sandbox.demo_kit import (
    REPO,
    DemoError,
    Kubectl,
    Session,
    condition,
    is_true,
    sandbox,
    show,
    until,
)

EXAMPLES = REPO / "examples" / "s1"
POOL_LABEL = "cloud.google.com/gke-nodepool"


def _s1(session: Session, speed: float) -> None:
    print(f"Embedded cluster ready (profile s1: 3 TPU v5e slices of 8 chips, {speed:g}x time)")
    print(f"  export KUBECONFIG={session.env['KUBECONFIG']}\n")
    _story(session.kubectl)


# story: (profile, default --speed, examples directory, script)
STORIES: dict[str, tuple[str, float, Path, Callable[[Session, float], None]]] = {
    "s1": ("s1", 20.0, EXAMPLES, _s1),
    "s3": ("s3", demo_s3.SPEED, demo_s3.EXAMPLES, demo_s3.play),
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("story", nargs="?", choices=tuple(STORIES), default="s1",
                        help="which scenario to play (default: s1)")  # fmt: skip
    parser.add_argument("--speed", type=float, default=None,
                        help="time acceleration factor (s1: 20, s3: 10)")  # fmt: skip
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    profile, default_speed, examples, play = STORIES[args.story]
    speed = args.speed or default_speed
    if shutil.which("kubectl") is None:
        print("kq demo: the demo drives the real kubectl, and none is on PATH", file=sys.stderr)
        return 2
    if not examples.is_dir():
        print(f"kq demo: {examples} not found: run it from a kq checkout", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kq-demo-") as workdir:
        try:
            with sandbox(Path(workdir), profile, speed) as session:
                play(session, speed)
        except DemoError as exc:
            print(f"\nkq demo: FAILED: {exc}", file=sys.stderr)
            return 1
    print(f"\n{args.story.upper()} done: every expectation of the story held.")
    return 0


def _documents(path: Path) -> dict[str, str]:
    """The manifest's documents by object name, as written (applied verbatim)."""
    texts = [doc for doc in path.read_text().split("\n---") if doc.strip()]
    return {yaml.safe_load(text)["metadata"]["name"]: text for text in texts}


def _workloads(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    items = json.loads(kubectl("get", "workloads", "-o", "json"))["items"]
    return {wl["metadata"]["ownerReferences"][0]["name"]: wl for wl in items}


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
    until("multislice-3slice is admitted",
          lambda: is_true(_workloads(kubectl).get("multislice-3slice"), "Admitted"))  # fmt: skip
    for name in ("multislice-1slice", "multislice-2slice"):
        print(kubectl("apply", "-f", "-", input=jobsets[name]), end="")

    def both_pending() -> bool:
        wls = _workloads(kubectl)
        return all(
            name in wls and condition(wls[name], "QuotaReserved").get("status") == "False"
            for name in ("multislice-1slice", "multislice-2slice")
        )

    until("the 1-slice and 2-slice workloads are pending", both_pending)
    print()
    show(kubectl, "only the 3-slice one is admitted", "get", "workloads")
    for name, wl in sorted(_workloads(kubectl).items()):
        if not is_true(wl, "Admitted"):
            print(f"  {name}: {condition(wl, 'QuotaReserved').get('message')}")
    # ClusterQueue status is batched (1 s, as Kueue), so it trails the Workloads a little.
    until("the ClusterQueue reports the 3-slice JobSet's 24 chips in use",
          lambda: _chips_in_use(kubectl) == "24")  # fmt: skip
    print(f"  cluster-queue flavorsUsage: {_chips_in_use(kubectl)} of 24 chips\n")
    until("the 3-slice JobSet runs 6 pods, each child Job on its own node pool",
          lambda: _pools_by_child_job(kubectl, "multislice-3slice") == 3)  # fmt: skip
    show(kubectl, "6 pods, one child Job per node pool", "get", "pods", "-o", "wide")

    until("the 1-slice and 2-slice workloads are admitted after the 3-slice one finishes",
          lambda: all(is_true(_workloads(kubectl).get(n), "Admitted")
                      for n in ("multislice-1slice", "multislice-2slice")))  # fmt: skip
    if not is_true(_workloads(kubectl)["multislice-3slice"], "Finished"):
        raise DemoError("the waiting JobSets were admitted before the 3-slice one finished")
    show(kubectl, "3-slice finished; 1-slice and 2-slice admitted", "get", "workloads")

    until("every workload is finished",
          lambda: all(is_true(wl, "Finished") for wl in _workloads(kubectl).values()))  # fmt: skip
    show(kubectl, "all finished", "get", "workloads")
    show(kubectl, "every JobSet completed", "get", "jobsets")
    until("the ClusterQueue reports no chips in use", lambda: _chips_in_use(kubectl) == "0")
    print(f"  cluster-queue flavorsUsage: {_chips_in_use(kubectl)} of 24 chips")
