"""The Kubernetes view of the nodes (:mod:`batchsched.kube.pod_view`) as arrays.

:class:`KubeColumns` mirrors, for every node of the session in
:class:`~batchsched.columnar.node_columns.NodeColumns` order, what the
vectorised predicates and nodeorder variants read from a
:class:`~batchsched.kube.pod_view.NodeView`: the number of pods, their
summed requests (cpu, memory, GPUs) and their "non-zero" requests, as
``int64`` arrays, plus the node allocatable figures kube-scheduler uses
(rounded up to integers as ``Quantity.Value`` does). It follows the view's
``change_log``, so one placement costs one node's refresh, done the next time
the arrays are read (:meth:`KubeColumns.sync`).

It also caches what depends on node labels only (which never change in a
session): per label key, each node's value as an integer code.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from batchsched._carried import Carried
from batchsched.api.node import NodeInfo
from batchsched.api.oversubscription import node_oversubscription
from batchsched.api.resource import CPU, MEMORY, PODS
from batchsched.columnar.node_columns import IndexArray, NodeColumns
from batchsched.columnar.scores import FLOAT_DIVISION_LIMIT
from batchsched.kube.pod_view import GPU, KubeView, NodeView

__all__ = ["KubeColumns", "LabelCodes", "ceil_amounts"]

IntArray = npt.NDArray[np.int64]

_EXTRA_KEY = "batchsched.kube_columns"
#: Per cache whose sessions reuse node objects, the mirror its last session used.
_carried: Carried[KubeColumns] = Carried()
#: Amounts below this keep the scores' integer products within int64 and their
#: float conversions exact; a larger one sends the task to the scalar path.
LARGE = 2**52
_NO_FIGURES = (0, 0, 0, 0, 0, 0)


def _figures_of(node: NodeView) -> tuple[int, int, int, int, int, int]:
    """A node's row of the figures block: pods, requests (cpu, memory, GPUs), non-zero
    requests (cpu, memory)."""
    return (len(node.pods), node.milli_cpu, node.memory, node.gpu,
            node.nonzero_milli_cpu, node.nonzero_memory)


def ceil_amounts(amounts: npt.NDArray[np.float64]) -> tuple[IntArray, bool]:
    """``ceil(amount - 1e-9)`` for positive amounts, else 0: the integers the kube
    plugins hold (the same float operations as the scalar ``kube_int``), and
    whether all of them are small enough for exact int64 and float arithmetic."""
    if len(amounts) and not (np.all(np.isfinite(amounts)) and float(amounts.max()) < LARGE):
        values = [math.ceil(a - 1e-9) if a > 0 else 0 for a in amounts.tolist()]
        return np.array([min(v, LARGE) for v in values], dtype=np.int64), False
    out = np.ceil(amounts - 1e-9)
    out[amounts <= 0] = 0.0
    return out.astype(np.int64), True


class LabelCodes:
    """Per node, the value of one label key as an integer code (-1: label absent)."""

    __slots__ = ("codes", "values")

    def __init__(self, columns: NodeColumns, key: str) -> None:
        self.values: dict[str, int] = {}
        codes = np.empty(len(columns), dtype=np.int64)
        for i, node in enumerate(columns.nodes):
            value = node.labels.get(key)
            if value is None:
                codes[i] = -1
            else:
                codes[i] = self.values.setdefault(value, len(self.values))
        self.codes: IntArray = codes

    def among(self, codes: Sequence[int]) -> npt.NDArray[np.bool_]:
        """Which nodes carry the label with one of the value ``codes`` (``np.isin``
        without its sort: one look-up table read per node)."""
        table = np.zeros(len(self.values) + 1, dtype=np.bool_)  # the last: absent (-1)
        table[np.asarray(codes, dtype=np.int64)] = True
        found: npt.NDArray[np.bool_] = table[self.codes]
        return found

    def equal(self, value: str) -> npt.NDArray[np.bool_]:
        """Which nodes carry the label with exactly this value."""
        code = self.values.get(value)
        if code is None:
            return np.zeros(len(self.codes), dtype=np.bool_)
        return self.codes == code  # type: ignore[no-any-return]


class KubeColumns:
    """Arrays of the Kubernetes node view (see the module docstring)."""

    def __init__(self, view: KubeView, columns: NodeColumns) -> None:
        self.view = view
        self.columns = columns
        width = len(columns)
        #: The node views the rows were last refreshed from (see carry_over).
        self._views: list[NodeView | None] = [None] * width
        # One block, so that a node's refresh is one write: pods, requests, non-zero.
        self._figures: IntArray = np.zeros((6, width), dtype=np.int64)
        self.pods: IntArray = self._figures[0]
        #: The pods' summed requests: rows cpu (millicores), memory (bytes), GPUs.
        self.requested: IntArray = self._figures[1:4]
        #: The pods' summed "non-zero" requests: rows cpu, memory.
        self.nonzero: IntArray = self._figures[4:6]
        #: Nodes with at least one used host port.
        self.port_nodes: set[int] = set()
        #: False once some amount is too large for exact array arithmetic.
        self.exact = True
        self._seen = len(view.change_log)
        index = columns.dimension_index
        pods_row = columns.allocatable[index[PODS]]
        #: ``int(allocatable pods)`` per node: how many pods the node may hold.
        self.max_pods: IntArray = np.trunc(np.minimum(pods_row, float(LARGE))).astype(np.int64)
        #: Nodes holding fewer pods than ``max_pods`` (the predicates' pod-count check).
        self.room = np.zeros(width, dtype=np.bool_)
        self._refresh_all()
        cpu_row, memory_row = columns.allocatable[index[CPU]], columns.allocatable[index[MEMORY]]
        # kube-scheduler's NodeInfo holds the node object's allocatable: without what
        # Volcano's oversubscription annotations add to batchsched's (and Volcano's).
        oversubscribed = [(i, extra) for i, node in enumerate(columns.nodes) if node.annotations
                          and (extra := node_oversubscription(node.annotations)[0]) is not None]
        if oversubscribed:
            cpu_row, memory_row = cpu_row.copy(), memory_row.copy()
            for i, extra in oversubscribed:
                cpu_row[i] -= extra.milli_cpu
                memory_row[i] -= extra.memory
        cpu, cpu_exact = ceil_amounts(cpu_row)
        memory, memory_exact = ceil_amounts(memory_row)
        gpu_row = index.get(GPU)
        gpu, gpu_exact = (ceil_amounts(columns.allocatable[gpu_row]) if gpu_row is not None
                          else (np.zeros(width, dtype=np.int64), True))
        #: Allocatable as kube-scheduler holds it: rows cpu, memory, GPUs.
        self.allocatable: IntArray = np.stack([cpu, memory, gpu])
        #: Whether every node has some cpu and some memory allocatable.
        self.cpu_memory_everywhere = bool((self.allocatable[:2] != 0).all())
        #: Whether every cpu and memory allocatable is below ``FLOAT_DIVISION_LIMIT``.
        self.cpu_memory_small = bool(self.allocatable[:2].max(initial=0) < FLOAT_DIVISION_LIMIT)
        self.exact = self.exact and cpu_exact and memory_exact and gpu_exact
        self._labels: dict[str, LabelCodes] = {}
        #: What plugins work out from the nodes' static fields (labels, taints,
        #: allocatable), by a key of their own; kept while the mirror is carried over.
        self.static: dict[Any, Any] = {}
        #: The node objects the arrays were last made from (see carry_over).
        self._nodes: list[NodeInfo] = list(columns.nodes)

    @classmethod
    def of(cls, ssn: Any) -> KubeColumns:
        """The session's mirror of its kube view, built on first use; over a cache whose
        sessions reuse node objects, carried over from its previous session when the
        node columns and the view were (:meth:`carry_over`)."""
        extra: dict[str, Any] = ssn.extra
        mirror = extra.get(_EXTRA_KEY)
        columns = NodeColumns.of(ssn)
        view = KubeView.of(ssn)
        if (isinstance(mirror, KubeColumns) and mirror.columns is columns
                and mirror.view is view):
            return mirror
        mirror = _carried.get(
            ssn, lambda: cls(view, columns),
            lambda carried, renewed: (carried.columns is columns and carried.view is view
                                      and carried.carry_over(renewed)))
        extra[_EXTRA_KEY] = mirror
        return mirror

    def carry_over(self, renewed: frozenset[str] | None = None) -> bool:
        """Serve a later session, whose node columns and view were carried over: True
        when every node that is a new object there is the same node as far as these
        arrays go (allocatable, labels, annotations, taints), and then the rows of the
        nodes the view changed are refreshed; False when a fresh mirror is needed. With
        ``renewed`` (``Session.nodes_renewed_since``) only the nodes it names are read."""
        nodes = self.columns.nodes
        before = self._nodes
        if not self.exact or len(nodes) != len(before):
            return False
        positions: Iterable[int] = range(len(nodes))
        if renewed is not None:
            index = self.columns.index
            positions = [index[name] for name in renewed if name in index]
        for i in positions:
            node, old = nodes[i], before[i]
            if node is not old and (
                    node.name != old.name or node.allocatable != old.allocatable
                    or node.labels != old.labels or node.annotations != old.annotations
                    or node.taints != old.taints or node.unschedulable != old.unschedulable):
                return False
        self._nodes = list(nodes)
        # A node viewed again since is a new NodeView (whichever session did it); one
        # changed in this session so far is in the view's log.
        views, names, seen = self.view.nodes, self.columns.names, self._views
        for i in positions:
            if views.get(names[i]) is not seen[i]:
                self._refresh(i)
        self._seen = 0
        self.sync()
        return True

    def _refresh(self, i: int) -> None:
        node = self.view.nodes.get(self.columns.names[i])
        self._views[i] = node
        if node is None:
            self._figures[:, i] = 0
            self.room[i] = self.max_pods[i] > 0
            self.port_nodes.discard(i)
            return
        # The pod count and the ports are exact whatever the amounts: the predicates'
        # masks read them even when the scores fall back for large amounts.
        self.room[i] = len(node.pods) < self.max_pods[i]
        if node.used_ports:
            self.port_nodes.add(i)
        else:
            self.port_nodes.discard(i)
        figures = _figures_of(node)
        if max(figures) >= LARGE:
            self.exact = False
            return
        self._figures[:, i] = figures

    def _refresh_all(self) -> None:
        """:meth:`_refresh` of every node, in a few passes over the views (a replay
        builds the mirror at every session: one write per node cost about a
        microsecond each)."""
        views = self.view.nodes
        found = self._views = [views.get(name) for name in self.columns.names]
        figures = [_figures_of(node) if node is not None else _NO_FIGURES for node in found]
        if figures and max(map(max, figures)) >= LARGE:
            for i in range(len(found)):  # some amount too large: node by node
                self._refresh(i)
            return
        if figures:
            self._figures[:] = np.array(figures, dtype=np.int64).T
        self.room[:] = self.pods < self.max_pods
        self.port_nodes = {i for i, node in enumerate(found)
                           if node is not None and node.used_ports}

    def sync(self) -> None:
        """Refresh the nodes the view changed since the last sync."""
        log = self.view.change_log
        if self._seen == len(log):
            return
        index = self.columns.index
        for name in dict.fromkeys(log[self._seen:]):
            position = index.get(name)
            if position is not None:
                self._refresh(position)
        self._seen = len(log)

    def labels(self, key: str) -> LabelCodes:
        """Each node's value of label ``key`` (computed once per session)."""
        codes = self._labels.get(key)
        if codes is None:
            codes = self._labels[key] = LabelCodes(self.columns, key)
        return codes

    def positions(self, names: set[str]) -> IndexArray:
        index = self.columns.index
        return np.fromiter((index[n] for n in names if n in index), dtype=np.intp)
