"""CustomResourceDefinitions kq serves and installs, built from Python so they cannot drift."""

from __future__ import annotations

from typing import Any

from kq.crds import autoscaling, budgets, jobset, kubeflow, kueue, lws, ray


def crds_by_group() -> dict[str, list[dict[str, Any]]]:
    """Every CRD, grouped by API group, in a fixed order."""
    return {
        kueue.GROUP: kueue.crds(),
        jobset.GROUP: jobset.crds(),
        ray.GROUP: ray.crds(),
        kubeflow.GROUP: kubeflow.crds(),
        autoscaling.GROUP: autoscaling.crds(),
        lws.GROUP: lws.crds(),
        budgets.GROUP: budgets.crds(),
    }


def builtin_crds() -> list[dict[str, Any]]:
    """Every CRD the embedded API server loads at start (Kueue's kinds and the job kinds)."""
    return [crd for group in crds_by_group().values() for crd in group]
