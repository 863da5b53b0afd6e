from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kq.cli import main


def test_installed_entry_point_help() -> None:
    kq = shutil.which("kq", path=str(Path(sys.executable).parent))
    assert kq, "the kq console script is not installed next to this interpreter"
    result = subprocess.run([kq, "--help"], capture_output=True, text=True, check=True)
    for command in ("version", "run", "dev", "apiserver", "demo"):
        assert command in result.stdout


def test_bad_config_fails_fast_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("plugins:\n  autoload: maybe\n")
    assert main(["version", "--config", str(config)]) == 2
    assert "plugins.autoload" in capsys.readouterr().err
