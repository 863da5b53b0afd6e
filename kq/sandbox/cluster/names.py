"""Generated name suffixes: what ``rand.String(5)`` gives upstream, but stable per seed.

Why stable: a controller that recreates an object after a failed write must pick the same name,
or a retried pass could leave two copies behind.
"""

from __future__ import annotations

import hashlib

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def suffix(seed: str) -> str:
    """Five characters from the alphabet ``k8s.io/apimachinery/pkg/util/rand`` draws from."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped onto the same alphabet (no vowels, so
    no words, and no characters that look alike)."""
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in text)
