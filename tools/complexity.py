"""Fail when a function is more complex than a limit, as radon measures cyclomatic complexity.

``make lint`` runs it on ``kq`` and ``plugins`` with ``--max 25`` (issue 23). radon's own
``cc --min`` and xenon's ``--max-absolute`` take a rank letter, and rank D spans 21 to 30, so
neither can say "above 25"; this takes the number. Scores are radon's, as ``radon cc -s``
prints them, and closures are checked too: radon scores a nested function apart from the one
around it, and ``radon cc`` does not list it unless asked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from radon.visitors import ComplexityVisitor

Block = tuple[str, int, int]  # qualified name, line, complexity


def _functions(functions: Iterable[Any], prefix: str) -> Iterator[Block]:
    for function in functions:
        name = f"{prefix}{function.name}"
        yield name, int(function.lineno), int(function.complexity)
        yield from _functions(function.closures, f"{name}.")


def _classes(classes: Iterable[Any], prefix: str) -> Iterator[Block]:
    for cls in classes:
        name = f"{prefix}{cls.name}"
        yield from _functions(cls.methods, f"{name}.")
        yield from _classes(cls.inner_classes, f"{name}.")


def blocks(source: str) -> Iterator[Block]:
    """Every function, method and closure of ``source`` with its complexity."""
    visitor = ComplexityVisitor.from_code(source)
    yield from _functions(visitor.functions, "")
    yield from _classes(visitor.classes, "")


def _files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, required=True, help="highest complexity allowed")
    parser.add_argument("paths", nargs="+", type=Path, help="files or directories")
    args = parser.parse_args(argv)
    limit: int = args.max
    over = [
        f"{path}:{line}: {name} has cyclomatic complexity {score} (more than {limit})"
        for path in _files(args.paths)
        for name, line, score in blocks(path.read_text(encoding="utf-8"))
        if score > limit
    ]
    for line in over:
        print(line, file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
