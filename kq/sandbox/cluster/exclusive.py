"""JobSet exclusive placement as the pod (anti-)affinity the JobSet pod webhook injects.

Upstream gives the leader pod (completion index 0) a required affinity to pods of its own Job
(same ``jobset.sigs.k8s.io/job-key``) and a required anti-affinity to pods of any other Job, both
keyed on the annotated topology label, and pins followers to the leader's domain. The sandbox has
no pod webhooks, so the Job controller calls :func:`with_exclusive_affinity` on every pod it
builds and every pod gets both terms; the scheduler's first-pod rule then places a Job's pods in
one domain, which is the same outcome without the follower retry loop.
"""

from __future__ import annotations

import copy

from kq.sandbox.cluster.actions import Obj
from kq.sandbox.cluster.podinfo import annotations_of, labels_of

EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY_KEY = "alpha.jobset.sigs.k8s.io/node-selector"
JOB_KEY = "jobset.sigs.k8s.io/job-key"


def with_exclusive_affinity(pod: Obj) -> Obj:
    """``pod`` with the exclusive-topology terms added, or unchanged when not requested."""
    notes = annotations_of(pod)
    topology = notes.get(EXCLUSIVE_KEY)
    job_key = labels_of(pod).get(JOB_KEY)
    if not topology or not job_key or NODE_SELECTOR_STRATEGY_KEY in notes:
        return pod
    out = copy.deepcopy(pod)
    affinity = out["spec"].setdefault("affinity", {})
    together = {
        "labelSelector": {
            "matchExpressions": [{"key": JOB_KEY, "operator": "In", "values": [job_key]}]
        },
        "topologyKey": topology,
        "namespaceSelector": {},
    }
    apart = {
        "labelSelector": {
            "matchExpressions": [
                {"key": JOB_KEY, "operator": "Exists"},
                {"key": JOB_KEY, "operator": "NotIn", "values": [job_key]},
            ]
        },
        "topologyKey": topology,
        "namespaceSelector": {},
    }
    for kind, term in (("podAffinity", together), ("podAntiAffinity", apart)):
        terms = affinity.setdefault(kind, {}).setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", []
        )
        if term not in terms:
            terms.append(term)
    return out
