"""Errors from the API server, with what callers branch on: status, reason, Retry-After."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A non-2xx answer, or (``status == 0``) a transport failure or an unreadable body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.body = body
        self.retry_after = retry_after

    @property
    def retriable(self) -> bool:
        """Throttled, a server-side failure, or the connection broke."""
        return self.status in (0, 429) or self.status >= 500

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def expired(self) -> bool:
        """The resourceVersion is too old (410 Gone): the caller must list again."""
        return self.status == 410


class Fenced(ApiError):
    """A write not sent: the client's guard said this process may no longer write (it lost
    its lease). Never retried: the decision behind it was made under a lease that is gone."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(0, f"{method} {path}: not sent, no longer leading", reason="Fenced")

    @property
    def retriable(self) -> bool:
        return False
