"""gpu-random: a node and a device drawn at random (the FGD paper's Random baseline).

One candidate, drawn uniformly, scores ``100 x gpu-random.weight`` and the
others 0 (a batch node-order score: the draw needs the candidates). A share goes
on a device drawn uniformly among those it fits; whole GPUs are the
lowest-indexed free ones. The draws come from a generator seeded with
``gpu-random.seed`` (default 0; ``batchsched simulate --seed`` sets it), so a
run is reproducible.
"""

from __future__ import annotations

import random
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
        self._column_draw: tuple[str, tuple[str, ...], int] | None = None
        self.weight = arguments.get_int(f"{self.name}.weight", 1, owner=self.name)
        self.rng = random.Random(arguments.get_int(f"{self.name}.seed", 0, owner=self.name))
        arguments.warn_unknown(self.name, [f"{self.name}.weight", f"{self.name}.seed"])

    def on_session_open(self, ssn: Session) -> None:
        # The column form's last draw (task uid, candidates, index): when another
        # plugin sends the task back to the node-by-node form, the draw is not made
        # twice, so that both forms consume the generator alike.
        self._column_draw = None
        if not self.weight:
            return
        ssn.add_batch_node_order_fn(self.name, self.batch_scores)
        columnar.add_batch_node_order_fn(ssn, self.name, self.column_scores)
        ssn.add_device_select_fn(self.name, self.devices)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back."""

    def batch_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        if not nodes:
            return {}
        names = tuple(node.name for node in nodes)
        made, self._column_draw = self._column_draw, None
        if made is not None and made[:2] == (task.uid, names):
            drawn = made[2]  # the column form drew for these very candidates
        else:
            drawn = self.rng.randrange(len(nodes))
        return {node.name: float(100 * self.weight if i == drawn else 0)
                for i, node in enumerate(nodes)}

    def column_scores(self, task: TaskInfo, columns: NodeColumns,
                      candidates: Candidates) -> FloatArray:
        scores = np.zeros(len(candidates))
        if len(candidates):
            drawn = self.rng.randrange(len(candidates))
            scores[drawn] = 100 * self.weight
            nodes = columns.nodes
            self._column_draw = (task.uid, tuple(nodes[i].name
                                                 for i in candidates.indices.tolist()), drawn)
        return scores

    def devices(self, task: TaskInfo, node: NodeInfo) -> tuple[int, ...] | None:
        ask = gpu_ask(task.resreq, strict=False)
        free = node.gpu_free
        if ask is None or free is None or ask.whole:
            return None
        fitting = [index for index, left in enumerate(free) if left >= ask.milli]
        return (self.rng.choice(fitting),) if fitting else None
