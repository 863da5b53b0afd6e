"""The queueing objects and configuration a simulation starts from, as raw API objects.

They stay raw (v1beta1 dicts) until ``kq.simulate.model`` parses them, so ``--compare`` can
merge-patch them (RFC 7386) exactly as ``kubectl patch --type merge`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kq.crds.conversion import V1BETA1, V1BETA2, ConversionError, convert, convertible
from kq.simulate.source import InputError, load_documents, where, yaml_files

Obj = dict[str, Any]
ObjectKey = tuple[str, str]
"""``(kind, name)``, ``name`` being ``namespace/name`` for namespaced kinds."""

KUEUE_KINDS = frozenset(
    {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    | {"AdmissionCheck", "Topology"}
)
OTHER_KINDS = {
    "PriorityClass": "scheduling.k8s.io/",
    "Namespace": "v1",
    "Node": "v1",
    "NodePool": "simulate.kq.dev/",
    "Budget": "kq.dev/",
}
TOPOLOGY_V1ALPHA1 = "kueue.x-k8s.io/v1alpha1"
"""Kueue served Topology in v1alpha1 before v1beta1; the two have the same fields."""
CONFIG_KIND = "Configuration"
CONFIG_GROUP = "config.kueue.x-k8s.io/"


@dataclass
class Setup:
    objects: dict[ObjectKey, Obj] = field(default_factory=dict)
    origins: dict[ObjectKey, str] = field(default_factory=dict)
    """Where each object was written (``path:line``), for error messages."""
    config: Obj | None = None
    config_origin: str = ""
    ignored: list[str] = field(default_factory=list)
    """Objects of kinds a simulation does not use (Jobs, ...), by ``path:line kind``."""


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    if obj.get("kind") == "LocalQueue":
        name = f"{meta.get('namespace') or 'default'}/{name}"
    return str(obj.get("kind", "")), name


def load_setup(paths: list[Path], config: Path | None = None) -> Setup:
    """Read every object of ``paths`` (files or directories) and the optional config file."""
    setup = Setup()
    for path in paths:
        for file in yaml_files(path):
            for document in load_documents(file):
                _add(setup, file, document)
    if config is not None:
        documents = list(load_documents(config))
        if len(documents) != 1 or not isinstance(documents[0], dict):
            raise InputError(f"{config}: a configuration file holds one YAML mapping")
        setup.config, setup.config_origin = dict(documents[0]), str(config)
    return setup


def add_objects(setup: Setup, source: str, objects: list[Obj]) -> None:
    """Objects read from elsewhere than a file (a cluster); errors name ``source``."""
    for obj in objects:
        _add(setup, Path(source), obj)


def _kind(path: Path, document: object) -> str:
    if not isinstance(document, dict):
        raise InputError(f"{where(path, document)}: a YAML document must be a mapping (an object)")
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{where(path, document)}: kind: Required value")
    return kind


def _add(setup: Setup, path: Path, document: object) -> None:
    kind = _kind(path, document)
    assert isinstance(document, dict)
    origin = where(path, document)
    if kind == "List":
        for item in document.get("items") or ():
            _add(setup, path, item)
        return
    api_version = str(document.get("apiVersion", ""))
    if kind == CONFIG_KIND and api_version.startswith(CONFIG_GROUP):
        if setup.config is not None:
            raise InputError(f"{origin}: a second Configuration (first: {setup.config_origin})")
        setup.config, setup.config_origin = dict(document), origin
        return
    obj = _as_v1beta1(path, document, kind)
    if obj is None:
        setup.ignored.append(f"{origin} {kind}")
        return
    key = object_key(obj)
    if not key[1] or key[1].endswith("/"):
        raise InputError(
            f"{where(path, document.get('metadata'), 'name')}: metadata.name: Required"
        )
    if key in setup.objects:
        raise InputError(f"{origin}: {kind} {key[1]} defined twice (first: {setup.origins[key]})")
    setup.objects[key] = obj
    setup.origins[key] = origin


def _as_v1beta1(path: Path, document: Obj, kind: str) -> Obj | None:
    """The object in v1beta1 (what kq's parsers read), or ``None`` if not used here."""
    api_version = str(document.get("apiVersion", ""))
    if kind in OTHER_KINDS:
        return document if api_version.startswith(OTHER_KINDS[kind]) else None
    if kind not in KUEUE_KINDS or not api_version.startswith("kueue.x-k8s.io/"):
        return None
    if api_version == V1BETA1 or (kind == "Topology" and api_version == TOPOLOGY_V1ALPHA1):
        return document
    if api_version != V1BETA2 or not convertible("kueue.x-k8s.io", kind):
        raise InputError(
            f"{where(path, document, 'apiVersion')}: apiVersion: {api_version!r} is not "
            f"{V1BETA1} or {V1BETA2}"
        )
    try:
        return convert(document, V1BETA1)
    except (ConversionError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where(path, document)}: cannot convert {kind}: {exc}") from exc


# -- --compare: patches ------------------------------------------------------------------------


def merge_patch(target: object, patch: object) -> Any:
    """RFC 7386 JSON merge patch: mappings merge, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out: Obj = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def patched(base: Setup, patch_file: Path) -> Setup:
    """``base`` with every document of ``patch_file`` merged in: a Configuration onto the
    configuration, any other object onto the object of the same kind and name (or added)."""
    out = Setup(dict(base.objects), dict(base.origins), base.config, base.config_origin)
    out.ignored = list(base.ignored)
    for document in load_documents(patch_file):
        kind = _kind(patch_file, document)
        assert isinstance(document, dict)
        origin = where(patch_file, document)
        if kind == CONFIG_KIND:
            out.config = merge_patch(out.config or {}, document)
            out.config_origin = origin
            continue
        _patch_object(out, patch_file, document, kind, origin)
    return out


def _patch_object(out: Setup, path: Path, document: Obj, kind: str, origin: str) -> None:
    api_version = str(document.get("apiVersion") or V1BETA1)
    key = object_key(document)
    current = out.objects.get(key)
    if current is None:
        merged = _as_v1beta1(path, {**document, "apiVersion": api_version}, kind)
        if merged is None:
            raise InputError(f"{origin}: {kind} is not a queueing object kq simulate reads")
    elif api_version == V1BETA2 and kind in KUEUE_KINDS:
        # Patch in the patch's own version, so its field names mean what its author meant.
        try:
            merged = convert(merge_patch(convert(current, V1BETA2), document), V1BETA1)
        except (ConversionError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{origin}: cannot apply this {kind} patch: {exc}") from exc
    else:
        merged = merge_patch(current, {**document, "apiVersion": current.get("apiVersion")})
    out.objects[key] = merged
    out.origins[key] = origin
