"""ResourceFlavor and Topology: the nodes a quota is tied to."""

from __future__ import annotations

from typing import Any

from kq.crds.core import taint, toleration
from kq.crds.kueue.common import kueue_crd
from kq.crds.schema import array, dns_subdomain, obj, string, string_map


def resource_flavor() -> dict[str, Any]:
    """ResourceFlavor: node labels/taints/tolerations a quota is tied to."""
    spec = obj(
        {
            "nodeLabels": string_map(
                max_properties=8,
                atomic=True,
                description="Labels injected as nodeSelector into admitted pods.",
            ),
            "nodeTaints": array(
                taint(),
                list_type="atomic",
                max_items=8,
                description="Taints of these nodes; only workloads tolerating them get the flavor.",
            ),
            "tolerations": array(
                toleration(),
                list_type="atomic",
                max_items=8,
                description="Tolerations added to admitted pods.",
            ),
            "topologyName": dns_subdomain(description="Topology for topology-aware scheduling."),
        }
    )
    return kueue_crd(
        "ResourceFlavor",
        "resourceflavors",
        namespaced=False,
        short_names=("flavor", "flavors", "rf"),
        spec=spec,
    )


def topology() -> dict[str, Any]:
    """Topology: ordered node-label levels for topology-aware scheduling."""
    spec = obj(
        {
            "levels": array(
                obj({"nodeLabel": string(min_length=1, max_length=316)}, required=("nodeLabel",)),
                list_type="atomic",
                min_items=1,
                max_items=16,
                description="Node labels from the widest domain to the narrowest.",
            )
        },
        required=("levels",),
    )
    return kueue_crd("Topology", "topologies", namespaced=False, short_names=("topo",), spec=spec)
