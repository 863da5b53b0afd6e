"""Every scheduling decision and cycle, appended as JSON lines to ``$KQ_AUDIT_FILE``.

Observer hooks must not do I/O inline: a cycle waits for them. So decisions go into a bounded
in-memory queue and a daemon thread writes them out; when the queue is full, lines are dropped
and counted, never the scheduler held up. Written from ``kq/hookspecs.py`` alone.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from typing import Any

from kq.hookspecs import hookimpl

MAX_QUEUED = 10_000
_lines: queue.Queue[str] = queue.Queue(MAX_QUEUED)
_state = {"dropped": 0, "writer": None}


def _put(record: dict[str, Any]) -> None:
    if os.environ.get("KQ_AUDIT_FILE") is None:
        return
    if _state["writer"] is None:
        writer = threading.Thread(target=_write_forever, name="kq-audit", daemon=True)
        _state["writer"] = writer
        writer.start()
    try:
        _lines.put_nowait(json.dumps(record, sort_keys=True))
    except queue.Full:
        _state["dropped"] = int(_state["dropped"] or 0) + 1


def _write_forever() -> None:
    path = os.environ["KQ_AUDIT_FILE"]
    while True:
        line = _lines.get()
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


@hookimpl
def kq_on_decision(decision: Any) -> None:
    record = {"event": "decision", "kind": type(decision).__name__, "workload": decision.key}
    reason = getattr(decision, "reason", None)
    if reason is not None:
        record["reason"] = reason
    admission = getattr(decision, "admission", None)
    if admission is not None:
        record["clusterQueue"] = admission.cluster_queue
    _put(record)


@hookimpl
def kq_on_cycle_end(summary: Any) -> None:
    _put({"event": "cycle", "decisions": len(summary.decisions), "admitted": summary.admitted})
