from __future__ import annotations

from pathlib import Path

import pytest

from kq.config import ConfigError, KqConfig, PluginsConfig, load_config, parse_config


def test_missing_file_means_defaults() -> None:
    assert load_config(None) == KqConfig()


def test_plugins_section_is_parsed() -> None:
    config = parse_config({"plugins": {"disabled": ["a"], "enabled": ["b"], "autoload": False}})
    assert config.plugins == PluginsConfig(autoload=False, disabled=("a",), enabled=("b",))


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"plugin": {}}, "plugin"),
        ({"plugins": {"disable": ["a"]}}, "plugins.disable"),
        ({"plugins": {"disabled": "a"}}, "plugins.disabled"),
        ({"plugins": {"autoload": "yes"}}, "plugins.autoload"),
        (["not", "a", "mapping"], "configuration"),
    ],
)
def test_errors_name_the_field(document: object, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}:"):
        parse_config(document)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kq.yaml"
    path.write_text("plugins: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)
