"""The fit errors of a task the fast path could place nowhere, built on first use.

A task that fits no node records every node's reason, in the reference scan's
order. On a large cluster most reasons are ``Insufficient <resource>``, worked
out with arrays by :class:`~batchsched.columnar.selector.VectorNodeSelector`;
:class:`UnplacedFitErrors` holds them as one code per node and builds the
per-node :class:`~batchsched.api.fit.FitError` objects only if someone reads
them (the summary needs none).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from batchsched.api.fit import FitError, FitErrors, FitStatus
from batchsched.api.resource import CPU, MEMORY
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode

__all__ = ["UnplacedFitErrors", "dimension_rank"]


def dimension_rank(name: str) -> tuple[int, str]:
    """cpu, then memory, then the other resources by name (the order of the reason)."""
    if name == CPU:
        return 0, ""
    if name == MEMORY:
        return 1, ""
    return 2, name


class UnplacedFitErrors(FitErrors):
    """The fit errors of every node for one task, built on first use.

    ``reasons[i]`` indexes ``texts`` (node ``i`` lacks that resource) or is -1 (its
    error is ``others[i]``). The nodes come in scan order from ``start``, as the
    reference records them; the summary needs no per-node objects.
    """

    def __init__(
        self, task: TaskInfo, names: list[str], start: int, *, reasons: npt.NDArray[np.int64],
        texts: list[str], others: dict[int, FitError],
    ) -> None:
        self.error = ""
        self._task = task
        self._names = names
        self._start = start
        self._reasons = reasons
        self._texts = texts
        self._others = others
        self._nodes: dict[str, FitError] | None = None

    @property
    def nodes(self) -> dict[str, FitError]:
        if self._nodes is None:
            task, names, reasons, texts = self._task, self._names, self._reasons, self._texts
            total = len(names)
            nodes: dict[str, FitError] = {}
            for offset in range(total):
                position = (self._start + offset) % total
                reason = int(reasons[position])
                if reason < 0:
                    err = self._others[position]
                    err.node_name = names[position]
                else:
                    err = FitError(task.namespace, task.name, names[position],
                                   [FitStatus(FitStatusCode.UNSCHEDULABLE, texts[reason])])
                nodes[names[position]] = err
            self._nodes = nodes
        return self._nodes

    @nodes.setter
    def nodes(self, value: dict[str, FitError]) -> None:
        self._nodes = value

    def unresolvable_nodes(self) -> set[str]:
        # "Insufficient ..." is Unschedulable: only the other errors can be unresolvable.
        return {self._names[p] for p, err in self._others.items() if err.unresolvable}

    def __str__(self) -> str:
        if self._nodes is not None:
            return super().__str__()
        head = self.error or f"0/{len(self._names)} nodes are unavailable"
        if not len(self._names):
            return head
        histogram: dict[str, int] = {}
        counts = np.bincount(self._reasons[self._reasons >= 0], minlength=len(self._texts))
        for text, count in zip(self._texts, counts.tolist(), strict=True):
            if count:
                histogram[text] = histogram.get(text, 0) + count
        for err in self._others.values():
            for reason in err.reasons:
                histogram[reason] = histogram.get(reason, 0) + 1
        parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
        return f"{head}: {', '.join(parts)}."

    def __bool__(self) -> bool:
        return bool(len(self._names)) or bool(self.error)
