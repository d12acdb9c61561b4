"""The tasks that could be victims, as rows, and the plugins' bounds over them.

Preempt visits candidate nodes one at a time and asks the Preemptable plugins for
victims on each. Where they would choose none that makes room, the visit decides
nothing, and on a busy cluster such visits make the action grow with the square
of the nodes (every node whose last task its gang may not lose is visited again
by every later preemptor). A plugin may tell, for all tasks at once, which ones
it could ever return as victims for a preemptor: its *victim bound*, a boolean
per row of :class:`VictimRows`, registered beside its Preemptable function::

    ssn.add_preemptable_fn(self.name, self.victims)                     # the reference
    columnar.add_preemptable_bound_fn(ssn, self.name, self.victim_bound)

A bound must be a superset: a task the plugin might return for some set of
candidates that includes it is True. Returning a mask also promises that the
plugin's Preemptable function does not abstain for this preemptor (it returns a
list, maybe empty); a plugin that might abstain, or cannot tell, returns None.
:mod:`batchsched.columnar.eviction_room` combines the bounds with Volcano's tier
rule to rule nodes out; a plugin without a bound rules nothing out.

Rows are the tasks placed on the session's nodes (Allocated, Binding, Bound or
Running) that are preemptable; rows of a node are rewritten when the node
columns see it change (:attr:`NodeColumns.changes`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from batchsched.api.types import TaskStatus
from batchsched.columnar.node_columns import BoolArray, FloatArray, NodeColumns

if TYPE_CHECKING:
    from batchsched.api.node import NodeInfo
    from batchsched.api.task import TaskInfo
    from batchsched.framework.session import Session

__all__ = ["VictimBoundFn", "VictimRows", "add_preemptable_bound_fn", "preemptable_bounds"]

IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]
#: ``bound(preemptor, rows)``: True per row the plugin might return, or None.
VictimBoundFn = Callable[["TaskInfo", "VictimRows"], "BoolArray | None"]

_BOUNDS_KEY = "batchsched.victim_bounds"
#: Statuses of a row (see the module docstring): a victim's (Bound, Running), and those
#: a task reaches without its node's figures moving (Allocated, Binding), so that a
#: status change the columns do not see never leaves a victim out.
_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND,
                     TaskStatus.RUNNING})


def add_preemptable_bound_fn(ssn: Session, plugin: str, fn: VictimBoundFn) -> None:
    """Offer ``fn(preemptor, rows)`` as ``plugin``'s victim bound (module docstring)."""
    bounds: dict[str, VictimBoundFn] = ssn.extra.setdefault(_BOUNDS_KEY, {})
    bounds[plugin] = fn


def preemptable_bounds(ssn: Session) -> dict[str, VictimBoundFn]:
    """The victim bounds the session's plugins registered, by plugin name."""
    bounds: dict[str, VictimBoundFn] = ssn.extra.get(_BOUNDS_KEY, {})
    return bounds


class VictimRows:
    """One row per placed, preemptable task of the session's nodes.

    Per row: ``node`` (its column in :class:`NodeColumns`, -1 for a free row),
    ``job`` (a code: ``job_uids[code]`` is the job's uid), ``priority`` (the task's),
    ``request`` (``[dimensions, rows]``, the columns' dimensions) and ``tasks`` (the
    task uid, None for a free row). Read ``active`` for the rows in use.
    """

    def __init__(self, columns: NodeColumns) -> None:
        self.columns = columns
        self.job_uids: list[str] = []
        self._job_codes: dict[str, int] = {}
        self._rows_of_node: dict[int, list[int]] = {}
        self._free: list[int] = []
        #: Codes of jobs whose tasks moved, in order (append-only).
        self._changed_jobs: list[int] = []
        self._per_job: dict[str, tuple[FloatArray, int]] = {}
        self.tasks: list[str | None] = []
        size = 64
        self.node: IntArray = np.full(size, -1, dtype=np.int64)
        self.job: IntArray = np.zeros(size, dtype=np.int64)
        self.priority: IntArray = np.zeros(size, dtype=np.int64)
        self.request: FloatArray = np.zeros((len(columns.dimensions), size))
        #: Per node (``[dimensions, nodes]``), the sum of its rows' requests.
        self.per_node: FloatArray = np.zeros((len(columns.dimensions), len(columns.nodes)))
        for i, node in enumerate(columns.nodes):
            self.rewrite(i, node)

    @property
    def active(self) -> BoolArray:
        used: BoolArray = self.node >= 0
        return used

    def job_code(self, uid: str) -> int:
        code = self._job_codes.get(uid)
        if code is None:
            code = self._job_codes[uid] = len(self.job_uids)
            self.job_uids.append(uid)
        return code

    def rewrite(self, i: int, node: NodeInfo) -> None:
        """Make node ``i``'s rows its current placed, preemptable tasks."""
        for row in self._rows_of_node.pop(i, ()):
            self.node[row] = -1
            self.tasks[row] = None
            self._free.append(row)
        rows: list[int] = []
        index = self.columns.dimension_index
        total = [0.0] * len(self.columns.dimensions)
        for held in node.tasks.values():
            if held.status not in _PLACED or not held.preemptable:
                continue
            row = self._take_row()
            self.node[row] = i
            self.job[row] = self.job_code(held.job)
            self.priority[row] = held.priority
            self.tasks[row] = held.uid
            values = [0.0] * len(total)
            req = held.resreq
            values[0] = req.milli_cpu
            values[1] = req.memory
            for name, amount in req.scalars.items():
                at = index.get(name)
                if at is not None:
                    values[at] = amount
                # A name outside the columns: no preemptor asks for it (asking adds it).
            self.request[:, row] = values
            for at, amount in enumerate(values):
                total[at] += amount
            rows.append(row)
        if rows:
            self._rows_of_node[i] = rows
        self.per_node[:, i] = total

    def _take_row(self) -> int:
        if self._free:
            return self._free.pop()
        row = len(self.tasks)
        if row == len(self.node):
            grown = 2 * row
            self.node = np.concatenate([self.node, np.full(row, -1, dtype=np.int64)])
            self.job = np.resize(self.job, grown)
            self.priority = np.resize(self.priority, grown)
            self.request = np.concatenate([self.request, np.zeros_like(self.request)], axis=1)
        self.tasks.append(None)
        return row

    def of_nodes(self, positions: IndexArray) -> VictimRows:
        """The rows of the nodes at ``positions`` only, as a table of their own that
        shares this one's job codes and kept per-job values (for bounds asked about
        a few nodes; it is not kept in step, so read it at once)."""
        picked = [row for i in positions.tolist() for row in self._rows_of_node.get(i, ())]
        chosen = np.array(picked, dtype=np.int64)
        part: VictimRows = object.__new__(VictimRows)
        part.columns = self.columns
        part.job_uids = self.job_uids
        part._job_codes = self._job_codes
        part._changed_jobs = self._changed_jobs
        part._per_job = self._per_job
        part._rows_of_node = {}
        part._free = []
        part.tasks = [self.tasks[row] for row in picked]
        part.node = self.node[chosen]
        part.job = self.job[chosen]
        part.priority = self.priority[chosen]
        part.request = self.request[:, chosen]
        part.per_node = self.per_node
        return part

    def job_changed(self, uid: str) -> None:
        """A task of the job moved (an allocate or deallocate event of the session):
        its values in :meth:`per_job` are worked out again when next read."""
        code = self._job_codes.get(uid)
        if code is not None:
            self._changed_jobs.append(code)

    def per_job(self, key: str, value: Callable[[str], float]) -> FloatArray:
        """``value(job uid)`` for every job code (an array indexed by ``self.job``),
        kept under ``key`` and worked out again only for jobs added or changed since
        (:meth:`job_changed`). ``value`` must depend only on the job's state, which
        moves with the session's allocate and deallocate events (and on nothing
        that changes within the session otherwise)."""
        uids = self.job_uids
        log = self._changed_jobs
        kept = self._per_job.get(key)
        if kept is None:
            values = np.array([value(uid) for uid in uids], dtype=np.float64)
        else:
            values, read = kept
            known = len(values)
            if known < len(uids):
                values = np.concatenate([values, np.array(
                    [value(uid) for uid in uids[known:]], dtype=np.float64)])
            for code in set(log[read:]):
                if code < known:
                    values[code] = value(uids[code])
        self._per_job[key] = (values, len(log))
        # Indexed by the rows' job codes: with no job yet, one placeholder for the
        # unused rows (it is not kept, so a job coding 0 later gets its own value).
        return values if len(values) else np.zeros(1, dtype=np.float64)
