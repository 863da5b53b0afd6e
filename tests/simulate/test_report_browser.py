"""The simulator's report.html as a reader sees it: rendered by headless Chromium (the browser
the dashboard's tests use), its charts drawn with their series, the screenshot not blank."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.dashboard.browser import dump_dom, screenshot
from tests.dashboard.png import read_png
from tests.simulate.test_report import _simulate

pytestmark = pytest.mark.slow

WHITE = (255, 255, 255)


def test_the_report_renders_in_a_browser_with_every_chart(tmp_path: Path) -> None:
    out = _simulate(tmp_path)
    url = (out / "report.html").resolve().as_uri()
    dom = dump_dom(url, tmp_path / "profile")
    charts = sorted(out.glob("*.svg"))
    assert dom.count("<svg") == len(charts) >= 4
    for series in ("team-a-cq", "team-b-cq", "researchers a100"):
        assert f'data-series="{series}"' in dom, series
    assert 'class="bar evicted"' in dom  # the urgent job's reclaim, on the timeline

    shot = screenshot(url, tmp_path / "report.png", tmp_path / "profile", (1200, 1600))
    picture = read_png(shot.read_bytes())
    assert (picture.width, picture.height) == (1200, 1600)
    colours = Counter(picture.pixels)
    drawn = sum(n for colour, n in colours.items() if colour != WHITE)
    assert drawn > 0.03 * len(picture.pixels), "the report's screenshot is mostly blank"
    assert len(colours) > 20, "a page of charts has more than a few colours"
