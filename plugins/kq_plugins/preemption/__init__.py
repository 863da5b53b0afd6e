"""Kueue's two preemption algorithms, classic and fair sharing's, and what they share.

``make compile`` builds its modules with the admission core, which calls it for every head
that needs preemption; the hook that registers it lives outside (``classic_preemption``),
since a compiled function cannot carry pluggy's hookimpl mark.
"""
