"""Which admission core runs: the mypyc-compiled one, or the Python sources.

``make compile`` (``tools/compile_core.py``) builds the core's modules in place and lists them
in ``kq/native.manifest``. Python imports an extension module before a source file of the same
name, so a compiled module would outlive an edit of its source and run stale code: whenever
any listed source is newer than the manifest, or ``KQ_PURE`` is set, every listed module is
imported from its source instead. It is all or none, because compiled modules call one
another natively and a mix would run two versions of one function.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

MANIFEST = Path(__file__).with_name("native.manifest")
PURE_ENV = "KQ_PURE"


class StaleCompiledCore(UserWarning):
    """A source of the compiled core changed after it was built."""


def source_of(name: str, root: Path) -> Path:
    """The source file of module ``name`` (dotted) under the repository ``root``: kq's there,
    the built-in plugins' under ``plugins``."""
    top = root / "plugins" if name.partition(".")[0] == "kq_plugins" else root
    base = top.joinpath(*name.split("."))
    package = base / "__init__.py"
    return package if package.is_file() else base.with_suffix(".py")


def stale(manifest: Path, names: Sequence[str], root: Path) -> list[str]:
    """The listed modules whose source is newer than ``manifest`` (or gone)."""
    built = manifest.stat().st_mtime
    out = []
    for name in names:
        source = source_of(name, root)
        if not source.is_file() or source.stat().st_mtime > built:
            out.append(name)
    return out


class SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the listed modules' ``.py`` files, ahead of the extension modules beside them."""

    def __init__(self, names: Sequence[str], root: Path) -> None:
        self._names = frozenset(names)
        self._root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._names:
            return None
        source = source_of(fullname, self._root)
        package = [str(source.parent)] if source.name == "__init__.py" else None
        return importlib.util.spec_from_file_location(
            fullname, source, submodule_search_locations=package
        )


def choose() -> str:
    """Install the finder when the compiled core must not run; say which core runs."""
    try:
        names = MANIFEST.read_text().split()
    except FileNotFoundError:
        return "python"
    root = MANIFEST.parent.parent
    if os.environ.get(PURE_ENV):
        sys.meta_path.insert(0, SourceFirst(names, root))
        return "python"
    changed = stale(MANIFEST, names, root)
    if changed:
        warnings.warn(
            f"the compiled core is older than {', '.join(changed[:3])}: running the Python "
            "sources (`make compile` rebuilds it)",
            StaleCompiledCore,
            stacklevel=2,
        )
        sys.meta_path.insert(0, SourceFirst(names, root))
        return "python"
    return "compiled"
