"""The page's style sheet and its one script, inline: the page is one self-contained answer,
so it works through ``kubectl port-forward`` or a proxy path without static routes."""

from __future__ import annotations

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f7f8fa}
header{display:flex;gap:1em;align-items:baseline;padding:.6em 1.2em;background:#1d2f4f;color:#fff}
header h1{margin:0;font-size:1.4em}
header .sub{opacity:.8}
#live{margin-left:auto;font-size:.9em}
#live.stale{color:#ffb4a8}
main{padding:.5em 1.2em 2em}
section{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:.4em 1em 1em;
 margin:1em 0}
h2{font-size:1.1em;margin:.5em 0}
h3{font-size:1em;margin:.8em 0 .3em}
table{border-collapse:collapse}
th,td{text-align:left;padding:2px 10px 2px 0;vertical-align:middle}
th{font-weight:600;color:#556}
td.words{color:#445;font-size:.92em}
td a{white-space:nowrap}
ul.tree,ul.tree ul{list-style:none;padding-left:1.2em;margin:.2em 0}
ul.tree{padding-left:0}
li.cohort>.name{font-weight:600}
li.cq{margin:.4em 0}
li.cq>.name{font-weight:600;color:#1d4f91}
.meta{color:#667}
.problem,.problems{color:#a3261b}
.empty{color:#778}
pre{background:#f1f3f7;padding:.6em;border-radius:4px;white-space:pre-wrap}
a.close{float:right}
.legend .key{margin-right:1.2em;font-size:.9em}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
svg text{font:11px system-ui,sans-serif;fill:#334}
.used{fill:#3566c8;background:#3566c8}
.lent{fill:#9a5cc6;background:#9a5cc6}
.idle{fill:#e4e9f0;background:#e4e9f0}
.borrowed{fill:#e8891c;background:#e8891c}
.limit{fill:none;stroke:#e8891c;stroke-dasharray:3 2;border:1px dashed #e8891c}
.nominal{stroke:#1d2330;stroke-width:2}
.tick{stroke:#e1e5ec}
.waiting{fill:#c9d1dc;background:#c9d1dc}
.running{fill:#2f9e5f;background:#2f9e5f}
.preempted{fill:#d63b3b;background:#d63b3b}
.finished{fill:#333;background:#333}
.admitted{fill:#1b7f45;stroke:#fff}
tr.state-pending td:first-child{color:#a35a00;font-weight:600}
tr.state-admitted td:first-child{color:#1b7f45;font-weight:600}
tr.state-finished td{color:#889}
"""

_SCRIPT = """
(function () {
  var live = document.getElementById("live");
  async function refresh() {
    if (document.hidden) return;
    try {
      var answer = await fetch("fragment" + location.search, {cache: "no-store"});
      if (!answer.ok) throw new Error(answer.status + " " + answer.statusText);
      document.getElementById("main").innerHTML = await answer.text();
      live.textContent = "live, updated " + new Date().toLocaleTimeString();
      live.className = "ok";
    } catch (error) {
      live.textContent = "not updated: " + error.message;
      live.className = "stale";
    }
  }
  refresh();
  setInterval(refresh, POLL_MS);
})();
"""


def script(poll_ms: int) -> str:
    return _SCRIPT.replace("POLL_MS", str(int(poll_ms)))
