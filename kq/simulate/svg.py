"""Charts as SVG text, written here (no plotting library, no JavaScript): step curves over
virtual time and a timeline of admissions. Every curve is a ``<g class="series"
data-series="NAME">`` so a reader (or a test) can find it by name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)  # fmt: skip
WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 28, 34
MAX_POINTS = 800
"""Per curve: more points than pixels only make the file bigger (peaks are kept)."""
MAX_BARS = 4000


@dataclass(frozen=True, slots=True)
class Curve:
    name: str
    times: Sequence[float]
    values: Sequence[float]


@dataclass(frozen=True, slots=True)
class Bar:
    start: float
    end: float
    label: str
    evicted: bool


def clock(seconds: float) -> str:
    """A virtual duration or instant: ``2h05m``, ``36m23s`` or ``8s``."""
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _nice(top: float) -> float:
    """A round upper bound for an axis (1, 2 or 5 times a power of ten)."""
    if top <= 0:
        return 1.0
    scale = 10.0 ** (len(str(int(top))) - 1)
    for step in (1, 2, 5, 10):
        if top <= step * scale:
            return step * scale
    return 10 * scale


class _Frame:
    """Maps virtual time and values to pixels inside the plot area."""

    def __init__(self, start: float, end: float, top: float, height: int = HEIGHT) -> None:
        self.start, self.end = start, max(end, start + 1)
        self.top, self.height = top, height

    def x(self, t: float) -> float:
        return LEFT + (t - self.start) / (self.end - self.start) * (WIDTH - LEFT - RIGHT)

    def y(self, v: float) -> float:
        return self.height - BOTTOM - v / self.top * (self.height - TOP - BOTTOM)

    def axes(self, title: str, y_label: str, y_ticks: bool = True) -> list[str]:
        bottom, right = self.height - BOTTOM, WIDTH - RIGHT
        out = [
            f'<text x="{LEFT}" y="16" class="title">{escape(title)}</text>',
            f'<line x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/>',
            f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" class="axis"/>',
        ]
        for i in range(5):
            t = self.start + (self.end - self.start) * i / 4
            out.append(
                f'<text x="{self.x(t):.1f}" y="{bottom + 16}" class="tick">{clock(t)}</text>'
            )
        if y_ticks:
            for i in range(5):
                v = self.top * i / 4
                out.append(
                    f'<text x="{LEFT - 6}" y="{self.y(v) + 4:.1f}" class="tick y">{v:g}</text>'
                )
        out.append(f'<text x="8" y="{TOP - 8}" class="tick">{escape(y_label)}</text>')
        return out


def _thinned(curve: Curve, frame: _Frame) -> list[tuple[float, float]]:
    """The curve's points, at most one per pixel column (the highest), so peaks survive."""
    points = list(zip(curve.times, curve.values, strict=True))
    if len(points) <= MAX_POINTS:
        return points
    columns: dict[int, tuple[float, float]] = {}
    for t, v in points:
        column = int(frame.x(t))
        kept = columns.get(column)
        if kept is None or v > kept[1]:
            columns[column] = (kept[0] if kept else t, v)
    return sorted(columns.values())


def _step_path(points: list[tuple[float, float]], frame: _Frame) -> str:
    parts, last = [], None
    for i, (t, v) in enumerate(points):
        if v == last:
            continue  # samples are taken when any queue changed; this curve did not
        x, y = frame.x(t), frame.y(v)
        parts.append(f"M{x:.1f},{y:.1f}" if i == 0 else f"H{x:.1f}V{y:.1f}")
        last = v
    parts.append(f"H{frame.x(frame.end):.1f}")
    return "".join(parts)


def step_chart(
    title: str, curves: Sequence[Curve], start: float, end: float, y_label: str, top: float = 0
) -> str:
    """Step curves (a value holds until the next point) over ``[start, end]``."""
    highest = max((max(c.values, default=0) for c in curves), default=0)
    frame = _Frame(start, end, _nice(max(top, highest)))
    out = frame.axes(title, y_label)
    for i, curve in enumerate(curves):
        color = PALETTE[i % len(PALETTE)]
        path = _step_path(_thinned(curve, frame), frame) if curve.times else ""
        legend_y = TOP + 14 * i
        out.append(
            f'<g class="series" data-series="{escape(curve.name)}">'
            f'<path d="{path}" stroke="{color}" fill="none" stroke-width="1.5"/>'
            f'<rect x="{WIDTH - RIGHT + 10}" y="{legend_y - 8}" width="10" height="10" '
            f'fill="{color}"/><text x="{WIDTH - RIGHT + 24}" y="{legend_y + 1}" class="legend">'
            f"{escape(curve.name)}</text></g>"
        )
    return _svg(out, HEIGHT)


def _lanes(bars: Sequence[Bar]) -> list[int]:
    """First-fit lane of each bar (by start time) so overlapping admissions do not overlap."""
    ends: list[float] = []
    lanes = []
    for bar in bars:
        for lane, busy_until in enumerate(ends):
            if busy_until <= bar.start:
                ends[lane] = bar.end
                lanes.append(lane)
                break
        else:
            ends.append(bar.end)
            lanes.append(len(ends) - 1)
    return lanes


def timeline(title: str, rows: dict[str, list[Bar]], start: float, end: float) -> str:
    """One band per ClusterQueue; each admission is a bar, red where it ended in eviction."""
    band, gap = 60, 14
    height = TOP + BOTTOM + len(rows) * (band + gap)
    frame = _Frame(start, end, 1.0, height)
    out = frame.axes(title, "admitted workloads", y_ticks=False)
    shown = 0
    for row, (name, bars) in enumerate(rows.items()):
        ordered = sorted(bars, key=lambda b: (b.start, b.end))[: max(0, MAX_BARS - shown)]
        shown += len(ordered)
        lanes = _lanes(ordered)
        lane_height = band / max(1, max(lanes, default=0) + 1)
        top = TOP + row * (band + gap)
        out.append(f'<g class="series" data-series="{escape(name)}">')
        out.append(f'<text x="{WIDTH - RIGHT + 10}" y="{top + band / 2 + 4}" class="legend">')
        out.append(f"{escape(name)}</text>")
        for bar, lane in zip(ordered, lanes, strict=True):
            x = frame.x(bar.start)
            w = max(1.0, frame.x(bar.end) - x)
            css = "bar evicted" if bar.evicted else "bar"
            out.append(
                f'<rect x="{x:.1f}" y="{top + lane * lane_height:.1f}" width="{w:.1f}" '
                f'height="{max(1.0, lane_height - 1):.1f}" class="{css}">'
                f"<title>{escape(bar.label)}</title></rect>"
            )
        out.append("</g>")
    return _svg(out, height)


_STYLE = (
    "<style>.title{font:bold 13px sans-serif}.tick{font:10px sans-serif;fill:#444}"
    ".tick.y{text-anchor:end}.legend{font:11px sans-serif}.axis{stroke:#888}"
    ".bar{fill:#4c78a8}.bar.evicted{fill:#d62728}</style>"
)


def _svg(body: list[str], height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}">{_STYLE}' + "".join(body) + "</svg>"
    )
