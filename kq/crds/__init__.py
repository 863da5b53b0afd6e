"""CustomResourceDefinitions kq serves and installs, built from Python so they cannot drift."""

from __future__ import annotations

from typing import Any


def builtin_crds() -> list[dict[str, Any]]:
    """Every CRD the embedded API server loads at start (Kueue's kinds and the job kinds)."""
    return []
