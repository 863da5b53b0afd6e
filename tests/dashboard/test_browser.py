"""The dashboard in a real browser (Debian's Chromium, headless) on story S1, both backends:
what it shows is checked against what the API server and kq's visibility API say, and a
screenshot is checked to be a picture (size, colours of the quota bar and the timeline)."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.dashboard.browser import chromium, dump_dom, screenshot
from tests.dashboard.dom import read_page
from tests.dashboard.png import read_png
from tests.dashboard.sandbox import kq_dev_dashboard
from tests.harness import REPO, Cluster, wait_until

pytestmark = pytest.mark.slow

SPEED = 1.0  # the 2-slice JobSet's `sleep 60` lasts a minute: the 3-slice one waits that long
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta1"
USED_BLUE, RUNNING_GREEN = (0x35, 0x66, 0xC8), (0x2F, 0x9E, 0x5F)
BACKGROUNDS = {(255, 255, 255), (247, 248, 250)}


def _state(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}api/state", timeout=30) as answer:
        state: dict[str, Any] = json.load(answer)
    return state


def _settled(url: str, seen: list[str]) -> dict[str, Any] | None:
    """The dashboard's state once S1 holds still for a minute: the 1-slice JobSet done, the
    2-slice one running (16 chips), the 3-slice one pending, tried by the scheduler since the
    1-slice one finished (its Pending condition says 16 chips are missing; the retry comes a
    second after the release), and the ClusterQueue's status counting it. What was seen
    instead goes to ``seen``, for the timeout's message."""
    state = _state(url)
    mine = _mine(state)
    states = sorted(w["state"] for w in mine if w["state"] != "Pending" or w["message"])
    retried = all("16 more needed" in w["message"] for w in mine if w["state"] == "Pending")
    queued = state["pending"].get("cluster-queue") or []
    queues = [q for c in state["cohorts"] for q in c["queues"] if q["name"] == "cluster-queue"]
    counted = [q for q in queues if q["pending"] == 1 and q["usage"][0]["used"] == 16]
    if states == ["Admitted", "Finished", "Pending"] and retried and len(queued) == 1 and counted:
        return state
    seen[:] = [f"workloads {[(w['name'], w['state'], w['message']) for w in mine]}",
               f"pending {queued}", f"queues {queues}"]  # fmt: skip
    return None


def _mine(state: dict[str, Any]) -> list[dict[str, Any]]:
    """S1's Workloads: on the shared real API server other tests' are on the page too."""
    return [
        w for w in state["workloads"]
        if (w["namespace"], w["local_queue"]) == ("default", "multislice-queue")
    ]  # fmt: skip


def _running(url: str) -> int:
    """S1's Workloads holding quota or done."""
    return sum(1 for w in _mine(_state(url)) if w["state"] in ("Admitted", "Finished"))


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 10 for a, b in zip(pixel, colour, strict=True))


def test_s1_in_a_browser(cluster: Cluster, tmp_path: Path) -> None:
    chromium()  # skips (or fails in CI) before anything starts, when there is no browser
    cache = tmp_path / "kubectl-cache"

    def kubectl(*args: str, input: str | None = None) -> str:
        done = cluster.kubectl(*args, input=input, cache_dir=cache)
        assert done.returncode == 0, done.stderr
        return done.stdout

    with kq_dev_dashboard(cluster, tmp_path, "s1", SPEED) as (kubeconfig, url):
        cluster = Cluster(cluster.backend, kubeconfig, cluster.server)
        kubectl("apply", "-f", str(REPO / "examples/s1/kueue.yaml"))
        jobsets = (REPO / "examples/s1/jobsets-multislice-standard.yaml").read_text()
        if cluster.backend == "real":  # the test's kube-apiserver runs without --allow-privileged
            jobsets = jobsets.replace("privileged: true", "privileged: false")
        # The 3-slice JobSet last, once the others hold their quota: applied together, all three
        # Workloads can share a creation second, and a busy controller that first sees them in
        # one cycle breaks that tie by UID, so the 3-slice one could be admitted first.
        documents = jobsets.split("\n---\n")
        kubectl("apply", "-f", "-", input="\n---\n".join(documents[:2]))
        wait_until(lambda: _running(url) == 2, "the 1- and 2-slice JobSets admitted", within=60)
        kubectl("apply", "-f", "-", input="\n---\n".join(documents[2:]))
        seen: list[str] = []
        try:
            wait_until(lambda: _settled(url, seen), "S1 settled", within=90)
        except AssertionError as exc:
            log = (tmp_path / "kq-dev.log").read_text()[-3000:]
            raise AssertionError(f"{exc}; saw {seen}; kq dev's log ends:\n{log}") from None

        # What the cluster says, read with kubectl, independently of the dashboard.
        queue = json.loads(kubectl("get", "clusterqueue", "cluster-queue", "-o", "json"))
        used = int(queue["status"]["flavorsUsage"][0]["resources"][0]["total"])
        summary = json.loads(
            kubectl("get", "--raw", f"{VISIBILITY}/clusterqueues/cluster-queue/pendingworkloads")
        )
        waiting = [f"default/{i['metadata']['name']}" for i in summary["items"]]
        first = waiting[0]
        explained = json.loads(
            kubectl(
                "get",
                "--raw",
                f"{VISIBILITY}/namespaces/default/workloads/{first.split('/')[1]}/explanation",
            )
        )

        page_url = f"{url}?workload={quote(first, safe='')}"
        text, tags = read_page(dump_dom(page_url, tmp_path / "chromium-dom"))
        shot = screenshot(page_url, tmp_path / "s1.png", tmp_path / "chromium-shot", (1280, 1500))

    # On the shared real API server other tests' queues and workloads are on the page too:
    # there the counts below are lower bounds and S1's rows one part of the lists.
    exact = cluster.backend == "embedded"
    # The cohort tree: S1's one ClusterQueue, in no cohort, its chips used of 24.
    assert "no cohort" in text["cohorts"]
    assert "ClusterQueue cluster-queue" in text["cohorts"]
    assert f"used {used} of nominal 24, borrowed 0, lent 0" in text["cohorts"]
    assert tags.get("svg.bar") == 1 if exact else tags.get("svg.bar", 0) >= 1
    # Pending positions, in the visibility API's order, in the ClusterQueue and LocalQueue.
    rows = [line.split("\t")[1:] for line in text["queues"].splitlines() if "\t" in line]
    assert rows[0] == ["position", "workload", "LocalQueue", "position in LocalQueue", "priority"]
    expected = [[str(n), key, "multislice-queue", str(n), "0"] for n, key in enumerate(waiting, 1)]
    assert rows[1:] == expected if exact else all(row in rows for row in expected)
    lq_line = next(
        line for line in text["localqueues"].splitlines() if "default/multislice-queue" in line
    )
    assert f"1. {first}" in lq_line
    # The pending workload's explanation: kq's own words, position and what is missing.
    assert f"Why: {first}" in text["explanation"]
    assert f"Position 1 of {len(waiting)} in ClusterQueue cluster-queue" in text["explanation"]
    assert "google.com/tpu in flavor vlp-24: it needs" in text["explanation"]
    # The same words as `kubectl kq explain` (where it stands and what it misses; the age and
    # trace of the last decision may move on between the two reads).
    lines = explained["lines"]
    for line in [*lines[:2], *(line for line in lines if line.startswith("Missing "))]:
        assert line in text["explanation"]
    # The timeline: a lane per workload, an admission mark per admitted one.
    assert tags.get("text.lane") == 3 if exact else tags.get("text.lane", 0) >= 3
    assert tags.get("circle.admitted", 0) >= 3 - len(waiting)
    pending = text["workloads"].count("Pending")
    assert pending == len(waiting) if exact else pending >= len(waiting)
    # The page's script polled the fragment and swapped it in.
    assert text["live"].startswith("live, updated"), text["live"]

    picture = read_png(shot.read_bytes())
    assert (picture.width, picture.height) == (1280, 1500)
    assert shot.stat().st_size > 20_000
    colours = Counter(picture.pixels)
    drawn = sum(n for colour, n in colours.items() if colour not in BACKGROUNDS)
    assert drawn > 0.1 * len(picture.pixels), "the screenshot is mostly blank"
    blue = sum(n for colour, n in colours.items() if _near(colour, USED_BLUE))
    green = sum(n for colour, n in colours.items() if _near(colour, RUNNING_GREEN))
    assert blue > 1000, "no quota bar drawn"
    # On the shared real server other tests' queues and workloads come first on the page and
    # push S1's timeline out of the window; the DOM checks above cover its lanes there.
    if exact:
        assert green > 200, "no admitted span on the timeline"
