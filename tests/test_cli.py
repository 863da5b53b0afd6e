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


def test_kq_run_never_loads_the_embedded_default() -> None:
    """A production pod runs ``kq run``: the simulated cluster and API server stay unloaded."""
    probe = (
        "import sys\n"
        "from kq.cli import main\n"
        "try:\n"
        "    main(['run', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "import kq.app\n"
        "print(sorted(m for m in sys.modules if m.startswith('kq.sandbox')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"
