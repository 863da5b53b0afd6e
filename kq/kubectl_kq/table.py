"""kubectl's table output: upper-case headers, columns three spaces apart, kubectl's ages."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

Row = Sequence[object]


def render(headers: Sequence[str], rows: Sequence[Row], no_headers: bool = False) -> str:
    if not rows:
        return ""
    cells = [[str(c) for c in row] for row in rows]
    if not no_headers:
        cells.insert(0, [h.upper() for h in headers])
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + "\n"


def parse_time(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def age(stamp: str | None, now: float | None = None) -> str:
    start = parse_time(stamp)
    if start is None:
        return "<unknown>"
    return human_duration((now if now is not None else time.time()) - start)


def human_duration(seconds: float) -> str:
    """apimachinery's ``HumanDuration``: coarser as durations grow."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        days = h // 24 - 365 * (h // (24 * 365))
        return f"{h // (24 * 365)}y{days}d" if days else f"{h // (24 * 365)}y"
    return f"{h // (24 * 365)}y"
