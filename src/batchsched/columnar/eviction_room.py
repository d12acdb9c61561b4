"""The most room evictions could make on each node, for preempt and reclaim.

Volcano's preempt and reclaim visit candidate nodes one at a time: on each, the
Preemptable (or Reclaimable) plugins choose victims among the node's tasks, and
``ValidateVictims`` drops the node unless the preemptor fits its future idle plus
the victims' requests. A cluster where earlier preemptions already took what
could be taken (the remaining tasks protected by their gang's minimum, the freed
room pipelined for earlier preemptors) makes every later preemptor visit the
same hopeless nodes before one that works, each visit asking the plugins in
Python: the action grows with the square of the cluster.

:class:`EvictionRoom` rules those nodes out in numpy before the visits. Victims
are chosen among the node's tasks, and a task that is not placed (Pending,
Pipelined, Releasing, finished) is never one, so ``future idle + the requests of
every placed, preemptable task`` bounds the room any victim choice can make; a
node where the preemptor does not fit even that bound fails ``ValidateVictims``
whatever the plugins say, and visiting it changes nothing. Skipping it is the
same decision without the plugin calls (so the Preemptable and Reclaimable
functions are not asked about such nodes: they are queries, and a plugin
returns victims among the tasks it is offered).

The bound is kept per node and recomputed only for the nodes the columns saw
change (:attr:`NodeColumns.changes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from batchsched.api.resource import MIN_RESOURCE
from batchsched.api.types import TaskStatus
from batchsched.columnar.node_columns import BoolArray, FloatArray, NodeColumns

if TYPE_CHECKING:
    from batchsched.api.node import NodeInfo
    from batchsched.api.task import TaskInfo
    from batchsched.framework.session import Session

__all__ = ["EvictionRoom"]

#: The statuses of a task on a node that a victim may have (Bound and Running), and
#: those it may reach without its node's figures moving (Allocated and Binding): the
#: bound counts them all, so it stays a bound whatever status moves go unnoticed.
_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND,
                     TaskStatus.RUNNING})
#: Slack for summing in another order than ``ValidateVictims`` does: the bound rules a
#: node out only when the preemptor misses it by clearly more than the epsilon.
_RELATIVE_SLACK = 1e-9


class EvictionRoom:
    """Per node of a session, future idle plus every placed, preemptable task's
    request (see the module docstring)."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._columns: NodeColumns | None = None
        self._changes: list[int] | None = None
        self._read = 0
        self._evictable: FloatArray | None = None

    def hopeless(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> BoolArray | None:
        """Per node of ``nodes``, True where ``task`` cannot fit however many of the
        node's tasks were evicted; None when the columns cannot tell (then every
        node must be visited)."""
        columns = NodeColumns.of(self.ssn)
        columns.sync()
        evictable = self._in_step(columns)
        index = columns.index
        positions = np.fromiter((index.get(node.name, -1) for node in nodes),
                                dtype=np.intp, count=len(nodes))
        if bool((positions < 0).any()):
            return None
        rows, request = columns.request(task.init_resreq)
        if len(rows) and int(rows.max()) >= evictable.shape[0]:
            evictable = self._rebuild(columns)
        room = columns.future_idle[rows][:, positions] + evictable[rows][:, positions]
        short = request[:, None] - room
        slack = MIN_RESOURCE + _RELATIVE_SLACK * (np.abs(request)[:, None] + np.abs(room))
        missed: BoolArray = np.logical_or.reduce(short >= slack, axis=0)
        return missed

    def _in_step(self, columns: NodeColumns) -> FloatArray:
        if (self._evictable is None or columns is not self._columns
                or columns.changes is not self._changes
                or self._evictable.shape != columns.future_idle.shape):
            return self._rebuild(columns)
        changes = columns.changes
        if self._read < len(changes):
            for i in set(changes[self._read:]):
                self._evictable[:, i] = self._node_evictable(columns, columns.nodes[i])
            self._read = len(changes)
        return self._evictable

    def _rebuild(self, columns: NodeColumns) -> FloatArray:
        evictable = np.zeros(columns.future_idle.shape)
        for i, node in enumerate(columns.nodes):
            evictable[:, i] = self._node_evictable(columns, node)
        self._columns, self._changes = columns, columns.changes
        self._read = len(columns.changes)
        self._evictable = evictable
        return evictable

    @staticmethod
    def _node_evictable(columns: NodeColumns, node: NodeInfo) -> FloatArray:
        total = np.zeros(len(columns.dimensions))
        index = columns.dimension_index
        for held in node.tasks.values():
            if held.status not in _PLACED or not held.preemptable:
                continue
            req = held.resreq
            total[0] += req.milli_cpu
            total[1] += req.memory
            for name, amount in req.scalars.items():
                row = index.get(name)
                if row is None:
                    # A dimension the columns lack: no bound for it, so never a skip.
                    total[:] = np.inf
                    return total
                total[row] += amount
        return total
