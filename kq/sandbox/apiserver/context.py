"""A request's write options and the warnings collected while serving it; the admission
chain's signature; the server's clock as Kubernetes writes it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Ctx:
    """Per-request write options and the warnings collected while serving it."""

    dry_run: bool = False
    manager: str | None = None
    validation: str = "Warn"
    force: bool = False
    subresource: str = ""
    warnings: list[str] = field(default_factory=list)
    # Who asks (a UserInfo), for admission webhooks; None: the server itself.
    user: dict[str, Any] | None = None


Admission = Callable[[str, ResourceType, Obj, Obj | None, Ctx], Awaitable[Obj]]
