"""deviceshare's GPU sharing of ``volcano.sh/gpu-memory`` and ``volcano.sh/gpu-number``
in one session (Volcano's ``gpushare`` device, :mod:`batchsched.api.gpushare`).

With ``deviceshare.GPUSharingEnable`` a pod asking ``volcano.sh/gpu-memory`` needs a card
with that much idle memory; with ``deviceshare.GPUNumberEnable`` a pod asking
``volcano.sh/gpu-number`` needs that many idle cards (Volcano's ``HasDeviceRequest`` and
``FilterNode``; a node without cards passes). The predicates plugin's allocate handler
takes the cards in Volcano, so here too a placement takes them only with ``predicates``
configured: the lowest-numbered card with enough idle memory (after the node's lock,
with ``deviceshare.NodeLockEnable``), or the first idle cards, written on the pod as
``volcano.sh/gpu-index`` with ``volcano.sh/predicate-time``. A pipelined pod takes them
too, as Volcano's pipeline fires the same handler. Undoing the placement gives them back
and takes both annotations off; evicting the pod gives them back (a running pod keeps
its annotations, and an eviction undone puts it back on its cards).
"""

from __future__ import annotations

import numpy as np

from batchsched.api.fit import FitError
from batchsched.api.gpushare import (
    GPU_INDEX_ANNOTATION,
    PREDICATE_TIME_ANNOTATION,
    drop_gpu_index,
    memory_asked,
    number_asked,
)
from batchsched.api.node import NodeInfo
from batchsched.api.node_lock import GPU_SHARE_LOCK
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.columnar.node_columns import BoolArray, NodeColumns
from batchsched.errors import SchedulingError
from batchsched.framework.events import Event
from batchsched.framework.session import Session
from batchsched.plugins.deviceshare.locking import PLACED_NOW, lock_node

__all__ = ["GpuShareSession"]


class GpuShareSession:
    """The gpushare device's functions in one session (see the module docstring)."""

    def __init__(self, ssn: Session, plugin: str, *, sharing: bool, number: bool,
                 node_lock: bool) -> None:
        self.ssn = ssn
        self.plugin = plugin
        self.sharing = sharing
        self.number = number
        self.node_lock = node_lock

    def asks(self, task: TaskInfo) -> bool:
        """Volcano's ``HasDeviceRequest``: the task asks what the enabled mode counts."""
        request = task.resreq
        if not request.scalars:
            return False
        return ((self.sharing and memory_asked(request) > 0)
                or (self.number and number_asked(request) > 0))

    # -- the predicate ---------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """Volcano's ``FilterNode``: the memory check in sharing mode, the card count in
        number mode; Unschedulable with Volcano's words."""
        devices = node.gpu_share
        if devices is None or not self.asks(task):
            return None
        request = task.resreq
        if self.sharing:
            memory = memory_asked(request)
            if memory > 0 and not devices.cards_with_memory(memory):
                return self._refusal(task, node, f"GpuShare no enough gpu memory on node "
                                                 f"{node.name}")
        if self.number:
            number = number_asked(request)
            if number > 0 and not devices.idle_cards(number):
                return self._refusal(task, node, f"GpuNumber no enough gpu number on node "
                                                 f"{node.name}")
        return None

    def _refusal(self, task: TaskInfo, node: NodeInfo, reason: str) -> FitError:
        return FitError.of(task.namespace, task.name, node.name, reason,
                           code=FitStatusCode.UNSCHEDULABLE, plugin=self.plugin)

    def column(self, task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        """:meth:`predicate` is None, node by node (None: the task asks no card)."""
        if not self.asks(task):
            return None
        nodes = self.ssn.node_list
        passes: BoolArray = np.fromiter(
            (self.predicate(task, node) is None for node in nodes), dtype=np.bool_,
            count=len(nodes))
        return passes

    def preempt_column(self, task: TaskInfo, columns: NodeColumns
                       ) -> tuple[BoolArray, BoolArray] | None:
        """As preempt reads it: a node refused for its cards may serve once victims
        leave (Unschedulable)."""
        passes = self.column(task, columns)
        return None if passes is None else (passes, ~passes)

    # -- placements ------------------------------------------------------------------------

    def reserve(self, event: Event) -> None:
        """A statement placed (or pipelined) the task: take its cards (Volcano's
        ``Allocate``) and write them on it, for the bind to carry."""
        task = event.task
        node = self.ssn.nodes.get(task.node_name)
        if node is None or node.gpu_share is None or not self.asks(task):
            return
        devices = node.gpu_share
        if task.status not in PLACED_NOW and devices.holds(task.uid):
            # An eviction undone: the pod is back on the cards its annotation names.
            # Volcano's Allocate runs again and counts it on one more card too, until
            # the session ends; here it keeps its own.
            return
        memory = memory_asked(task.resreq)
        if memory > 0:
            if self.node_lock:
                lock_node(self.ssn, task, node, GPU_SHARE_LOCK,
                          refusal=f"node {node.name} locked for lockname gpushare")
            ids = devices.cards_with_memory(memory)[:1]
        else:
            ids = devices.idle_cards(number_asked(task.resreq))
        if not ids:
            raise SchedulingError(f"task {task.uid}: the node {node.name} can't place the pod "
                                  f"{task.name} in ns {task.namespace}")
        devices.take(task.uid, task.resreq, ids)
        # A new mapping: the task's annotations may be shared with the cache's copy.
        task.annotations = {
            **task.annotations,
            PREDICATE_TIME_ANNOTATION: str(int(self.ssn.now * 1_000_000_000)),
            GPU_INDEX_ANNOTATION: ",".join(str(card) for card in ids),
        }

    def release(self, event: Event) -> None:
        """The task leaves the node (evicted, or its placement undone): give its cards
        back and take off what :meth:`reserve` wrote (Volcano's ``Release``)."""
        task = event.task
        node = self.ssn.nodes.get(task.node_name)
        if node is None or node.gpu_share is None or not self.asks(task):
            return
        node.gpu_share.remove_task(task.uid, task.annotations)
        if task.status is TaskStatus.RELEASING:
            # Evicted: Volcano's Release drops what the scheduler wrote for the binding,
            # not the running pod's own annotations (an undone eviction finds them).
            return
        drop_gpu_index(task)
