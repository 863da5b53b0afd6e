"""The pictures: a quota bar per flavor and resource, and the admissions timeline, as inline
SVG (no script, no fonts to load; colours are CSS classes the page defines)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from html import escape

from kq.api.quantity import format_amount
from kq.dashboard.quota import Usage
from kq.dashboard.timeline import ADMITTED, FINISHED, PREEMPTED, Lane

BAR_W, BAR_H = 260, 16
LABEL_W, ROW_H, PLOT_W, AXIS_H = 230, 20, 640, 22
TICKS = 5
MIN_SPAN_S = 30.0


def usage_words(u: Usage) -> str:
    def amount(n: int) -> str:
        return format_amount(u.resource, n)

    words = f"used {amount(u.used)} of nominal {amount(u.nominal)}"
    words += f", borrowed {amount(u.borrowed)}, lent {amount(u.lent)}"
    if u.borrowing_limit is not None:
        words += f", borrowing limit {amount(u.borrowing_limit)}"
    if u.lending_limit is not None:
        words += f", lending limit {amount(u.lending_limit)}"
    return words


def usage_bar(u: Usage) -> str:
    """Nominal quota as the track: used inside it, lent out of its idle part, borrowed past
    its end (up to the borrowing limit, drawn dashed)."""
    reach = u.nominal + (u.borrowing_limit if u.borrowing_limit is not None else u.borrowed)
    scale = BAR_W / max(reach, u.used, u.nominal, 1)
    own = min(u.used, u.nominal)
    parts = [
        _rect("idle", 0, u.nominal * scale),
        _rect("used", 0, own * scale),
        _rect("lent", own * scale, min(u.lent, u.nominal - own) * scale),
        _rect("borrowed", u.nominal * scale, u.borrowed * scale),
    ]
    if u.borrowing_limit:
        parts.append(
            f'<rect class="limit" x="{u.nominal * scale:.1f}" y="0.5" '
            f'width="{u.borrowing_limit * scale:.1f}" height="{BAR_H - 1}"/>'
        )
    parts.append(f'<line class="nominal" x1="{u.nominal * scale:.1f}" y1="0" '
                 f'x2="{u.nominal * scale:.1f}" y2="{BAR_H}"/>')  # fmt: skip
    title = escape(f"{u.flavor} {u.resource}: {usage_words(u)}")
    return (
        f'<svg class="bar" width="{BAR_W + 2}" height="{BAR_H}" role="img" '
        f'aria-label="{title}"><title>{title}</title>{"".join(parts)}</svg>'
    )


def _rect(kind: str, x: float, width: float) -> str:
    if width <= 0:
        return ""
    return f'<rect class="{kind}" x="{x:.1f}" y="0" width="{width:.1f}" height="{BAR_H}"/>'


def timeline(lanes: list[Lane], now: float) -> str:
    """One row per workload: waiting (grey) and running (green) spans between its marks,
    preemptions as red diamonds; time runs left to right up to now."""
    if not lanes:
        return '<p class="empty">No admissions or preemptions yet.</p>'
    start = min(lane.marks[0].at for lane in lanes)
    span = max(now - start, MIN_SPAN_S)
    start = now - span

    def x(at: float) -> float:
        return LABEL_W + (at - start) / span * PLOT_W

    height = AXIS_H + ROW_H * len(lanes)
    body = [_axis(start, span, height)]
    for row, lane in enumerate(lanes):
        body.append(_lane(lane, AXIS_H + row * ROW_H, now, x))
    return (
        f'<svg class="timeline" width="{LABEL_W + PLOT_W + 10}" height="{height}" role="img" '
        f'aria-label="timeline of admissions and preemptions">{"".join(body)}</svg>'
    )


def _axis(start: float, span: float, height: int) -> str:
    parts = []
    for i in range(TICKS + 1):
        at = start + span * i / TICKS
        px = LABEL_W + PLOT_W * i / TICKS
        clock = datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")
        anchor = "end" if i == TICKS else "middle"
        parts.append(f'<line class="tick" x1="{px:.1f}" y1="{AXIS_H - 4}" x2="{px:.1f}" '
                     f'y2="{height}"/><text x="{px:.1f}" y="12" text-anchor="{anchor}">'
                     f"{clock}</text>")  # fmt: skip
    return "".join(parts)


def _lane(lane: Lane, y: int, now: float, x: Callable[[float], float]) -> str:
    label = escape(lane.key)
    parts = [f'<text class="lane" x="{LABEL_W - 6}" y="{y + 14}" text-anchor="end">'
             f"<title>{label}</title>{escape(_short(lane.key))}</text>"]  # fmt: skip
    state = "waiting"
    for i, mark in enumerate(lane.marks):
        if mark.kind == FINISHED:
            state = ""
        elif mark.kind == ADMITTED:
            state = "running"
        elif mark.kind == PREEMPTED:
            state = "waiting"
        end = lane.marks[i + 1].at if i + 1 < len(lane.marks) else now
        if state:
            x0, x1 = x(mark.at), x(end)
            parts.append(f'<rect class="{state}" x="{x0:.1f}" y="{y + 4}" '
                         f'width="{max(x1 - x0, 1.5):.1f}" height="{ROW_H - 8}"/>')  # fmt: skip
    for mark in lane.marks:
        parts.append(_marker(mark.kind, x(mark.at), y, mark.message))
    return "".join(parts)


def _marker(kind: str, px: float, y: int, message: str) -> str:
    title = f"<title>{escape(kind)}: {escape(message)}</title>" if message else ""
    mid = y + ROW_H / 2
    if kind == PREEMPTED:
        points = f"{px:.1f},{mid - 6} {px + 6:.1f},{mid} {px:.1f},{mid + 6} {px - 6:.1f},{mid}"
        return f'<polygon class="preempted" points="{points}">{title}</polygon>'
    if kind == FINISHED:
        return (f'<rect class="finished" x="{px - 1.5:.1f}" y="{y + 2}" width="3" '
                f'height="{ROW_H - 4}">{title}</rect>')  # fmt: skip
    if kind == ADMITTED:
        return f'<circle class="admitted" cx="{px:.1f}" cy="{mid}" r="4">{title}</circle>'
    return ""


def _short(key: str, width: int = 32) -> str:
    return key if len(key) <= width else "…" + key[-(width - 1) :]
