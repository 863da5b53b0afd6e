"""An object that failed validation: the reason and message a status condition will carry."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Invalid:
    """Why an object could not be parsed; never raised, returned in place of the value."""

    kind: str
    name: str
    reason: str
    message: str


class ParseError(ValueError):
    """Raised inside a parser and turned into ``Invalid`` at its boundary."""
