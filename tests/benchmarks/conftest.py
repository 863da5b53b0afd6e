"""The benchmarks are scripts importing each other by name, from their own directory."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
