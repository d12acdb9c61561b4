"""What sessions over one cache carry from each session to the next.

A cache with incremental snapshots (``MemoryCache(incremental_snapshots=True)``, the
simulator's) hands a session the very node objects it handed the previous one when
nothing changed them, and tells which nodes it copied anew since a given snapshot
(``Session.nodes_renewed_since``). What a session works out from its nodes (the
Kubernetes node view, the node arrays, the allocatable total) is then kept per cache
and brought up to date at the next session, reading only those nodes, instead of
being worked out afresh: :class:`Carried` keeps one such piece per cache.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Carried"]

State = TypeVar("State")


class Carried(Generic[State]):
    """One piece of session state per cache (see the module docstring)."""

    def __init__(self) -> None:
        # cache -> (the state, the session it last served, that session's snapshot number)
        self._kept: weakref.WeakKeyDictionary[
            Any, tuple[State, weakref.ReferenceType[Any], int | None]] = \
            weakref.WeakKeyDictionary()

    def get(self, ssn: Any, build: Callable[[], State],
            carry: Callable[[State, frozenset[str] | None], bool]) -> State:
        """The state for session ``ssn``: the one its cache's last session used, when
        that session is closed and ``carry(state, renewed)`` brought it up to date
        (and said so; ``renewed`` names the nodes the cache copied anew since, None
        when unknown: read every node); else ``build()``, kept for the next session.
        A session whose cache copies every node at every snapshot always builds."""
        cache = getattr(ssn, "cache", None)
        if cache is None or not getattr(ssn, "reuses_objects", False):
            return build()
        kept = self._kept.get(cache)
        if kept is not None:
            state, served, serial = kept
            previous = served()
            # A state another open session of the cache still reads is left to it.
            if not ((previous is None or previous.closed)
                    and carry(state, ssn.nodes_renewed_since(serial))):
                state = build()
        else:
            state = build()
        self._kept[cache] = (state, weakref.ref(ssn), ssn.snapshot_serial)
        return state
