"""deviceshare's node lock in a session (``deviceshare.NodeLockEnable``,
:mod:`batchsched.api.node_lock`).

Volcano writes the lock on the API server's node the moment ``Allocate`` takes it, so
it outlives the statement: a placement undone later in the session keeps it, and so
does the node after the session. Here the session's node gets the annotation at once
(later placements of the session see it) and so does the cache, through its optional
``annotate_node(node, key, value)`` (:class:`~batchsched.cache.MemoryCache` has it; a
host cache without it keeps the lock to the session). The cache releases the lock when
it binds the pod, as the node's device plugin does when it gives the pod its devices.
"""

from __future__ import annotations

import math

from batchsched.api.node import NodeInfo
from batchsched.api.node_lock import (
    LOCK_EXPIRY_SECONDS,
    NodeLockError,
    lock_time,
    take_node_lock,
)
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.errors import CacheError, SchedulingError
from batchsched.framework.arguments import log
from batchsched.framework.session import Session

__all__ = ["PLACED_NOW", "lock_node"]

#: The plugin whose wake-ups these are.
PLUGIN = "deviceshare"

#: What a task a statement places is; an eviction undone fires the allocate handlers
#: too, with the task back in its former status.
PLACED_NOW = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED)


def lock_node(ssn: Session, task: TaskInfo, node: NodeInfo, name: str, *,
              refusal: str) -> None:
    """Take the node's lock ``name`` for ``task`` (Volcano's ``LockNode``), or raise
    SchedulingError with Volcano's words, ``refusal`` followed by why (the lock is held,
    its time is unreadable, or the cache could not write it)."""
    taken_now: set[tuple[str, str]] = ssn.extra.setdefault(_TAKEN_KEY, set())
    try:
        value = take_node_lock(node.name, node.annotations, name, ssn.now)
    except NodeLockError as exc:
        _wake_when_free(ssn, node, name, taken_here=(node.name, name) in taken_now)
        raise SchedulingError(f"task {task.uid}: {refusal} {exc}") from None
    annotate = getattr(ssn.cache, "annotate_node", None)
    try:
        if annotate is not None:
            annotate(node.name, name, value)
    except Exception as exc:
        error = CacheError(f"{node.name}: the cache's annotate_node raised "
                           f"{type(exc).__name__}: {exc}", operation="annotate_node",
                           obj=node.name)
        error.__cause__ = exc
        ssn.host_errors.append(error)
        log.warning("batchsched: %s", error)
        raise SchedulingError(f"task {task.uid}: {refusal} the lock {name} could not be "
                              f"written: {exc}") from exc
    # Once written (a lock the cache refused is no lock). A new mapping: the node's
    # annotations may be shared with the cache's copy.
    node.annotations = {**node.annotations, name: value}
    taken_now.add((node.name, name))


#: Where a session keeps the locks deviceshare took in it (node name, lock name).
_TAKEN_KEY = "deviceshare.locks_taken"


def _wake_when_free(ssn: Session, node: NodeInfo, name: str, *, taken_here: bool) -> None:
    """Tell a host that opens sessions on events only (the simulator) when the refusal
    may end, as Volcano's periodic sessions would find: a lock this session took goes
    at its pod's bind (right after the session: the next period's session), any other
    once it is five minutes old."""
    if taken_here:
        ssn.wake_up_at(PLUGIN, ssn.now + _PERIOD)
        return
    try:
        taken = lock_time(node.annotations[name])
    except (KeyError, ValueError):
        return  # unreadable: it never expires
    # Lock times are whole seconds; the lock is free once strictly older.
    ssn.wake_up_at(PLUGIN, math.floor(taken + LOCK_EXPIRY_SECONDS) + _PERIOD)


#: The session after one, on a host that runs one every period (Volcano's default
#: ``--schedule-period``).
_PERIOD = 1.0

