"""Fault injection for tests: delayed responses, 5xx/429 errors, dropped watches."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any


@dataclass
class Faults:
    """What to inject into requests whose path matches ``match``."""

    delay: float = 0.0
    error_rate: float = 0.0
    error_code: int = 500
    match: str = ""
    watch_only: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Faults:
        return cls(
            delay=float(data.get("delay", 0.0)),
            error_rate=float(data.get("errorRate", 0.0)),
            error_code=int(data.get("errorCode", 500)),
            match=str(data.get("match", "")),
            watch_only=bool(data.get("watchOnly", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "delay": self.delay,
            "errorRate": self.error_rate,
            "errorCode": self.error_code,
            "match": self.match,
            "watchOnly": self.watch_only,
        }

    def applies(self, path: str, watch: bool) -> bool:
        if path.startswith("/kq/") or (self.watch_only and not watch):
            return False
        return not self.match or re.search(self.match, path) is not None

    def should_fail(self) -> bool:
        return self.error_rate > 0 and random.random() < self.error_rate
