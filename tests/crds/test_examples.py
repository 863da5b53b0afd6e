"""Every custom object in examples/s*/ is accepted by kq's schemas without losing a field."""

from __future__ import annotations

import pytest
import yaml

from kq.crds.schema import DNS_SUBDOMAIN_PATTERN
from tests.crds.examples import (
    EXAMPLES,
    PROVREQ_FILE,
    PROVREQ_FILLED,
    UNPARSEABLE,
    Manifest,
    custom_manifests,
    example_files,
    manifests,
    relative,
    schemas,
)
from tests.crds.schema_check import apply

# The "without Kueue" ProvisioningRequest (seed 002) is a template with placeholders.
PROVREQ_LABEL = f"{PROVREQ_FILE}#1:ProvisioningRequest/PROVISIONING_REQUEST_NAME"
EXPECTED_ERRORS = {
    PROVREQ_LABEL: [
        'spec.podSets[0].count: Invalid value: "string": '
        'spec.podSets[0].count in body must be of type integer: "string"',
        'spec.podSets[0].podTemplateRef.name: Invalid value: "POD_TEMPLATE_NAME": '
        "spec.podSets[0].podTemplateRef.name in body should match "
        f"'{DNS_SUBDOMAIN_PATTERN}'",
    ]
}


def test_every_scenario_has_a_readme_and_manifests() -> None:
    for scenario in ("s1", "s2", "s3", "s4"):
        assert (EXAMPLES / scenario / "README.md").is_file()
        assert any(relative(p).startswith(scenario + "/") for p in example_files())


@pytest.mark.parametrize("manifest", custom_manifests(), ids=lambda m: m.label)
def test_custom_objects_validate_without_pruning(manifest: Manifest) -> None:
    group, version = manifest.group_version
    schema = schemas().get((group, version, manifest.body["kind"]))
    assert schema is not None, f"kq serves no {manifest.body['apiVersion']} {manifest.body['kind']}"
    applied = apply(manifest.body, schema)
    assert applied.pruned == []
    assert applied.errors == EXPECTED_ERRORS.get(manifest.label, [])


def test_the_examples_cover_every_scenario_kind() -> None:
    kinds = {(m.file.split("/")[0], m.body["kind"]) for m in custom_manifests()}
    assert {
        ("s1", "ClusterQueue"),
        ("s1", "JobSet"),
        ("s2", "ClusterQueue"),
        ("s2", "JobSet"),
        ("s3", "AdmissionCheck"),
        ("s3", "ProvisioningRequestConfig"),
        ("s3", "ProvisioningRequest"),
        ("s4", "ClusterQueue"),
        ("s4", "ResourceFlavor"),
        ("s4", "MPIJob"),
    } <= kinds


def test_reclaim_out_of_cohort_of_the_s2_manifests_is_kept() -> None:
    queues = [
        m
        for m in custom_manifests()
        if m.file.startswith("s2/") and m.body["kind"] == "ClusterQueue"
    ]
    assert len(queues) == 2
    schema = schemas()[("kueue.x-k8s.io", "v1beta1", "ClusterQueue")]
    for queue in queues:
        assert queue.body["spec"]["preemption"]["reclaimOutOfCohort"] == {
            "enable": True,
            "reclaimMoreThanNominalQuota": False,
        }
        applied = apply(queue.body, schema)
        assert (applied.pruned, applied.errors) == ([], [])
        assert applied.obj["spec"]["preemption"] == {
            "reclaimWithinCohort": "Never",
            "withinClusterQueue": "Never",
            "borrowWithinCohort": {"policy": "Never"},
            "reclaimOutOfCohort": {"enable": True, "reclaimMoreThanNominalQuota": False},
        }


def test_provisioning_request_example_validates_once_placeholders_are_filled() -> None:
    text = (EXAMPLES / PROVREQ_FILE).read_text(encoding="utf-8")
    for placeholder, value in PROVREQ_FILLED.items():
        text = text.replace(placeholder, value)
    template, request = yaml.safe_load_all(text)
    assert template["apiVersion"] == "v1"
    schema = schemas()[("autoscaling.x-k8s.io", "v1beta1", "ProvisioningRequest")]
    applied = apply(request, schema)
    assert (applied.pruned, applied.errors) == ([], [])
    assert request["spec"]["parameters"] == {"maxRunDurationSeconds": "600"}


def test_published_preemption_manifest_stays_verbatim_and_the_corrected_copy_parses() -> None:
    (broken,) = UNPARSEABLE
    with pytest.raises(yaml.YAMLError):
        list(yaml.safe_load_all((EXAMPLES / broken).read_text(encoding="utf-8")))
    corrected = [m for m in manifests() if m.file == "s1/kueue-preemption-corrected.yaml"]
    (queue,) = [m.body for m in corrected if m.body["kind"] == "ClusterQueue"]
    assert queue["spec"]["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
    }
