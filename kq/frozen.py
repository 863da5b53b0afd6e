"""A cheaper ``__init__`` for the frozen, slotted dataclasses of ``kq.api`` that the admission
core builds by the hundred thousand (workloads, conditions).

A frozen dataclass's generated ``__init__`` stores each field with
``object.__setattr__(self, name, value)``: in Python 3.11 that is about 90 ns a field, and
mode A spent about a tenth of its CPU in those stores. Storing through the slot's own
descriptor (``Class.field.__set__``) skips the attribute lookup by name and costs half. The
instance, its signature, defaults, ``__post_init__`` call and frozenness are unchanged.

The compiled core's own value classes don't use it: mypyc would leave a class so decorated a
plain Python class. They declare ``Final`` fields and write their ``__init__`` (as
``kq.scheduler.decisions`` does), which compiles to a native class whose fields are read-only.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, TypeVar

T = TypeVar("T")

_FACTORY = object()
"""Default of a parameter whose field has a ``default_factory``, as the dataclass's own."""


def quick_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of ``@dataclass(frozen=True, slots=True)`` class ``cls``
    (applied above the ``@dataclass``). Only plain positional fields are supported."""
    scope: dict[str, Any] = {"_FACTORY": _FACTORY}
    params: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        slot = cls.__dict__.get(f.name)
        if not isinstance(slot, types.MemberDescriptorType) or f.kw_only is True:
            raise TypeError(f"{cls.__qualname__}.{f.name}: not a positional slot field")
        scope[f"_set_{f.name}"] = slot.__set__
        scope[f"_default_{f.name}"] = f.default
        scope[f"_make_{f.name}"] = f.default_factory
        value = f.name
        if not f.init:
            if f.default is not dataclasses.MISSING:
                value = f"_default_{f.name}"
            elif f.default_factory is not dataclasses.MISSING:
                value = f"_make_{f.name}()"
            else:
                continue  # left to __post_init__
        elif f.default is not dataclasses.MISSING:
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _make_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"    _set_{f.name}(self, {value})")
    original = inspect.signature(cls.__init__)
    if [p.split("=")[0] for p in params] != list(original.parameters)[1:]:
        raise TypeError(f"{cls.__qualname__}: init-only variables are not supported")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]), scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__signature__ = original
    setattr(cls, "__init__", init)  # noqa: B010 (mypy: assigning to a method)
    return cls
