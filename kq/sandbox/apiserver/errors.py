"""API errors and the ``Status`` objects the server answers with."""

from __future__ import annotations

from typing import Any

from kq.sandbox.apiserver.schema import FieldError


class ApiError(Exception):
    """A failed request; ``status()`` is the body sent to the client."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        #: Sent with the error as ``Warning`` headers (deprecation, unknown fields).
        self.warnings: list[str] = []

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # errors passed through from etcd carry none
            body["reason"] = self.reason
        body["code"] = self.code
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified(group: str, plural: str) -> str:
    """``plural.group``, or just ``plural`` for the core group."""
    return f"{plural}.{group}" if group else plural


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return details


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(group, plural)} "{name}" not found',
        _details(group, plural, name),
    )


def no_route() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
    qualified_kind = f"{kind}.{group}" if group else kind
    listing = ", ".join(str(e) for e in errors)
    if len(errors) > 1:
        listing = f"[{listing}]"
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": e.reason, "message": e.message, "field": e.field} for e in errors],
    }
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {listing}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def unsupported_media(message: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def success(group: str, plural: str, name: str, uid: str) -> dict[str, Any]:
    """The Status answered when an object was deleted at once."""
    details = _details(group, plural, name)
    details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
