"""AdmissionCheck: a named check whose ``Active`` condition gates the ClusterQueues using it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kq.api.conditions import is_true, parse_conditions


@dataclass(frozen=True, slots=True)
class AdmissionCheck:
    name: str
    controller_name: str
    active: bool


def parse_admission_check(obj: Mapping[str, Any]) -> AdmissionCheck:
    status = obj.get("status") or {}
    return AdmissionCheck(
        name=str((obj.get("metadata") or {}).get("name", "")),
        controller_name=str((obj.get("spec") or {}).get("controllerName", "")),
        active=is_true(parse_conditions(status.get("conditions")), "Active"),
    )
