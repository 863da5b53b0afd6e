"""`python -m kq.crds DIR`: write one generated YAML file of CRDs per API group into DIR."""

from __future__ import annotations

import sys
from pathlib import Path

from kq.crds.render import write_all


def main(argv: list[str]) -> int:
    """Regenerate the files; the only argument is the output directory."""
    if len(argv) != 1:
        print("usage: python -m kq.crds OUTPUT_DIR", file=sys.stderr)
        return 2
    for path in write_all(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
