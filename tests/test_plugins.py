"""Plugins load through the ``kq`` entry-point group, built-in and third-party alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pluggy
import pytest

from kq.config import KqConfig, PluginsConfig
from kq.hookspecs import hookimpl
from kq.plugins import DuplicateNameError, Registry, build_plugin_manager, collect_registrations

REPO = Path(__file__).resolve().parent.parent
HELLO = REPO / "examples" / "kq-plugin-hello"


@pytest.fixture(scope="module")
def hello_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Install the example third-party plugin into a private site directory."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(HELLO),
        ],
        check=True,
    )
    return target


def run_kq(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(site), **env}
    if "KQ_DISABLE_PLUGINS" not in env:
        environ.pop("KQ_DISABLE_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "kq", *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def loaded_plugins(output: str) -> set[str]:
    line = next(line for line in output.splitlines() if line.startswith("plugins: "))
    return set(line.removeprefix("plugins: ").split(", "))


def test_third_party_plugin_is_discovered_and_called(hello_site: Path) -> None:
    result = run_kq(hello_site, "version")
    assert result.returncode == 0, result.stderr
    assert "hello from kq-plugin-hello" in result.stdout
    assert {"hello", "report_header"} <= loaded_plugins(result.stdout)


def test_builtin_plugin_loads_through_the_same_entry_point_group(hello_site: Path) -> None:
    result = run_kq(hello_site, "version")
    assert "plugin selection: all" in result.stdout


@pytest.mark.parametrize(
    "config_text",
    ["plugins:\n  disabled: [hello]\n", "plugins:\n  enabled: [report_header]\n"],
    ids=["disabled", "allow-list"],
)
def test_config_removes_plugin(hello_site: Path, tmp_path: Path, config_text: str) -> None:
    config = tmp_path / "kq.yaml"
    config.write_text(config_text)
    result = run_kq(hello_site, "version", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "hello from kq-plugin-hello" not in result.stdout
    assert "hello" not in loaded_plugins(result.stdout)
    assert "report_header" in loaded_plugins(result.stdout)


def test_environment_disables_plugin(hello_site: Path) -> None:
    result = run_kq(hello_site, "version", KQ_DISABLE_PLUGINS="hello")
    assert "hello from kq-plugin-hello" not in result.stdout
    assert "hello" not in loaded_plugins(result.stdout)
    assert "report_header" in loaded_plugins(result.stdout)


def test_historic_configure_reaches_late_plugins() -> None:
    pm = build_plugin_manager(PluginsConfig(autoload=False))
    config = KqConfig()
    pm.hook.kq_configure.call_historic(kwargs={"config": config})
    seen: list[KqConfig] = []

    class Late:
        @hookimpl
        def kq_configure(self, config: KqConfig) -> None:
            seen.append(config)

    pm.register(Late(), name="late")
    assert seen == [config]


def test_duplicate_registration_names_both_plugins() -> None:
    class Strategy:
        NAME = "StrictFIFO"

    class First:
        @hookimpl
        def kq_register_queueing_strategies(self, register: object) -> None:
            assert callable(register)
            register(Strategy)

    pm = build_plugin_manager(PluginsConfig(autoload=False))
    pm.register(First(), name="first")
    pm.register(First(), name="second")
    registry: Registry[type[Strategy]] = Registry("queueing strategy", lambda c: c.NAME)
    with pytest.raises(DuplicateNameError, match=r"'first' and 'second'|'second' and 'first'"):
        collect_registrations(pm, "kq_register_queueing_strategies", registry)


def test_unknown_hook_in_plugin_fails_loudly() -> None:
    class Typo:
        @hookimpl
        def kq_register_queueing_stratgies(self, register: object) -> None:
            raise AssertionError("never called")

    pm = build_plugin_manager(PluginsConfig(autoload=False))
    pm.register(Typo(), name="typo")
    with pytest.raises(pluggy.PluginValidationError):
        pm.check_pending()
