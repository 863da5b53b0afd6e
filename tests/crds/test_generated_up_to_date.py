"""deploy/crds/ holds exactly what `python -m kq.crds deploy/crds` generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kq.crds import builtin_crds
from kq.crds.render import HEADER, rendered_files

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "crds"
REGENERATE = "run `python -m kq.crds deploy/crds` and commit the result"


def test_checked_in_files_match_the_generator() -> None:
    expected = rendered_files()
    assert sorted(p.name for p in DEPLOY.glob("*.yaml")) == sorted(expected), REGENERATE
    for name, text in expected.items():
        assert (DEPLOY / name).read_text(encoding="utf-8") == text, f"{name}: {REGENERATE}"


def test_files_start_with_the_generated_header_and_load_back_to_the_crds() -> None:
    loaded: list[dict[str, Any]] = []
    for name in rendered_files():
        text = (DEPLOY / name).read_text(encoding="utf-8")
        assert text.startswith(HEADER)
        loaded.extend(doc for doc in yaml.safe_load_all(text) if doc is not None)
    assert loaded == builtin_crds()


def test_entry_point_writes_the_same_files(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kq.crds", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(Path(line).name for line in result.stdout.split()) == sorted(rendered_files())
    for name, text in rendered_files().items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text


def test_entry_point_requires_exactly_one_directory() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kq.crds"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "usage" in result.stderr
