"""Reading input files with the line of every mapping and key, so errors can point at them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml


class InputError(ValueError):
    """Bad input: the message names the file, the line and the field; nothing was simulated."""


class Located(dict[str, Any]):
    """A YAML mapping that remembers its own line and each key's line (1-based)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _Loader(yaml.SafeLoader):
    """SafeLoader whose mappings are ``Located``: only safe tags, plus line numbers."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Located:
    loader.flatten_mapping(node)
    mapping = Located()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[str(key)] = key_node.start_mark.line + 1
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc.reason}") from exc


def load_documents(path: Path) -> Iterator[Any]:
    """Every YAML document of ``path``, mappings as ``Located``; empty documents skipped."""
    text = read_text(path)
    try:
        for document in yaml.load_all(text, Loader=_Loader):  # a SafeLoader subclass
            if document is not None:
                yield document
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise InputError(f"{where}: not valid YAML: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc


def where(path: Path, node: object, key: str | None = None) -> str:
    """``path:line`` of ``node`` (of its ``key`` when given), or ``path`` if unknown."""
    if isinstance(node, Located):
        return f"{path}:{node.line_of(key) if key is not None else node.line}"
    return str(path)


def yaml_files(path: Path) -> list[Path]:
    """``path`` itself, or the ``.yaml``/``.yml`` files of a directory in name order."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        if not found:
            raise InputError(f"{path}: no .yaml or .yml files in this directory")
        return found
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return [path]
