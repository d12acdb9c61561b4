"""gpu-random: a node and a device drawn at random (the FGD paper's Random baseline).

One candidate, drawn uniformly, scores ``100 x gpu-random.weight`` and the
others 0 (a batch node-order score: the draw needs the candidates). A share goes
on a device drawn uniformly among those it fits; whole GPUs are the
lowest-indexed free ones. Each draw is a hash of ``gpu-random.seed`` (default 0;
``batchsched simulate --seed`` sets it), the task and what it chooses among, so a
run is reproducible, and the default and reference node-choice paths draw alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from batchsched import columnar
from batchsched.api.devices import gpu_ask
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.columnar.node_columns import Candidates, FloatArray, NodeColumns
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session

__all__ = ["RandomPlugin"]


class RandomPlugin:
    """``gpu-random`` (see the module docstring)."""

    name = "gpu-random"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(f"{self.name}.weight", 1, owner=self.name)
        self.seed = arguments.get_int(f"{self.name}.seed", 0, owner=self.name)
        arguments.warn_unknown(self.name, [f"{self.name}.weight", f"{self.name}.seed"])

    def on_session_open(self, ssn: Session) -> None:
        if not self.weight:
            return
        ssn.add_batch_node_order_fn(self.name, self.batch_scores)
        columnar.add_batch_node_order_fn(ssn, self.name, self.column_scores)
        ssn.add_device_select_fn(self.name, self.devices)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    def draw(self, count: int, *parts: str) -> int:
        """A uniform draw among ``count``, a function of the seed and ``parts`` (the
        task and what it chooses among): both node-choice paths, which score a task
        a different number of times, draw the same."""
        digest = hashlib.blake2b("\0".join((str(self.seed), *parts)).encode(),
                                 digest_size=8).digest()
        return int.from_bytes(digest, "big") % count

    def batch_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        if not nodes:
            return {}
        drawn = self.draw(len(nodes), task.uid, *(node.name for node in nodes))
        return {node.name: float(100 * self.weight if i == drawn else 0)
                for i, node in enumerate(nodes)}

    def column_scores(self, task: TaskInfo, columns: NodeColumns,
                      candidates: Candidates) -> FloatArray:
        scores = np.zeros(len(candidates))
        if len(candidates):
            nodes = columns.nodes
            names = (nodes[i].name for i in candidates.indices.tolist())
            scores[self.draw(len(candidates), task.uid, *names)] = 100 * self.weight
        return scores

    def devices(self, task: TaskInfo, node: NodeInfo) -> tuple[int, ...] | None:
        ask = gpu_ask(task.resreq, strict=False)
        free = node.gpu_free
        if ask is None or free is None or ask.whole:
            return None
        fitting = [index for index, left in enumerate(free) if left >= ask.milli]
        if not fitting:
            return None
        return (fitting[self.draw(len(fitting), task.uid, node.name,
                                  *map(str, fitting))],)
