"""The scenario manifests under examples/s*/ and the CRD schema each custom object targets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kq.crds import builtin_crds

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SCENARIOS = ("s1", "s2", "s3", "s4")

# Published manifests kept verbatim although they are not valid YAML (see the folder README).
UNPARSEABLE = {"s1/kueue-preemption.yaml"}

# The "without Kueue" ProvisioningRequest (seed 002) is a template with placeholders.
PROVREQ_FILE = "s3/provisioning-request.yaml"
# The substitutions examples/s3/README.md tells users to make before applying it.
PROVREQ_FILLED = {
    "apiVersion: v10\n": "apiVersion: v1\n",
    "POD_TEMPLATE_NAME": "my-template",
    "NAMESPACE_NAME": "default",
    "NODEPOOL_NAME": "my-pool",
    "PROVISIONING_REQUEST_NAME": "my-request",
    "MAX_RUN_DURATION_SECONDS": "600",
    "COUNT": "1",
}


@dataclass(frozen=True)
class Manifest:
    """One YAML document of an example file."""

    file: str
    index: int
    body: dict[str, Any]

    @property
    def group_version(self) -> tuple[str, str]:
        """(API group, version); the core group is ""."""
        group, _, version = str(self.body["apiVersion"]).rpartition("/")
        return group, version

    @property
    def label(self) -> str:
        """A test id: file, document index, kind and name."""
        return f"{self.file}#{self.index}:{self.body['kind']}/{self.body['metadata']['name']}"


def example_files() -> list[Path]:
    """Every YAML file of the scenario folders."""
    return sorted(p for s in SCENARIOS for p in (EXAMPLES / s).rglob("*.yaml"))


def relative(path: Path) -> str:
    """The path below examples/, as written in labels and README files."""
    return path.relative_to(EXAMPLES).as_posix()


def manifests() -> list[Manifest]:
    """Every document of every parseable example file."""
    found: list[Manifest] = []
    for path in example_files():
        if relative(path) in UNPARSEABLE:
            continue
        docs = yaml.safe_load_all(path.read_text(encoding="utf-8"))
        found.extend(
            Manifest(relative(path), i, doc) for i, doc in enumerate(docs) if doc is not None
        )
    return found


def schemas() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(group, version, kind) to the openAPIV3Schema kq serves."""
    table = {}
    for crd in builtin_crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            key = (spec["group"], version["name"], spec["names"]["kind"])
            table[key] = version["schema"]["openAPIV3Schema"]
    return table


def custom_manifests() -> list[Manifest]:
    """The example documents whose API group is one kq defines."""
    groups = {group for group, _, _ in schemas()}
    return [m for m in manifests() if m.group_version[0] in groups]
