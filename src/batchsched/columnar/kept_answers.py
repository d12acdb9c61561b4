"""The node plugins' answers kept per task template, over every node, for the fast path.

When every node plugin vouches that its answers for a node depend only on the
task's template and on that node (:func:`batchsched.columnar.forms.template_fns`),
a template's summed scores and feasibility (resource fit on future idle and the
predicates) can be worked out for every node once and kept: afterwards only the
nodes that changed need working out anew, and a scan reads the rest.

Two stores keep them, both from a template's second task on (a one-off template
would pay a whole-cluster pass for one window), both bounded (the least recently
used template goes first):

* :class:`TemplateStore` keeps each template on its own and brings it up to date
  when it is used (one call of the plugins per template and use);
* :class:`StackedStore` keeps the templates as the rows of one array and brings
  them all up to date together, with the plugins' variants for several tasks at
  once (``many=``), one call for every kept template. After a placement a
  template is usually next used a few dozen placements later, by then stale at
  as many nodes; refreshing all templates together whenever a scan reaches a
  changed node costs one call per stretch of placements instead of one per
  template and use.

Either way, a node's answers are worked out anew before a scan reads them, so the
decisions are those of answers computed afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from batchsched.api.task import TaskInfo
from batchsched.columnar.node_columns import BoolArray, FloatArray, IndexArray

__all__ = ["StackedStore", "TemplateAnswers", "TemplateStore"]

#: At most this many templates' uses are counted at a time.
_COUNTED_TEMPLATES = 65536

#: Answers for ``(tasks, nodes)``: one row per task, one column per node.
ManyFn = Callable[[Sequence[TaskInfo], IndexArray], FloatArray]
ManyFeasibleFn = Callable[[Sequence[TaskInfo], IndexArray], BoolArray]
OneFn = Callable[[TaskInfo, IndexArray], FloatArray]
OneFeasibleFn = Callable[[TaskInfo, IndexArray], BoolArray]


class TemplateAnswers:
    """One template's summed scores and feasibility over every node. The nodes in
    ``stale`` changed since their answers were worked out; ``refresh()`` works them
    out anew (the set may be shared with other templates, refreshed together)."""

    __slots__ = ("feasible", "refresh", "scores", "stale")

    def __init__(self, scores: FloatArray, feasible: BoolArray, stale: set[int],
                 refresh: Callable[[], None]) -> None:
        self.scores = scores
        self.feasible = feasible
        self.stale = stale
        self.refresh = refresh


class _Uses:
    """How often each template was asked for (a template is kept from its second use)."""

    __slots__ = ("counts", "threshold")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.counts: dict[Hashable, int] = {}

    def worth_keeping(self, key: Hashable) -> bool:
        if len(self.counts) >= _COUNTED_TEMPLATES:
            self.counts.clear()  # a workload of one-off templates: start counting again
        count = self.counts[key] = self.counts.get(key, 0) + 1
        return count >= self.threshold


class TemplateStore:
    """Templates kept one by one, each brought up to date when used."""

    def __init__(self, capacity: int, threshold: int, nodes: int, *, score: OneFn,
                 feasible: OneFeasibleFn) -> None:
        self.capacity = max(1, capacity)
        self._uses = _Uses(threshold)
        self._score = score
        self._feasible = feasible
        self._nodes = nodes
        #: Per template, least recently used first: its answers and how much of the
        #: node-change log they have read.
        self._entries: dict[Hashable, tuple[TemplateAnswers, int]] = {}

    def get(self, task: TaskInfo, key: Hashable, changes: list[int]) -> TemplateAnswers | None:
        """The template's answers with the nodes changed since marked stale
        (``changes`` is the append-only node-change log); None while not kept."""
        entry = self._entries.pop(key, None)
        if entry is None:
            if not self._uses.worth_keeping(key):
                return None
            while len(self._entries) >= self.capacity:
                del self._entries[next(iter(self._entries))]
            everything = np.arange(self._nodes)
            answers = TemplateAnswers(self._score(task, everything),
                                      self._feasible(task, everything), set(), _nothing)
            answers.refresh = self._refresher(task, answers)
        else:
            answers, read = entry
            if read < len(changes):
                answers.stale.update(changes[read:])
        self._entries[key] = (answers, len(changes))
        return answers

    def _refresher(self, task: TaskInfo, answers: TemplateAnswers) -> Callable[[], None]:
        def refresh() -> None:
            if not answers.stale:
                return
            stale = np.array(sorted(answers.stale), dtype=np.intp)
            # Both first: an error (a VectorFallback) leaves the kept answers as they were.
            scores, feasible = self._score(task, stale), self._feasible(task, stale)
            answers.scores[stale] = scores
            answers.feasible[stale] = feasible
            answers.stale.clear()
        return refresh


def _nothing() -> None:
    pass


class StackedStore:
    """Templates kept as the rows of one array, all brought up to date together."""

    def __init__(self, capacity: int, threshold: int, nodes: int, *, score: ManyFn,
                 feasible: ManyFeasibleFn) -> None:
        self.capacity = max(1, capacity)
        self._uses = _Uses(threshold)
        self._score = score
        self._feasible = feasible
        self._nodes = nodes
        self.scores: FloatArray = np.empty((0, nodes))
        self.feasible: BoolArray = np.empty((0, nodes), dtype=np.bool_)
        #: Row of each kept template, least recently used first.
        self._rows: dict[Hashable, int] = {}
        #: A task of each row's template (the plugins are asked about it).
        self._tasks: list[TaskInfo] = []
        self.stale: set[int] = set()
        self._read = 0

    def get(self, task: TaskInfo, key: Hashable, changes: list[int]) -> TemplateAnswers | None:
        """As :meth:`TemplateStore.get`; the stale nodes are every row's."""
        if self._read < len(changes):
            self.stale.update(changes[self._read:])
            self._read = len(changes)
        row = self._rows.pop(key, None)
        if row is None:
            if not self._uses.worth_keeping(key):
                return None
            row = self._add(task)
        self._rows[key] = row
        return TemplateAnswers(self.scores[row], self.feasible[row], self.stale, self.refresh)

    def _add(self, task: TaskInfo) -> int:
        """Work the template out over every node and give it a row (the least recently
        used template's, when full; a new one otherwise)."""
        everything = np.arange(self._nodes)
        scores = self._score([task], everything)[0]
        feasible = self._feasible([task], everything)[0]
        if len(self._rows) >= self.capacity:
            row = self._rows.pop(next(iter(self._rows)))
            self._tasks[row] = task
        else:
            row = len(self._tasks)
            self._tasks.append(task)
            if row >= len(self.scores):
                grown = max(4, 2 * len(self.scores))
                self.scores = _grow(self.scores, grown)
                self.feasible = _grow(self.feasible, grown)
        self.scores[row] = scores
        self.feasible[row] = feasible
        return row

    def refresh(self) -> None:
        """Work out every kept template's answers at the stale nodes."""
        if not self.stale:
            return
        stale = np.array(sorted(self.stale), dtype=np.intp)
        count = len(self._tasks)
        # Both first: an error (a VectorFallback) leaves the kept answers as they were.
        scores = self._score(self._tasks, stale)
        feasible = self._feasible(self._tasks, stale)
        self.scores[:count, stale] = scores
        self.feasible[:count, stale] = feasible
        self.stale.clear()


def _grow(array: npt.NDArray[Any], rows: int) -> npt.NDArray[Any]:
    grown = np.zeros((rows, array.shape[1]), dtype=array.dtype)
    grown[:len(array)] = array
    return grown
