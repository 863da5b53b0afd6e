"""The compiled core runs only while it matches its sources (kq.native, tools/compile_core.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kq
from kq.native import MANIFEST, PURE_ENV, SourceFirst, source_of, stale


def _tree(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text("VALUE = 1\n")


def test_a_source_edited_after_the_build_is_stale(tmp_path: Path) -> None:
    _tree(tmp_path)
    manifest = tmp_path / "native.manifest"
    manifest.write_text("pkg\npkg.mod\n")
    built = time.time() - 10
    for path in (tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "mod.py", manifest):
        os.utime(path, (built, built))
    assert stale(manifest, ["pkg", "pkg.mod"], tmp_path) == []
    (tmp_path / "pkg" / "mod.py").write_text("VALUE = 2\n")
    assert stale(manifest, ["pkg", "pkg.mod"], tmp_path) == ["pkg.mod"]


def test_a_source_that_is_gone_is_stale(tmp_path: Path) -> None:
    _tree(tmp_path)
    manifest = tmp_path / "native.manifest"
    manifest.write_text("pkg.gone\n")
    assert stale(manifest, ["pkg.gone"], tmp_path) == ["pkg.gone"]


def test_source_first_finds_modules_and_packages_from_their_sources(tmp_path: Path) -> None:
    _tree(tmp_path)
    finder = SourceFirst(["pkg", "pkg.mod"], tmp_path)
    package = finder.find_spec("pkg", None)
    module = finder.find_spec("pkg.mod", [str(tmp_path / "pkg")])
    assert package is not None
    assert package.origin == str(tmp_path / "pkg" / "__init__.py")
    assert package.submodule_search_locations == [str(tmp_path / "pkg")]
    assert module is not None
    assert module.origin == str(tmp_path / "pkg" / "mod.py")
    assert module.submodule_search_locations is None
    assert finder.find_spec("pkg.other", None) is None  # not listed: the usual finders decide
    assert source_of("pkg.mod", tmp_path) == tmp_path / "pkg" / "mod.py"
    plugin = tmp_path / "plugins" / "kq_plugins" / "preemption" / "classic.py"
    assert source_of("kq_plugins.preemption.classic", tmp_path) == plugin


def _core(env: dict[str, str]) -> list[str]:
    """Which core runs, and where the core's cycle and the built-in preemption come from."""
    code = "import kq, kq.scheduler.cycle as c, kq_plugins.preemption.classic as p\n"
    code += "print(kq.CORE, c.__file__, p.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_kq_pure_runs_the_sources() -> None:
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    core, cycle, preemption = _core({**env, PURE_ENV: "1"})
    assert (core, Path(cycle).name, Path(preemption).name) == ("python", "cycle.py", "classic.py")


@pytest.mark.skipif(
    kq.CORE != "compiled", reason="the core is not compiled here (make compile builds it)"
)
def test_the_compiled_core_runs_when_built() -> None:
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    core, cycle, preemption = _core(env)
    assert core == "compiled"
    assert cycle.endswith(".so"), cycle
    assert preemption.endswith(".so"), preemption
    listed = MANIFEST.read_text().split()
    assert {"kq.scheduler.cycle", "kq_plugins.preemption.classic"} <= set(listed)
