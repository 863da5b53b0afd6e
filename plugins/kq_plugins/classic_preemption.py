"""Registers Kueue's preemption (``kq_plugins.preemption``) as the default policy."""

from __future__ import annotations

from kq.plugin import Register, hookimpl
from kq_plugins.preemption.classic import ClassicPreemption


@hookimpl(trylast=True)
def kq_register_preemption_policies(register: Register) -> None:
    register(ClassicPreemption)
