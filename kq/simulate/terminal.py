"""The terminal side: a progress line while simulating and the summary tables after."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from kq.simulate.svg import clock


def progress_line(stream: TextIO, label: str) -> Any:
    """A ``Progress`` callback rewriting one line (only worth it on a terminal)."""

    def show(done: int, total: int, now: float) -> None:
        percent = 100 * done / total if total else 100
        stream.write(f"\r{label}: {done}/{total} workloads done ({percent:.0f}%), t={clock(now)}")
        stream.flush()

    return show


def end_progress(stream: TextIO) -> None:
    stream.write("\r\033[K")
    stream.flush()


def _wait(value: float | None) -> str:
    return "-" if value is None else clock(value)


def _usage(node: dict[str, Any]) -> str:
    """Mean usage over nominal quota per resource, all flavors together."""
    used: dict[str, float] = {}
    nominal: dict[str, float] = {}
    for fr, figures in node["resources"].items():
        resource = fr.split("/", 1)[1]
        used[resource] = used.get(resource, 0) + figures["meanUsed"]
        nominal[resource] = nominal.get(resource, 0) + figures["nominal"]
    parts = [f"{r} {100 * used[r] / nominal[r]:.0f}%" for r in sorted(used) if nominal[r]]
    return " ".join(parts) or "-"


HEADER = ("", "workloads", "admitted", "pending", "wait p50", "p90", "max", "preempted", "usage")


def rows(data: dict[str, Any]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for group, prefix in (("clusterQueues", ""), ("cohorts", "cohort ")):
        for name, node in data[group].items():
            wait = node["waitSeconds"]
            out.append(
                (
                    prefix + name,
                    str(node["workloads"]),
                    str(node["admitted"]),
                    str(node["pendingAtEnd"]),
                    _wait(wait["p50"]),
                    _wait(wait["p90"]),
                    _wait(wait["max"]),
                    str(node["preemptions"]),
                    _usage(node),
                )
            )
    return out


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]
    lines = []
    for row in (header, *body):
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def summary(data: dict[str, Any]) -> str:
    head = (
        f"{data['label']}: {len(data['workloads'])} workloads, virtual time "
        f"{clock(data['virtualEndSeconds'])}, {data['cycles']} cycles "
        f"in {data['wallSeconds']:.2f} s"
    )
    return head + "\n" + table(HEADER, rows(data))


def comparison_rows(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, ...]]:
    """Per queue and cohort in both runs, each figure as ``A -> B`` where they differ."""
    other = {r[0]: r for r in rows(b)}
    return [
        (
            r[0],
            *(x if x == y else f"{x} -> {y}" for x, y in zip(r[1:], other[r[0]][1:], strict=True)),
        )
        for r in rows(a)
        if r[0] in other
    ]


def comparison(a: dict[str, Any], b: dict[str, Any]) -> str:
    return f"{a['label']} -> {b['label']}\n" + table(HEADER, comparison_rows(a, b))


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()
