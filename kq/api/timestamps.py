"""RFC 3339 timestamps as epoch seconds."""

from __future__ import annotations

from datetime import datetime


def parse_time(value: object) -> float | None:
    """Epoch seconds for an RFC 3339 string (``Z`` or offset); ``None`` when absent."""
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
