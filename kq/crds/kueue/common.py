"""What every kueue.x-k8s.io kind shares: the group, version and categories, and the
schemas of quotas, usage, fair sharing and stop policies the queues and cohorts repeat."""

from __future__ import annotations

from typing import Any

from kq.crds.schema import (
    PrinterColumn,
    Schema,
    Version,
    array,
    crd,
    date_time,
    dns_subdomain,
    integer,
    map_of,
    obj,
    quantity,
    string,
)

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta1"
CATEGORIES = ("kueue",)

STOP_POLICY = ("None", "Hold", "HoldAndDrain")


def kueue_crd(
    kind: str,
    plural: str,
    *,
    namespaced: bool,
    short_names: tuple[str, ...],
    spec: Schema | None,
    status: Schema | None = None,
    columns: tuple[PrinterColumn, ...] = (),
    top_level: dict[str, Schema] | None = None,
    required: tuple[str, ...] = (),
) -> dict[str, Any]:
    version = Version(
        VERSION,
        spec,
        status,
        printer_columns=columns,
        top_level=top_level or {},
        required=required,
    )
    return crd(
        group=GROUP,
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        versions=[version],
        short_names=short_names,
        categories=CATEGORIES,
    )


def stop_policy(what: str) -> Schema:
    return string(
        enum=STOP_POLICY,
        default="None",
        description=f"Hold stops admitting new workloads to this {what}; HoldAndDrain also "
        "evicts the admitted ones.",
    )


def fair_sharing() -> Schema:
    return obj(
        {
            "weight": quantity(
                default=1,
                description="Share weight relative to siblings; 0 means an infinite share.",
            )
        },
        description="Fair-sharing parameters of this node of the cohort tree.",
    )


def fair_sharing_status() -> Schema:
    return obj(
        {
            "weightedShare": integer(
                fmt="int64",
                description="Share of the most-borrowed resource above nominal quota, per 1000, "
                "divided by the weight.",
            ),
            "admissionFairSharingStatus": obj(
                {
                    "consumedResources": map_of(quantity()),
                    "lastUpdate": date_time(),
                },
                required=("consumedResources", "lastUpdate"),
            ),
        },
        required=("weightedShare",),
    )


def resource_groups(owner: str) -> Schema:
    resource = obj(
        {
            "name": string(description="Resource name, matching coveredResources by position."),
            "nominalQuota": quantity(description="Quantity guaranteed to this " + owner + "."),
            "borrowingLimit": quantity(
                description="Most that may be borrowed from the cohort; unset means no limit. "
                "Needs a cohort."
            ),
            "lendingLimit": quantity(
                description="Most of the nominal quota that may be lent to the cohort; unset "
                "means all of it. Needs a cohort."
            ),
        },
        required=("name", "nominalQuota"),
    )
    flavor = obj(
        {
            "name": dns_subdomain(description="ResourceFlavor name."),
            "resources": array(resource, map_keys=("name",), min_items=1, max_items=64),
        },
        required=("name", "resources"),
    )
    group = obj(
        {
            "coveredResources": array(
                string(),
                min_items=1,
                max_items=64,
                description="Resources this group covers; a resource belongs to one group only. "
                "Upstream Kueue requires this list; kq also accepts manifests that omit it "
                "(GKE's documented examples do) and takes the resources named under the "
                "flavors instead.",
            ),
            "flavors": array(
                flavor,
                map_keys=("name",),
                min_items=1,
                max_items=64,
                description="Flavors in order of preference.",
            ),
        },
        required=("flavors",),
    )
    return array(group, list_type="atomic", max_items=16, description="Quota per flavor.")


def usage(*, borrowed: bool) -> Schema:
    resource_fields: dict[str, Schema] = {
        "name": string(),
        "total": quantity(description="Total quantity used."),
    }
    if borrowed:
        resource_fields["borrowed"] = quantity(description="Quantity above the nominal quota.")
    flavor = obj(
        {
            "name": dns_subdomain(),
            "resources": array(
                obj(resource_fields, required=("name",)), map_keys=("name",), max_items=64
            ),
        },
        required=("name", "resources"),
    )
    return array(flavor, map_keys=("name",), max_items=64)
