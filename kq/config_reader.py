"""A typed reader over one section of the configuration document, whose errors name the
field (``waitForPodsReady.timeout: must be a positive duration``); unknown keys are errors,
because a typo silently ignored is worse."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kq.api.selectors import parse_label_selector
from kq.config import NAMESPACE_NAME_LABEL, ConfigError, parse_duration

T = TypeVar("T")


class Section:
    """A mapping at ``path`` whose fields are read once each; leftovers are unknown fields."""

    def __init__(self, value: object, path: str, allowed: set[str]) -> None:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"{path or 'configuration'}: must be a mapping")
        check_keys(value, allowed, path)
        self.data: dict[str, Any] = value
        self.path = path

    def where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str, default: T, check: Callable[[object], bool], what: str) -> T:
        value: T = self.data.get(key, default)
        if not check(value):
            raise ConfigError(f"{self.where(key)}: must be {what}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        return self.get(key, default, lambda v: isinstance(v, bool), "true or false")

    def text(self, key: str, default: str) -> str:
        return self.get(key, default, lambda v: isinstance(v, str), "a string")

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        value = self.get(key, default, is_number, "a number")
        if value <= minimum:
            raise ConfigError(f"{self.where(key)}: must be greater than {minimum:g}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self.get(
            key, default, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"
        )
        if value < minimum:
            raise ConfigError(f"{self.where(key)}: must be at least {minimum}")
        return value

    def duration(self, key: str, default: float, *, zero: bool = False) -> float:
        raw = self.data.get(key)
        if raw is None:
            return default
        try:
            seconds = parse_duration(raw) if isinstance(raw, str) else None
        except ValueError:
            seconds = None
        if seconds is None or seconds < 0 or (seconds == 0 and not zero):
            what = "a duration" if zero else "a positive duration"
            raise ConfigError(f"{self.where(key)}: must be {what} such as 15s or 1m30s")
        return seconds

    def names(
        self, key: str, default: tuple[str, ...], choices: tuple[str, ...] = ()
    ) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{self.where(key)}: must be a list of non-empty strings")
        for item in value:
            if choices and item not in choices:
                raise ConfigError(
                    f"{self.where(key)}: unknown value {item!r} (allowed: {', '.join(choices)})"
                )
        return tuple(value)

    def section(self, key: str, allowed: set[str]) -> Section:
        return Section(self.data.get(key), self.where(key), allowed)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_keys(section: Mapping[str, Any], allowed: set[str], path: str) -> None:
    unknown = sorted(set(section) - allowed)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise ConfigError(f"{where}: unknown field (allowed: {', '.join(sorted(allowed))})")


SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector(parent: Section, key: str, namespace: str | None) -> dict[str, Any] | None:
    """A metav1.LabelSelector at ``key`` (``In``/``NotIn`` need values, ``Exists``/
    ``DoesNotExist`` take none); a namespace selector (``namespace`` given) must not select
    ``kube-system`` or kq's own namespace.
    """
    path = parent.where(key)
    raw = parent.data.get(key)
    if raw is None:
        return None
    s = parent.section(key, {"matchLabels", "matchExpressions"})
    match_labels = s.data.get("matchLabels") or {}
    if not isinstance(match_labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()
    ):
        raise ConfigError(f"{s.where('matchLabels')}: must map label keys to string values")
    expressions = s.data.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ConfigError(f"{s.where('matchExpressions')}: must be a list")
    for index, item in enumerate(expressions):
        e = Section(item, f"{s.where('matchExpressions')}[{index}]", {"key", "operator", "values"})
        if not e.text("key", ""):
            raise ConfigError(f"{e.where('key')}: must not be empty")
        operator = e.text("operator", "")
        values = e.data.get("values") or []
        if operator not in SELECTOR_OPERATORS:
            raise ConfigError(
                f"{e.where('operator')}: must be one of {', '.join(SELECTOR_OPERATORS)}"
            )
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ConfigError(f"{e.where('values')}: must be a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise ConfigError(f"{e.where('values')}: must be specified when operator is {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            raise ConfigError(
                f"{e.where('values')}: may not be specified when operator is {operator}"
            )
    selector = parse_label_selector(raw)
    for protected in ("kube-system", namespace) if namespace is not None else ():
        if selector is not None and selector.matches({NAMESPACE_NAME_LABEL: protected}):
            raise ConfigError(f'{path}: should not match the "{protected}" namespace')
    return dict(raw)


def host_port(s: Section, key: str, default: str) -> str:
    value = s.text(key, default)
    _, sep, port = value.rpartition(":")
    if value and (not sep or not port.isdigit() or int(port) > 65535):
        raise ConfigError(f"{s.where(key)}: must be host:port, such as :8443 (or empty)")
    return value
