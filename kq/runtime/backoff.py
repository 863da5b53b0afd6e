"""Jittered exponential backoff and Retry-After parsing, shared by requests and watches."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass
class Backoff:
    """Delays growing ``factor``-fold from ``initial`` to ``cap``, each with up to 50 % jitter."""

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    attempt: int = 0

    def next(self, retry_after: float | None = None) -> float:
        """The next delay; a server's Retry-After wins when it asks for longer."""
        base = min(self.cap, self.initial * self.factor**self.attempt)
        self.attempt += 1
        delay = base * (1 + random.random() / 2)
        return max(delay, retry_after) if retry_after is not None else delay

    def reset(self) -> None:
        self.attempt = 0


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; the API server only sends the delta-seconds form."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds)
