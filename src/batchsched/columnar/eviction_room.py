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
Pipelined, Releasing, finished) or not preemptable is never one, so
``future idle + the requests of every placed, preemptable task`` bounds the room
any victim choice can make. The plugins' victim bounds
(:mod:`batchsched.columnar.victim_rows`) tighten it, combined with Volcano's tier
rule: a tier decides only when every plugin in it that does not abstain returns
some victims, and its victims are then among the last answer's (an empty
intersection lets the next plugin start over), so a tier in which a plugin that
never abstains has no possible victim on a node offers nothing there, and
otherwise offers at most the union of its plugins' bounds (every task, if one of
them has no bound). A node where the preemptor does not fit even the bound fails
``ValidateVictims`` whatever the plugins say, and visiting it changes nothing:
skipping it is the same decision without the plugin calls (so the Preemptable
and Reclaimable functions are not asked about such nodes: they are queries, and
a plugin returns victims among the tasks it is offered).

The rows are rewritten only for the nodes the columns saw change
(:attr:`NodeColumns.changes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from batchsched.api.resource import MIN_RESOURCE
from batchsched.columnar.node_columns import BoolArray, FloatArray, IndexArray, NodeColumns
from batchsched.columnar.victim_rows import VictimBoundFn, VictimRows, preemptable_bounds
from batchsched.framework.events import Event, EventHandler

if TYPE_CHECKING:
    from batchsched.api.node import NodeInfo
    from batchsched.api.task import TaskInfo
    from batchsched.framework.session import Session

__all__ = ["EvictionRoom"]

#: Slack for summing in another order than ``ValidateVictims`` does: the bound rules a
#: node out only when the preemptor misses it by clearly more than the epsilon.
_RELATIVE_SLACK = 1e-9


class EvictionRoom:
    """Per node of a session, the most room evictions could make for a preemptor
    (see the module docstring)."""

    def __init__(self, ssn: Session, point: str = "preemptable") -> None:
        self.ssn = ssn
        self.point = point
        self._rows: VictimRows | None = None
        self._changes: list[int] | None = None
        self._read = 0
        self._following_jobs = False

    def hopeless(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> BoolArray | None:
        """Per node of ``nodes``, True where ``task`` cannot fit however the plugins
        chose victims; None when the columns cannot tell (then every node must be
        visited)."""
        columns = NodeColumns.of(self.ssn)
        positions = columns.positions_of(nodes)
        if positions is None:
            return None
        return self.hopeless_at(task, positions)

    def hopeless_at(self, task: TaskInfo, positions: IndexArray) -> BoolArray:
        """:meth:`hopeless` for the nodes of the session's node columns ``positions``."""
        columns = NodeColumns.of(self.ssn)
        columns.sync()
        rows, request = columns.request(task.init_resreq)  # may add dimensions
        table = self._in_step(columns)
        tiers = self._bounded_tiers()
        if tiers is not None and 4 * len(positions) < len(columns.nodes):
            table = table.of_nodes(positions)  # a few nodes: their rows alone
        possible = None if tiers is None else self._possible_victims(task, table, tiers)
        room = columns.future_idle[rows][:, positions]
        every_row = table.per_node[rows][:, positions]
        if possible is None:  # every row
            room = room + every_row
        else:
            room = room + self._freed(table, possible, rows, every_row, positions)
        short = request[:, None] - room
        # The per-node sums of every row enter the scale: freed room may be worked out
        # from them by subtraction, whose rounding is relative to them.
        scale = np.abs(request)[:, None] + np.abs(room) + np.abs(every_row)
        slack = MIN_RESOURCE + _RELATIVE_SLACK * scale
        missed: BoolArray = np.logical_or.reduce(short >= slack, axis=0)
        return missed

    @staticmethod
    def _freed(table: VictimRows, possible: BoolArray, rows: IndexArray,
               every_row: FloatArray, positions: IndexArray) -> FloatArray:
        """Per candidate node and request row, the requests of the possible victims:
        summed over them, or over the other rows and taken from the node's sum of
        every row, whichever rows are fewer."""
        active = table.active
        chosen = np.flatnonzero(possible)
        others = np.flatnonzero(active & ~possible)
        width = len(table.columns.nodes)
        if len(chosen) <= len(others):
            picked, sign = chosen, 1.0
        else:
            picked, sign = others, -1.0
        where = table.node[picked]
        sums: FloatArray = np.stack([
            np.bincount(where, weights=table.request[row][picked], minlength=width)
            for row in rows.tolist()]).astype(np.float64, copy=False)[:, positions]
        if sign > 0:
            return sums
        # Rounding may leave a hair below zero: never count less than nothing freed.
        freed: FloatArray = np.maximum(every_row - sums, 0.0)
        return freed

    def _bounded_tiers(self) -> list[list[tuple[str, VictimBoundFn | None]]] | None:
        """The tiers of the point with each plugin's victim bound (None for a plugin
        without one); None when no plugin of any tier has one (every row is then a
        possible victim)."""
        bounds = preemptable_bounds(self.ssn) if self.point == "preemptable" else {}
        tiers = [[(name, bounds.get(name)) for name, _ in tier]
                 for tier in self.ssn.tiers_for(self.point) if tier]
        if tiers and not any(bound is not None for tier in tiers for _, bound in tier):
            return None
        return tiers

    def _possible_victims(
        self, task: TaskInfo, table: VictimRows,
        tiers: list[list[tuple[str, VictimBoundFn | None]]],
    ) -> BoolArray:
        """The rows some tier could return as victims for ``task``."""
        active = table.active
        width = len(table.columns.nodes)
        node_of_row = np.where(active, table.node, 0)
        possible = np.zeros(len(active), dtype=np.bool_)
        for tier in tiers:
            offered = np.zeros(len(active), dtype=np.bool_)
            unbounded = False
            silent = np.zeros(width, dtype=np.bool_)  # nodes where the tier offers nothing
            for _, bound in tier:
                mask = bound(task, table) if bound is not None else None
                if mask is None:
                    unbounded = True
                    continue
                mask = mask & active
                offered |= mask
                has_some = np.zeros(width, dtype=np.bool_)
                has_some[table.node[mask]] = True
                silent |= ~has_some
            if unbounded:
                offered = active.copy()
            offered &= ~silent[node_of_row]
            possible |= offered
        return possible

    def _job_moved(self, event: Event) -> None:
        if self._rows is not None:
            self._rows.job_changed(event.task.job)

    def _in_step(self, columns: NodeColumns) -> VictimRows:
        if not self._following_jobs:
            # Per-job values of the plugins' bounds are kept until the job's tasks move.
            self.ssn.add_event_handler(EventHandler(
                allocate=self._job_moved, deallocate=self._job_moved))
            self._following_jobs = True
        rows = self._rows
        if (rows is None or rows.columns is not columns
                or columns.changes is not self._changes
                or rows.request.shape[0] != len(columns.dimensions)):
            rows = self._rows = VictimRows(columns)
            self._changes = columns.changes
            self._read = len(columns.changes)
            return rows
        changes = columns.changes
        if self._read < len(changes):
            for i in set(changes[self._read:]):
                rows.rewrite(i, columns.nodes[i])
            self._read = len(changes)
        return rows
