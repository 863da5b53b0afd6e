"""Workload names: ``<kind lowercased>-<job name>`` cut to fit, then ``-`` and a 5-hex hash.

The hash is SHA-1 over ``Kind\\nGroup\\nname\\nuid`` (plus ``\\nextra`` when given), so two kinds
with the same job name never collide; the version is not part of it.
"""

from __future__ import annotations

import hashlib

from kq.jobframework.interface import GroupVersionKind

HASH_LENGTH = 5
MAX_NAME_LENGTH = 253
SHORT_MAX_NAME_LENGTH = 63
"""Kueue's ShortWorkloadNames feature: names that also fit a label value."""


def workload_name(
    job_name: str,
    job_uid: str,
    gvk: GroupVersionKind,
    *,
    extra: str = "",
    max_length: int = MAX_NAME_LENGTH,
) -> str:
    prefix = f"{gvk.kind.lower()}-{job_name}"[: max_length - 1 - HASH_LENGTH]
    return f"{prefix}-{_hash(job_name, job_uid, gvk, extra)[:HASH_LENGTH]}"


def _hash(job_name: str, job_uid: str, gvk: GroupVersionKind, extra: str) -> str:
    parts = [gvk.kind, gvk.group, job_name, job_uid]
    if extra:
        parts.append(extra)
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()
