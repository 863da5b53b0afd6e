"""A name → implementation table filled by the ``kq_register_*`` hooks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class DuplicateNameError(ValueError):
    """Two plugins registered the same name; ``firstresult`` would hide one, so we refuse."""


class Registry(Generic[T]):
    """Implementations keyed by their ``NAME``; remembers which plugin registered each."""

    def __init__(self, kind: str, name_of: Callable[[T], str]) -> None:
        self._kind = kind
        self._name_of = name_of
        self._items: dict[str, tuple[T, str]] = {}

    def register_from(self, plugin_name: str) -> Callable[[T], None]:
        """A ``register`` callback that records ``plugin_name`` as the owner."""

        def register(item: T) -> None:
            name = self._name_of(item)
            if name in self._items:
                owner = self._items[name][1]
                raise DuplicateNameError(
                    f"{self._kind} {name!r} is registered by both {owner!r} and {plugin_name!r}"
                )
            self._items[name] = (item, plugin_name)

        return register

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name][0]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise KeyError(f"unknown {self._kind} {name!r} (registered: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)
