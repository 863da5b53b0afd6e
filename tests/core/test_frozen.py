"""``kq.frozen.quick_init`` builds what the dataclass's own ``__init__`` builds: same fields,
defaults, factories, ``__post_init__``, signature, and the instance stays frozen."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.frozen import quick_init


@dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str = "b"
    c: dict[str, int] = field(default_factory=dict)
    d: int = field(init=False, default=7)
    e: list[int] = field(init=False, default_factory=list)
    f: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "f", self.a * 2)


@quick_init
@dataclass(frozen=True, slots=True)
class Quick:
    a: int
    b: str = "b"
    c: dict[str, int] = field(default_factory=dict)
    d: int = field(init=False, default=7)
    e: list[int] = field(init=False, default_factory=list)
    f: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "f", self.a * 2)


Args = tuple[tuple[Any, ...], dict[str, Any]]
ARGS: st.SearchStrategy[Args] = st.one_of(
    st.tuples(st.integers()).map(lambda t: (t, {})),
    st.tuples(st.integers(), st.text(max_size=3)).map(lambda t: (t, {})),
    st.tuples(
        st.integers(), st.text(max_size=3), st.dictionaries(st.text(max_size=2), st.integers())
    ).map(lambda t: (t, {})),
    st.tuples(st.integers(), st.dictionaries(st.text(max_size=2), st.integers())).map(
        lambda t: ((t[0],), {"c": t[1]})
    ),
    st.tuples(st.integers(), st.text(max_size=3)).map(lambda t: ((), {"a": t[0], "b": t[1]})),
)


def _values(obj: Any) -> tuple[Any, ...]:
    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))


@given(ARGS)
def test_same_instance_as_the_dataclass_init(args: Args) -> None:
    positional, named = args
    assert _values(Quick(*positional, **named)) == _values(Plain(*positional, **named))


def test_factories_make_a_new_value_per_instance() -> None:
    first, second = Quick(1), Quick(2)
    assert first.c == {}
    assert first.c is not second.c
    assert first.e is not second.e


def test_frozen_signature_and_errors_unchanged() -> None:
    quick = Quick(1)
    with pytest.raises(FrozenInstanceError):
        quick.a = 2  # type: ignore[misc]
    assert inspect.signature(Quick) == inspect.signature(Plain)
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick(1, "b", {}, 4)  # type: ignore[call-arg]


def test_unsupported_classes_are_refused() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        a: int
        scale: InitVar[int] = 1

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        a: int

    for cls in (NoSlots, WithInitVar, KeywordOnly):
        with pytest.raises(TypeError):
            quick_init(cls)
