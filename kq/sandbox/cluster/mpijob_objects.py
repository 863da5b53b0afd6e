"""MPIJob children as mpi-operator v2 builds them: worker pods, the launcher Job and the
hostfile ConfigMap, labelled ``training.kubeflow.org/*``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kq.sandbox.cluster.actions import Obj, controller_ref, meta
from kq.sandbox.cluster.kubelet import until_deleted

PREFIX = "training.kubeflow.org/"
JOB_NAME = PREFIX + "job-name"
JOB_ROLE = PREFIX + "job-role"
REPLICA_INDEX = PREFIX + "replica-index"
OPERATOR_NAME = PREFIX + "operator-name"


def mpi_spec(mpijob: Mapping[str, Any]) -> Mapping[str, Any]:
    return mpijob.get("spec") or {}


def _replica(mpijob: Mapping[str, Any], role: str) -> Mapping[str, Any] | None:
    value = (mpi_spec(mpijob).get("mpiReplicaSpecs") or {}).get(role)
    return value if isinstance(value, Mapping) else None


def worker_count(mpijob: Mapping[str, Any]) -> int:
    worker = _replica(mpijob, "Worker")
    return int(worker.get("replicas") or 0) if worker is not None else 0


def _labels(mpijob: Mapping[str, Any], role: str) -> dict[str, str]:
    return {OPERATOR_NAME: "mpi-operator", JOB_NAME: str(meta(mpijob)["name"]), JOB_ROLE: role}


def _restart_policy(spec: Mapping[str, Any], default: str) -> str:
    policy = str(spec.get("restartPolicy") or default)
    return "Never" if policy == "ExitCode" else policy


def _template(mpijob: Mapping[str, Any], role: str, hostname: str) -> Obj:
    """The role's pod template with the operator's labels, hostname and restart policy."""
    spec = _replica(mpijob, role.capitalize()) or {}
    template = copy.deepcopy(spec.get("template") or {})
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), **_labels(mpijob, role)}
    pod = template.setdefault("spec", {})
    pod["hostname"] = hostname
    pod["subdomain"] = str(meta(mpijob)["name"])  # the MPIJob's headless Service
    pod["restartPolicy"] = _restart_policy(spec, "OnFailure" if role == "launcher" else "Never")
    return template


def build_worker(mpijob: Mapping[str, Any], index: int) -> Obj:
    """Worker pod ``index``: sshd (the image's default) that runs until deleted."""
    m = meta(mpijob)
    name = f"{m['name']}-worker-{index}"
    template = _template(mpijob, "worker", name)
    container = (template["spec"].get("containers") or [{}])[0]
    if not container.get("command") and not container.get("args"):
        container["command"] = ["/usr/sbin/sshd", "-De"]
    template = until_deleted(template)
    labels = {**template["metadata"]["labels"], REPLICA_INDEX: str(index)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": labels,
            "annotations": dict(template["metadata"].get("annotations") or {}),
            "ownerReferences": [controller_ref(mpijob)],
        },
        "spec": template["spec"],
    }


def build_launcher(mpijob: Mapping[str, Any]) -> Obj:
    """The launcher Job, with the run policy's backoff limit and deadline."""
    m = meta(mpijob)
    name = f"{m['name']}-launcher"
    policy = mpi_spec(mpijob).get("runPolicy") or {}
    spec: Obj = {"template": _template(mpijob, "launcher", name), "podReplacementPolicy": "Failed"}
    for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        if policy.get(key) is not None:
            spec[key] = policy[key]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": {"app": str(m["name"])},
            "ownerReferences": [controller_ref(mpijob)],
        },
        "spec": spec,
    }


def build_config(mpijob: Mapping[str, Any]) -> Obj:
    """The ConfigMap with the OpenMPI-style hostfile (``<host> slots=N`` per worker)."""
    m = meta(mpijob)
    name, ns = str(m["name"]), str(m.get("namespace", "default"))
    slots = int(mpi_spec(mpijob).get("slotsPerWorker") or 1)
    implementation = str(mpi_spec(mpijob).get("mpiImplementation") or "OpenMPI")
    lines = []
    for i in range(worker_count(mpijob)):
        host = f"{name}-worker-{i}.{name}.{ns}.svc"
        lines.append(f"{host} slots={slots}" if implementation == "OpenMPI" else f"{host}:{slots}")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{name}-config",
            "namespace": ns,
            "labels": {"app": name},
            "ownerReferences": [controller_ref(mpijob)],
        },
        "data": {"hostfile": "".join(f"{line}\n" for line in lines)},
    }
