"""Arrays over a session's nodes, one row per node, read again from a node whenever
its ``mutations`` count moved: right whichever path (statement, discard, commit)
changed the node, and a row costs nothing while its node stays as it was.

:class:`~batchsched.columnar.gpu_columns.GpuColumns` and
:class:`~batchsched.columnar.vgpu_columns.VgpuColumns` are such mirrors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

from batchsched.api.node import NodeInfo

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["RowMirror"]

IntArray = npt.NDArray[np.int64]


class RowMirror:
    """The mechanism; a subclass allocates its arrays and reads one row
    (:meth:`read_row`), and names where the session keeps it (``extra_key``)."""

    extra_key: ClassVar[str]

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes
        self._seen: IntArray = np.full(len(nodes), -1, dtype=np.int64)
        #: How many times the rows were re-read, in all and per node: an answer
        #: computed for a row holds while its version has not moved.
        self.version = 0
        self.row_version: IntArray = np.zeros(len(nodes), dtype=np.int64)

    @classmethod
    def of(cls, ssn: Session) -> Self:
        """The session's mirror, built on first use and brought up to date."""
        mirror = ssn.extra.get(cls.extra_key)
        if not isinstance(mirror, cls) or mirror.nodes is not ssn.node_list:
            mirror = cls(ssn.node_list)
            ssn.extra[cls.extra_key] = mirror
        mirror.refresh()
        return mirror

    def refresh(self) -> None:
        """Re-read the rows of the nodes that changed since the last call."""
        nodes = self.nodes
        counts = np.fromiter((node.mutations for node in nodes), dtype=np.int64,
                             count=len(nodes))
        stale = np.flatnonzero(counts != self._seen)
        if not len(stale):
            return
        self.version += 1
        self.row_version[stale] += 1
        for i in stale.tolist():
            self.read_row(i, nodes[i])
        self._seen = counts

    def read_row(self, i: int, node: NodeInfo) -> None:
        raise NotImplementedError
