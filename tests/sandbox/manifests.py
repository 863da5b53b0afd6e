"""S1's JobSets as the tutorial writes them (the way a user applies them), for the simulations."""

from __future__ import annotations

from typing import Any

import yaml

_JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: multislice-queue
  annotations:
    alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool
spec:
  failurePolicy:
    maxRestarts: 4
  replicatedJobs:
    - name: slice
      replicas: {replicas}
      template:
        spec:
          parallelism: 2
          completions: 2
          backoffLimit: 0
          template:
            spec:
              nodeSelector:
                cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice
                cloud.google.com/gke-tpu-topology: 2x4
              containers:
              - name: jax-tpu
                image: python:3.8
                ports:
                - containerPort: 8471
                - containerPort: 8080
                command:
                - bash
                - -c
                - |
                  pip install "jax[tpu]" -f https://storage.googleapis.com/jax-releases/libtpu_releases.html
                  python -c 'import jax; print("Global device count:", jax.device_count())'
                  sleep 60
                resources:
                  limits:
                    google.com/tpu: 4
"""


def s1_jobset(name: str, replicas: int, *, suspend: bool = False) -> dict[str, Any]:
    """One of S1's JobSets; ``suspend`` mimics Kueue's webhook before admission."""
    obj: dict[str, Any] = yaml.safe_load(_JOBSET.format(name=name, replicas=replicas))
    if suspend:
        obj["spec"]["suspend"] = True
    return obj


def s2_jobset(name: str) -> dict[str, Any]:
    """S2's training JobSet: two 4x4 v6e slices, BlockingRecreate, no backoff, and the guide's
    MaxText command, which declares no run time (the profile's default applies)."""
    obj = s1_jobset(name, 2)
    obj["spec"]["failurePolicy"] = {"maxRestarts": 10, "restartStrategy": "BlockingRecreate"}
    job = obj["spec"]["replicatedJobs"][0]["template"]["spec"]
    job.update(parallelism=4, completions=4)
    pod = job["template"]["spec"]
    pod["nodeSelector"] = {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }
    pod["containers"][0]["command"] = ["python3", "MaxText/train.py", "MaxText/configs/base.yml",
                                       "model_name=llama2-7b", "steps=300"]  # fmt: skip
    return obj


def rayjob(name: str, *, suspend: bool = False, sleep: int = 60) -> dict[str, Any]:
    """A RayJob as Kueue's docs write one: a head, a worker group of 2, shut down when done."""
    container = {"name": "ray", "image": "rayproject/ray:2.9.0",
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}  # fmt: skip
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "entrypoint": f"python -c 'import ray; ray.init()' && sleep {sleep}",
            "shutdownAfterJobFinishes": True,
            "suspend": suspend,
            "rayClusterSpec": {
                "rayVersion": "2.9.0",
                "headGroupSpec": {"rayStartParams": {},
                                  "template": {"spec": {"containers": [dict(container)]}}},
                "workerGroupSpecs": [{
                    "groupName": "small-group", "replicas": 2, "minReplicas": 1,
                    "maxReplicas": 5, "rayStartParams": {},
                    "template": {"spec": {"containers": [dict(container)]}},
                }],
            },
        },
    }  # fmt: skip


def mpijob(name: str, *, workers: int = 2, suspend: bool = False) -> dict[str, Any]:
    """An MPIJob like examples/s4's: a launcher running mpirun for 60 s, sshd workers."""
    requests = {"requests": {"cpu": "1", "memory": "1Gi"}}
    command = f"mpirun -n {workers} /home/mpiuser/pi; sleep 60"
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", "suspend": suspend},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [
                    {"name": "launcher", "image": "mpioperator/mpi-pi:openmpi",
                     "command": ["sh", "-c", command],
                     "resources": requests}]}}},
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [
                    {"name": "worker", "image": "mpioperator/mpi-pi:openmpi",
                     "resources": requests}]}}},
            },
        },
    }  # fmt: skip
