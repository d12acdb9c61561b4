"""A columnar mirror of a session's nodes, for vectorised node choice.

:class:`NodeColumns` holds, for every node of ``ssn.node_list`` (same order:
node ``i`` is column ``i``), its allocatable, idle, used, releasing, pipelined
and future-idle amounts as ``float64`` arrays of shape ``[dimensions, nodes]``,
plus the number of tasks on each node. Dimension 0 is cpu, 1 memory, 2 pods,
then every other resource seen on a node or a task of the session, sorted by
name; a dimension a node does not have reads 0, as ``Resource.get`` does.

The mirror is built on first use (:meth:`NodeColumns.of`), so a session that
never asks for it pays nothing. It stays in step through ``NodeInfo.on_change``:
a node whose tasks change is marked dirty, and :meth:`NodeColumns.sync` copies
the dirty nodes' figures from their ``Resource`` objects (a copy, not a
re-computation, so the arrays hold bit for bit what the scalar path reads;
``future_idle`` is ``(idle + releasing) - pipelined`` with the same float
operations as ``NodeInfo.future_idle``). Every reader calls :meth:`sync` first.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from batchsched._carried import Carried
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.resource import CPU, MEMORY, MIN_RESOURCE, PODS, Resource

__all__ = ["BASE_DIMENSIONS", "Candidates", "NodeColumns", "fits_mask"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]

#: The dimensions every mirror has, in this order.
BASE_DIMENSIONS = (CPU, MEMORY, PODS)

_EXTRA_KEY = "batchsched.node_columns"


def fits_mask(request: FloatArray, available: FloatArray) -> BoolArray:
    """Volcano's ``less_equal`` per column: every row of ``request`` (shape ``[k]``)
    within the epsilon of the same row of ``available`` (shape ``[k, n]``).

    ``l < r or |l - r| < 0.1`` is exactly ``l - r < 0.1`` in floating point:
    when ``l < r`` the rounded difference is negative, otherwise it is the
    absolute difference. (Infinities and NaNs give the same answer both ways.)
    """
    diff = request[:, None] - available
    ok: BoolArray = np.less(diff, MIN_RESOURCE, out=np.empty(diff.shape, dtype=np.bool_))
    if ok.shape[0] == 1:
        first: BoolArray = ok[0]
        return first
    every: BoolArray = np.logical_and.reduce(ok, axis=0)
    return every


class Candidates:
    """A set of node indices in session order, handed to vectorised scorers.

    ``indices`` is sorted; ``span`` is the equivalent slice when the indices are
    contiguous (then :meth:`pick` returns views instead of copies).
    """

    __slots__ = ("indices", "span")

    def __init__(self, indices: IndexArray) -> None:
        self.indices = indices
        size = len(indices)
        first = int(indices[0]) if size else 0
        self.span: slice | None = (
            slice(first, first + size)
            if size and int(indices[-1]) - first + 1 == size else None
        )

    def pick(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The candidates' entries of a per-node array (last axis = nodes)."""
        if self.span is not None:
            return array[..., self.span]
        return array[..., self.indices]

    def pick_rows(self, array: npt.NDArray[Any], rows: IndexArray) -> npt.NDArray[Any]:
        """``array[rows]`` restricted to the candidates (one gather)."""
        if self.span is not None:
            return array[rows, self.span]
        return array[rows[:, None], self.indices]

    def __len__(self) -> int:
        return len(self.indices)


#: Each job's resource names, kept in its memo while its tasks do not change (a job's
#: mutation count names its state; an unchanged job is the same object session after
#: session).
_NAMES_KEY = "node-columns.resource-names"
#: Per cache whose sessions reuse node objects (``Session.reuses_objects``), the last
#: mirror built, which the next session carries over (:meth:`NodeColumns.carry_over`).
_carried: Carried[NodeColumns] = Carried()
_NAME_OF = operator.attrgetter("name")


def _scalar_names(node: NodeInfo) -> frozenset[str]:
    """The scalar names the node's figures hold (allocatable, idle, used, releasing,
    pipelined)."""
    names: set[str] = set()
    for res in (node.allocatable, node.idle, node.used, node.releasing, node.pipelined):
        if res.scalars:
            names.update(res.scalars)
    return frozenset(names)


def _resource_names(job: JobInfo) -> frozenset[str]:
    """The scalar resource names the job's tasks ask for (requests and init requests)."""
    kept = job.memo.get(_NAMES_KEY)
    if kept is not None and kept[0] == job.mutations:
        names_kept: frozenset[str] = kept[1]
        return names_kept
    names: set[str] = set()
    for task in job.tasks.values():
        names.update(task.init_resreq.scalars)
        names.update(task.resreq.scalars)
    frozen = frozenset(names)
    job.memo[_NAMES_KEY] = (job.mutations, frozen)
    return frozen


class NodeColumns:
    """The nodes of one session as arrays (see the module docstring)."""

    def __init__(self, nodes: Sequence[NodeInfo], extra_dimensions: Iterable[str] = ()) -> None:
        self.nodes: list[NodeInfo] = list(nodes)
        #: The sequence the mirror was built from (the session's ``node_list``).
        self.source: Sequence[NodeInfo] = nodes
        self.names: list[str] = [node.name for node in self.nodes]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        #: Per row, the scalar names its node's figures hold; and per name, how many
        #: rows hold it (a carried mirror learns its dimensions from the rows it copies).
        self._row_names: list[frozenset[str]] = [_scalar_names(node) for node in self.nodes]
        self._name_rows: Counter[str] = Counter(
            name for row in self._row_names for name in row)
        names: set[str] = set(extra_dimensions)
        names.update(self._name_rows)
        names.difference_update(BASE_DIMENSIONS)
        self.dimensions: list[str] = [*BASE_DIMENSIONS, *sorted(names)]
        self.dimension_index: dict[str, int] = {n: i for i, n in enumerate(self.dimensions)}
        self._dirty: list[int] = []
        self._marks: list[Callable[[NodeInfo], None]] = []
        self._remembered: tuple[list[NodeInfo], IndexArray] | None = None
        #: Node indices refreshed by each :meth:`sync`, oldest first (append-only): what
        #: moved since a given moment is ``changes[mark:]`` with ``mark = len(changes)``.
        self.changes: list[int] = []
        #: Per dimension, whether every node has some of it allocatable.
        self.everywhere: list[bool] = []
        self._build()

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def of(cls, ssn: Any) -> NodeColumns:
        """The session's mirror, built on first use over ``ssn.node_list``.

        Every resource name of the session's tasks becomes a dimension too, so
        that any task's request can be compared column by column.
        """
        extra: dict[str, Any] = ssn.extra
        columns = extra.get(_EXTRA_KEY)
        if isinstance(columns, NodeColumns) and columns.source is ssn.node_list:
            return columns
        seen: set[str] = set()
        for job in ssn.jobs.values():
            seen.update(_resource_names(job))
        columns = _carried.get(
            ssn, lambda: cls(ssn.node_list, seen),
            lambda carried, renewed: carried.carry_over(ssn.node_list, seen, renewed))
        columns.source = ssn.node_list
        columns.attach()
        extra[_EXTRA_KEY] = columns
        return columns

    @classmethod
    def built_for(cls, ssn: Any) -> NodeColumns | None:
        """The session's mirror if something already built it, else None (never builds)."""
        columns = ssn.extra.get(_EXTRA_KEY)
        if isinstance(columns, NodeColumns) and columns.source is ssn.node_list:
            return columns
        return None

    def future_idle_total(self) -> Resource:
        """Every node's future idle summed: what ``Resource.add`` over the nodes in
        session order gives, bit for bit (an accumulation adds one node after the
        other, as the loop does; a pairwise sum would round differently). A resource
        whose total is 0 is left out, which every comparison reads alike."""
        self.sync()
        if not self.nodes:
            return Resource()
        totals: list[float] = np.add.accumulate(self.future_idle, axis=1)[:, -1].tolist()
        scalars = {name: amount for name, amount
                   in zip(self.dimensions[2:], totals[2:], strict=True) if amount}
        return Resource(totals[0], totals[1], scalars)

    def carry_over(self, nodes: Sequence[NodeInfo], extra_dimensions: Iterable[str],
                   renewed: frozenset[str] | None = None) -> bool:
        """Serve a later session over ``nodes`` from these arrays: True when its nodes
        are the same names in the same order and its dimensions the same (then every
        row whose node object is new, or changed since it was copied, is copied
        again); False when a fresh mirror is needed. The cache hands the session the
        very node objects it handed out before when nothing changed them (incremental
        snapshots), so most rows stay as they are, and only the others are read; with
        ``renewed`` (``Session.nodes_renewed_since``), only the nodes it names are."""
        kept, copied, names = self.nodes, self._copied, self.names
        if len(nodes) != len(kept):
            return False
        if renewed is not None and list(map(_NAME_OF, nodes)) == names:
            index = self.index
            changed = sorted(index[name] for name in renewed if name in index)
        else:
            changed = [i for i, node in enumerate(nodes)
                       if node is not kept[i] or node.mutations != copied[i]]
            if any(nodes[i].name != names[i] for i in changed):
                return False
        row_names = {i: _scalar_names(nodes[i]) for i in changed}
        counts = self._name_rows
        moved = {i: row for i, row in row_names.items() if row != self._row_names[i]}
        if moved:
            counts = counts.copy()
            for i, row in moved.items():
                counts.subtract(self._row_names[i])
                counts.update(row)
            counts = +counts  # names no row holds any more leave
        wanted = set(extra_dimensions)
        wanted.update(counts)
        wanted.difference_update(BASE_DIMENSIONS)
        if len(wanted) != len(self.dimensions) - len(BASE_DIMENSIONS) or any(
                name not in self.dimension_index for name in wanted):
            return False  # a fresh mirror has other rows: build it
        self._name_rows = counts
        self._dirty.clear()
        self.changes = []
        count = len(self.dimensions)
        for i in changed:
            node = nodes[i]
            kept[i] = node
            self._row_names[i] = row_names[i]
            self.allocatable[:, i] = np.zeros(count)
            self._column(self.allocatable, i, node.allocatable)
            self._refresh(i, node)
        if changed:
            self.everywhere = (self.allocatable != 0).all(axis=1).tolist()
        return True

    def _build(self) -> None:
        count, width = len(self.dimensions), len(self.nodes)
        self.allocatable: FloatArray = np.zeros((count, width))
        # One block holds the figures that move, so that a node's refresh is one write.
        self._moving: FloatArray = np.zeros((5, count, width))
        self.idle: FloatArray = self._moving[0]
        self.used: FloatArray = self._moving[1]
        self.future_idle: FloatArray = self._moving[2]
        self.releasing: FloatArray = self._moving[3]
        self.pipelined: FloatArray = self._moving[4]
        # The same block, one row per (figure, dimension): idle, used and future idle of
        # a node are the column's first 3 * dimensions entries.
        self._moving_rows: FloatArray = self._moving.reshape(5 * count, width)
        self.task_count = np.zeros(width, dtype=np.int64)
        #: Each node's mutation count when its row was last copied.
        self._copied: list[int] = [0] * width
        #: Nodes whose releasing or pipelined amounts are not all zero.
        self.in_transition = np.zeros(width, dtype=np.bool_)
        self._in_transition: set[int] = set()
        self._scalar_names = self.dimensions[2:]
        for i, node in enumerate(self.nodes):
            self._column(self.allocatable, i, node.allocatable)
            self._refresh(i, node)
        self.everywhere = (self.allocatable != 0).all(axis=1).tolist()

    def _column(self, array: FloatArray, i: int, res: Resource) -> None:
        array[0, i] = res.milli_cpu
        array[1, i] = res.memory
        scalars = res.scalars
        if scalars:
            index = self.dimension_index
            for name, amount in scalars.items():
                array[index[name], i] = amount

    def _refresh(self, i: int, node: NodeInfo) -> None:
        """Copy node ``i``'s changing figures (future idle too, with
        ``NodeInfo.future_idle``'s float operations)."""
        names = self._scalar_names
        values = self._values
        idle = values(node.idle, names)
        used = values(node.used, names)
        self.task_count[i] = len(node.tasks)
        self._copied[i] = node.mutations
        releasing, pipelined = node.releasing, node.pipelined
        moving = _nonzero(releasing) or _nonzero(pipelined)
        if moving or i in self._in_transition:
            releasing_values = values(releasing, names)
            pipelined_values = values(pipelined, names)
            future = [(a + b) - c for a, b, c
                      in zip(idle, releasing_values, pipelined_values, strict=True)]
            self._moving[:, :, i] = (idle, used, future, releasing_values, pipelined_values)
            self.in_transition[i] = moving
            if moving:
                self._in_transition.add(i)
            else:
                self._in_transition.discard(i)
        else:
            # One write of a flat list: numpy converts it faster than nested ones.
            self._moving_rows[:3 * len(idle), i] = [
                *idle, *used, *[(a + 0.0) - 0.0 for a in idle]]

    @staticmethod
    def _values(res: Resource, names: list[str]) -> list[float]:
        scalars = res.scalars
        if not scalars:
            return [res.milli_cpu, res.memory, *([0.0] * len(names))]
        get = scalars.get
        return [res.milli_cpu, res.memory, *[get(name, 0.0) for name in names]]

    def attach(self) -> None:
        """Follow every node's changes (chaining any ``on_change`` already set)."""
        marks = self._marks
        if len(marks) != len(self.nodes):
            # One watcher per row, made once: a mirror carried over to the next
            # session attaches the same ones again.
            marks[:] = [self._watcher(i, None) for i in range(len(self.nodes))]
        for i, node in enumerate(self.nodes):
            previous = node.on_change
            if previous is None:
                node.on_change = marks[i]
            elif previous is not marks[i]:
                node.on_change = self._watcher(i, previous)

    def _watcher(
        self, i: int, previous: Callable[[NodeInfo], None] | None
    ) -> Callable[[NodeInfo], None]:
        dirty = self._dirty
        if previous is None:
            def mark(node: NodeInfo) -> None:
                dirty.append(i)
            return mark

        def mark_and_chain(node: NodeInfo) -> None:
            dirty.append(i)
            previous(node)
        return mark_and_chain

    # -- keeping in step ---------------------------------------------------------------------

    def sync(self) -> None:
        """Bring the arrays up to date with every node changed since the last sync."""
        if not self._dirty:
            return
        dirty = list(dict.fromkeys(self._dirty)) if len(self._dirty) > 1 else self._dirty[:]
        self._dirty.clear()
        for i in dirty:
            node = self.nodes[i]
            if not self._known(node):
                self._grow(node)
            self._refresh(i, node)
        self.changes.extend(dirty)

    def _known(self, node: NodeInfo) -> bool:
        # After the build, a name enters a node's figures only with a task's request:
        # into used (and idle, and releasing, a part of used) or into pipelined.
        known = self.dimension_index.keys()
        return known >= node.used.scalars.keys() and known >= node.pipelined.scalars.keys()

    def _grow(self, node: NodeInfo) -> None:
        """A resource no mirror dimension covers appeared on a node: add rows for it."""
        names = set(self.dimensions[len(BASE_DIMENSIONS):])
        for res in (node.idle, node.used, node.releasing, node.pipelined):
            names.update(res.scalars)
        names.difference_update(BASE_DIMENSIONS)
        self.add_dimensions(names)

    def add_dimensions(self, names: Iterable[str]) -> None:
        """Make sure every name in ``names`` is a dimension (rebuilding the arrays if not)."""
        missing = {n for n in names if n not in self.dimension_index}
        if not missing:
            return
        others = sorted(set(self.dimensions[len(BASE_DIMENSIONS):]) | missing)
        self.dimensions = [*BASE_DIMENSIONS, *others]
        self.dimension_index = {n: i for i, n in enumerate(self.dimensions)}
        pending = list(self._dirty)
        self._dirty.clear()
        self._build()
        self.changes.extend(range(len(self.nodes)))
        self._dirty.extend(pending)

    # -- reading ------------------------------------------------------------------------------

    @property
    def has_transitions(self) -> bool:
        """Whether some node has releasing or pipelined amounts (after :meth:`sync`).

        Without any, every node's future idle equals its idle.
        """
        return bool(self._in_transition)

    def rows(self, names: Iterable[str]) -> IndexArray:
        """The row indices of resource names (adding dimensions for unknown names)."""
        names = list(names)
        index = self.dimension_index
        if any(n not in index for n in names):
            self.add_dimensions(names)
            index = self.dimension_index
        return np.array([index[n] for n in names], dtype=np.intp)

    def request(self, res: Resource) -> tuple[IndexArray, FloatArray]:
        """The rows Volcano's ``less_equal`` checks for a request, and the amounts.

        cpu and memory always; then every scalar the request holds, in row order.
        """
        index = self.dimension_index
        if any(n not in index for n in res.scalars):
            self.add_dimensions(res.scalars)
            index = self.dimension_index
        pairs = sorted([(0, res.milli_cpu), (1, res.memory),
                        *[(index[n], amount) for n, amount in res.scalars.items()]])
        return (np.array([row for row, _ in pairs], dtype=np.intp),
                np.array([amount for _, amount in pairs], dtype=np.float64))

    def positions_of(self, nodes: Sequence[NodeInfo]) -> IndexArray | None:
        """The columns of ``nodes`` (their order kept), or None if one is not a node of
        the mirror. The session's node list, and a list handed out with
        :meth:`remember` (a candidate scan's result, say), need no look-up."""
        if nodes is self.source and len(nodes) == len(self.nodes):
            return np.arange(len(nodes), dtype=np.intp)
        remembered = self._remembered
        if remembered is not None and remembered[0] is nodes and len(nodes) == len(
                remembered[1]):
            return remembered[1]
        index = self.index
        positions = np.fromiter((index.get(node.name, -1) for node in nodes), dtype=np.intp,
                                count=len(nodes))
        if bool((positions < 0).any()) or any(
                self.nodes[p] is not node for p, node in zip(positions.tolist(), nodes,
                                                             strict=True)):
            return None
        return positions

    def named(self, names: Iterable[str]) -> BoolArray:
        """Per column, whether its node's name is among ``names`` (unknown names are
        ignored)."""
        index = self.index
        mask = np.zeros(len(self.nodes), dtype=np.bool_)
        for name in names:
            at = index.get(name)
            if at is not None:
                mask[at] = True
        return mask

    def remember(self, nodes: list[NodeInfo], positions: IndexArray) -> list[NodeInfo]:
        """Note that ``nodes`` (a list this mirror's user made and will not change) are
        the columns ``positions``, for the next :meth:`positions_of`; returns ``nodes``."""
        self._remembered = (nodes, positions)
        return nodes

    def __len__(self) -> int:
        return len(self.nodes)


def _nonzero(res: Resource) -> bool:
    if res.milli_cpu or res.memory:
        return True
    scalars = res.scalars
    return bool(scalars) and any(scalars.values())
