"""The page: server-rendered HTML, so it reads without JavaScript; a small script replaces
``<main>`` with ``fragment`` every few seconds, the same HTML drawn again, so there is one
renderer and no build step."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from html import escape
from urllib.parse import quote

from kq.dashboard import page_assets
from kq.dashboard.model import PENDING_SHOWN, Explanation, LocalQueueRow, Pending, View, WorkloadRow
from kq.dashboard.quota import NO_COHORT, CohortNode, QueueNode, Usage
from kq.dashboard.svg import timeline, usage_bar, usage_words

POLL_MS = 3000
WORKLOADS_SHOWN = 300
"""Rows of the workloads table: pending first, so a big cluster's page stays readable."""


def page(view: View, selected: str | None) -> str:
    clock = datetime.fromtimestamp(view.now, UTC).strftime("%H:%M:%S UTC")
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>kq dashboard</title><style>{page_assets.CSS}</style></head><body>"
        '<header><h1>kq</h1><span class="sub">queues, quota and admissions (read-only)</span>'
        f'<span id="live" class="ok">drawn at {clock}</span></header>'
        f'<main id="main">{fragment(view, selected)}</main>'
        f"<script>{page_assets.script(POLL_MS)}</script></body></html>"
    )


def fragment(view: View, selected: str | None) -> str:
    parts = [_problems(view.problems)]
    if selected:
        parts.append(_explanation(view.explanation, selected))
    parts += [
        _section("cohorts", "Cohorts and quota", _legend() + _tree(view.cohorts)),
        _section("queues", "ClusterQueues: pending, in queue order", _pending(view)),
        _section("localqueues", "LocalQueues", _local_queues(view)),
        _section("timeline", "Admissions and preemptions", _timeline(view)),
        _section("workloads", "Workloads", _workloads(view.workloads)),
    ]
    return "".join(parts)


def _timeline(view: View) -> str:
    return _timeline_legend() + timeline(view.lanes, view.now)


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{escape(title)}</h2>{body}</section>'


def _problems(problems: list[str]) -> str:
    if not problems:
        return ""
    items = "".join(f"<li>{escape(p)}</li>" for p in problems)
    return f'<section id="problems" class="problems"><ul>{items}</ul></section>'


def _link(key: str) -> str:
    return f'<a href="?workload={quote(key, safe="")}">{escape(key)}</a>'


def _explanation(found: Explanation | None, key: str) -> str:
    close = '<a class="close" href="?">close</a>'
    if found is None or found.problem:
        words = found.problem if found is not None else "no explanation"
        body = f'<p class="problem">{escape(words)}</p>'
    else:
        text = escape("\n".join(found.lines))
        body = f'<p class="state">{escape(found.state)}</p><pre>{text}</pre>'
    return _section("explanation", f"Why: {key}", close + body)


def _legend() -> str:
    keys = (("used", "used (own quota)"), ("lent", "lent to the cohort (estimate)"),
            ("idle", "idle"), ("borrowed", "borrowed"), ("limit", "borrowing limit"))  # fmt: skip
    items = "".join(f'<span class="key"><i class="{k}"></i>{escape(w)}</span>' for k, w in keys)
    return f'<p class="legend">{items}</p>'


def _timeline_legend() -> str:
    keys = (("waiting", "waiting"), ("running", "admitted"), ("preempted", "preempted"),
            ("finished", "finished"))  # fmt: skip
    items = "".join(f'<span class="key"><i class="{k}"></i>{escape(w)}</span>' for k, w in keys)
    return f'<p class="legend">{items}</p>'


def _tree(roots: list[CohortNode]) -> str:
    if not roots:
        return '<p class="empty">No ClusterQueues.</p>'
    return f'<ul class="tree">{"".join(_cohort(node) for node in roots)}</ul>'


def _cohort(node: CohortNode) -> str:
    title = "no cohort" if node.name == NO_COHORT else f"cohort {node.name}"
    own = _usage_table(node.quota) if node.quota else ""
    children = "".join(_cohort(child) for child in node.cohorts)
    queues = "".join(_queue(queue) for queue in node.queues)
    return (
        f'<li class="cohort" data-cohort="{escape(node.name)}"><span class="name">'
        f"{escape(title)}</span>{own}<ul>{children}{queues}</ul></li>"
    )


def _queue(queue: QueueNode) -> str:
    note = f' <span class="problem">{escape(queue.problem)}</span>' if queue.problem else ""
    head = (
        f'<span class="name">ClusterQueue {escape(queue.name)}</span> '
        f'<span class="meta">{escape(queue.strategy)}, {queue.pending} pending, '
        f"{queue.admitted} admitted</span>{note}"
    )
    return f'<li class="cq" data-cq="{escape(queue.name)}">{head}{_usage_table(queue.usage)}</li>'


def _usage_table(rows: Iterable[Usage]) -> str:
    lines = []
    for u in rows:
        lines.append(
            f"<tr><td>{escape(u.flavor)}</td><td>{escape(u.resource)}</td>"
            f'<td>{usage_bar(u)}</td><td class="words">{escape(usage_words(u))}</td></tr>'
        )
    if not lines:
        return ""
    return '<table class="usage"><tr><th>flavor</th><th>resource</th><th></th><th></th></tr>' + (
        "".join(lines) + "</table>"
    )


def _pending(view: View) -> str:
    names = sorted(view.pending)
    if not names:
        return '<p class="empty">No pending positions to show.</p>'
    return "".join(_pending_table(name, view.pending[name]) for name in names)


def _pending_table(name: str, items: list[Pending]) -> str:
    head = f'<h3 data-cq="{escape(name)}">ClusterQueue {escape(name)}</h3>'
    if not items:
        return head + '<p class="empty">nothing pending</p>'
    rows = "".join(
        f"<tr><td>{p.in_cluster_queue + 1}</td><td>{_link(f'{p.namespace}/{p.name}')}</td>"
        f"<td>{escape(p.local_queue)}</td><td>{p.in_local_queue + 1}</td><td>{p.priority}</td></tr>"
        for p in items
    )
    if len(items) >= PENDING_SHOWN:
        head += f'<p class="empty">the first {PENDING_SHOWN} shown</p>'
    return head + (
        '<table class="pending"><tr><th>position</th><th>workload</th><th>LocalQueue</th>'
        f"<th>position in LocalQueue</th><th>priority</th></tr>{rows}</table>"
    )


def _local_queues(view: View) -> str:
    if not view.local_queues:
        return '<p class="empty">No LocalQueues.</p>'
    rows = "".join(_local_queue_row(lq, view.pending.get(lq.cluster_queue, []))
                   for lq in view.local_queues)  # fmt: skip
    return (
        '<table class="localqueues"><tr><th>LocalQueue</th><th>ClusterQueue</th>'
        f"<th>pending</th><th>admitted</th><th>pending, in order</th></tr>{rows}</table>"
    )


def _local_queue_row(lq: LocalQueueRow, pending: list[Pending]) -> str:
    mine = [p for p in pending if p.namespace == lq.namespace and p.local_queue == lq.name]
    order = ", ".join(f"{p.in_local_queue + 1}. {_link(f'{p.namespace}/{p.name}')}" for p in mine)
    return (
        f'<tr data-lq="{escape(lq.namespace)}/{escape(lq.name)}"><td>{escape(lq.namespace)}/'
        f"{escape(lq.name)}</td><td>{escape(lq.cluster_queue)}</td><td>{lq.pending}</td>"
        f"<td>{lq.admitted}</td><td>{order}</td></tr>"
    )


def _workloads(all_rows: list[WorkloadRow]) -> str:
    if not all_rows:
        return '<p class="empty">No workloads.</p>'
    rows = all_rows[:WORKLOADS_SHOWN]
    more = len(all_rows) - len(rows)
    note = f'<p class="empty">and {more} more (finished ones last)</p>' if more else ""
    body = "".join(
        f'<tr class="state-{w.state.lower()}"><td>{escape(w.state)}</td><td>{_link(w.key)}</td>'
        f"<td>{escape(w.local_queue)}</td><td>{escape(w.cluster_queue)}</td>"
        f'<td>{w.priority}</td><td class="words">{escape(w.message)}</td></tr>'
        for w in rows
    )
    return (
        '<table class="workloads"><tr><th>state</th><th>workload</th><th>LocalQueue</th>'
        f"<th>ClusterQueue</th><th>priority</th><th>why</th></tr>{body}</table>{note}"
    )
