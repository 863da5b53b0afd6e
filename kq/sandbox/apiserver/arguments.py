"""What a request asks for, read and checked: booleans, selectors, write options, bodies (JSON,
YAML or protobuf), delete options, table output, and the revision a read must see."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from kq.sandbox.apiserver import errors, limits, protobuf, protobuf_auth
from kq.sandbox.apiserver.authn import ADMIN
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.fields import field_map, supported
from kq.sandbox.apiserver.patching import APPLY
from kq.sandbox.apiserver.rbac import User
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from kq.sandbox.apiserver.store import Change, Store
from kq.sandbox.apiserver.watch import Filter

TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_VALIDATION = {"Strict", "Warn", "Ignore"}
USER = web.RequestKey("kq.user", User)  # who made the request, set by the middleware


@dataclass(frozen=True)
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str


def parse_bool(value: str | None, name: str) -> bool:
    """Go's ``strconv.ParseBool``; clients such as kubernetes_asyncio send ``True``."""
    if value is None or value == "":
        return False
    if value in TRUE:
        return True
    if value in _FALSE:
        return False
    raise errors.bad_request(f'invalid boolean value for {name}: "{value}"')


def list_filter(request: web.Request, target: Target) -> Filter:
    query = request.query
    try:
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""))
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from exc
    allowed = set(supported(target.rt))
    for name in fields.fields():
        if name not in allowed:
            raise errors.bad_request(f"field label not supported: {name}")
    return Filter(target.namespace, labels, fields, field_map(target.rt))


def write_ctx(request: web.Request) -> Ctx:
    query = request.query
    dry = query.getall("dryRun", [])
    if any(d != "All" for d in dry):
        raise errors.bad_request(f"Invalid dry run value: {dry}")
    validation = query.get("fieldValidation", "Warn")
    if validation not in _VALIDATION:
        raise errors.bad_request(f"fieldValidation parameter unsupported: {validation}")
    user: User = request.get(USER, ADMIN)
    return Ctx(
        user=user.info(),
        dry_run=bool(dry),
        manager=query.get("fieldManager") or None,
        validation=validation,
        force=parse_bool(query.get("force"), "force"),
    )


async def read_body(
    request: web.Request, kind: str = "", json_types: tuple[str, ...] = limits.JSON_TYPES
) -> Any:
    kind = kind or "Status"
    raw = await limits.read_body(request)
    media = limits.body_type(request)
    if media == limits.PROTOBUF:
        try:
            return protobuf_auth.decode(raw)
        except protobuf.ProtobufError as exc:
            raise errors.unsupported_media(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: application/json, application/yaml ({exc})"
            ) from exc
    if media in limits.YAML_TYPES:
        return load_yaml(raw, kind)
    if media not in json_types:
        raise limits.unsupported_body()
    limits.check_json_depth(raw, kind)
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise errors.bad_request(f"Object 'Kind' is missing in '{raw[:100]!r}': {exc}") from exc


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept


def table_include(request: web.Request) -> str:
    include = request.query.get("includeObject", "Metadata") or "Metadata"
    if include not in ("Metadata", "Object", "None"):
        raise errors.bad_request(f"includeObject: unsupported value {include!r}")
    return include


async def delete_options(request: web.Request) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.can_read_body:
        body = await read_body(request, "DeleteOptions")
        if isinstance(body, dict):
            options.update(body)
    query = request.query
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    grace = limits.parse_int(query, "gracePeriodSeconds")
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if "orphanDependents" in query:
        options["orphanDependents"] = parse_bool(query["orphanDependents"], "orphanDependents")
    return options


async def reach_version(store: Store, request: web.Request) -> None:
    """Wait, as kube-apiserver's watch cache does, up to 3 s for a revision not yet reached."""
    requested = limits.parse_resource_version(request.query.get("resourceVersion", ""))
    if requested is None or requested <= store.rv:
        return
    reached = asyncio.Event()

    def seen(change: Change) -> None:
        if change.rv >= requested:
            reached.set()

    store.listeners.append(seen)
    try:
        async with asyncio.timeout(3):
            await reached.wait()
    except TimeoutError as exc:
        raise limits.too_large_version(requested, store.rv) from exc
    finally:
        store.listeners.remove(seen)


def load_yaml(raw: bytes, kind: str) -> Any:
    try:
        value = yaml.safe_load(raw)
    except RecursionError as exc:
        raise limits.yaml_too_deep(kind, raw) from exc
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc
    limits.check_depth(value, kind, raw)
    return value


def check_patch_depth(raw: bytes, content_type: str, kind: str) -> None:
    if content_type != APPLY or raw.lstrip()[:1] in (b"{", b"["):
        limits.check_json_depth(raw, kind)
    else:
        load_yaml(raw, kind)
