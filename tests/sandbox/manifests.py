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
    """S2's training JobSet: two 4x4 v6e slices, BlockingRecreate, no backoff."""
    obj = s1_jobset(name, 2)
    obj["spec"]["failurePolicy"] = {"maxRestarts": 10, "restartStrategy": "BlockingRecreate"}
    job = obj["spec"]["replicatedJobs"][0]["template"]["spec"]
    job.update(parallelism=4, completions=4)
    job["template"]["spec"]["nodeSelector"] = {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }
    return obj
