"""The session's Ascend cards as arrays, and deviceshare's vNPU fit and score over every
node.

``VnpuColumns`` mirrors each node's card ledgers (:class:`batchsched.api.ascend.AscendDevices`,
one per chip type) as ``(nodes, widest node's cards)`` arrays per chip type, a row
re-read whenever its node's ``mutations`` count moved
(:class:`~batchsched.columnar.row_mirror.RowMirror`; every ledger change comes with a
placement or removal on the node, which moves it).

:func:`vnpu_fit_rows` answers what :meth:`AscendDevices.filter` answers, node by node,
for a request of one chip type, and what :meth:`AscendDevices.score` answers on nodes
whose cards have no network group (910 cards that do are scored by the scalar form).
Whether a node fits does not depend on the order cards are tried in (each card is
judged on its state before the task), so it is "at least ``count`` cards pass", network
groups or not (the groups only choose among the passing cards); the order decides the
request as the best card reads it (a count alone takes that card's memory) and the
score (the policy's score of the first passing card).
"""

from __future__ import annotations

import attrs
import numpy as np
import numpy.typing as npt

from batchsched.api.ascend import BINPACK, NETWORK_PREFIX, SPREAD, AscendChip, VnpuRequest
from batchsched.api.node import NodeInfo
from batchsched.columnar.row_mirror import RowMirror
from batchsched.kube.go_strconv import int32

__all__ = ["ChipColumns", "VnpuColumns", "VnpuRows", "vnpu_fit_rows"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@attrs.define(eq=False)
class ChipColumns:
    """One chip type's cards: per node ``i`` and card slot ``d`` (registration order)."""

    exists: BoolArray
    count: IntArray
    memory: IntArray
    cores: IntArray
    used: IntArray
    used_memory: IntArray
    used_cores: IntArray
    #: Per node: it has cards of the type; they may be shared in hami-core mode; some
    #: are 910 cards with a network group (the scalar form then scores).
    has: BoolArray
    hami_core: BoolArray
    grouped: BoolArray


def _empty_columns(nodes: int, width: int) -> ChipColumns:
    shape = (nodes, width)
    return ChipColumns(
        exists=np.zeros(shape, dtype=np.bool_), count=np.zeros(shape, dtype=np.int64),
        memory=np.zeros(shape, dtype=np.int64), cores=np.zeros(shape, dtype=np.int64),
        used=np.zeros(shape, dtype=np.int64), used_memory=np.zeros(shape, dtype=np.int64),
        used_cores=np.zeros(shape, dtype=np.int64), has=np.zeros(nodes, dtype=np.bool_),
        hami_core=np.zeros(nodes, dtype=np.bool_), grouped=np.zeros(nodes, dtype=np.bool_))


class VnpuColumns(RowMirror):
    """The cards of every configured chip type (see the module docstring)."""

    extra_key = "batchsched.columnar.vnpu_columns"

    def __init__(self, nodes: list[NodeInfo]) -> None:
        super().__init__(nodes)
        widths: dict[str, int] = {}
        for node in nodes:
            for chip, cards in (node.ascend or {}).items():
                widths[chip] = max(widths.get(chip, 1), len(cards.devices))
        self.chips: dict[str, ChipColumns] = {}
        for chip, width in widths.items():
            self.chips[chip] = _empty_columns(len(nodes), width)

    def read_row(self, i: int, node: NodeInfo) -> None:
        ledgers = node.ascend or {}
        for chip, columns in self.chips.items():
            columns.exists[i] = False
            columns.has[i] = False
            cards = ledgers.get(chip)
            if cards is None:
                continue
            columns.has[i] = True
            columns.hami_core[i] = cards.hami_core
            # 910 cards with a network group change which passing card is chosen, and
            # the score: the scalar form scores such nodes.
            columns.grouped[i] = (chip.startswith(NETWORK_PREFIX)
                                  and any(d.has_network_id for d in cards.devices.values()))
            for slot, device in enumerate(cards.devices.values()):
                columns.exists[i, slot] = True
                columns.count[i, slot] = device.count
                columns.memory[i, slot] = device.memory
                columns.cores[i, slot] = device.cores
                columns.used[i, slot] = device.used
                columns.used_memory[i, slot] = device.used_memory
                columns.used_cores[i, slot] = device.used_cores


@attrs.frozen
class VnpuRows:
    """:func:`vnpu_fit_rows`' answer per node: whether the cards serve the request (True
    where the node has no cards of the type), whether a refusal is an Error (no card
    can ever serve it) rather than Unschedulable, and the score."""

    fits: BoolArray
    error: BoolArray
    score: FloatArray


def _int32(values: IntArray) -> IntArray:
    """Go's int32 arithmetic (:func:`batchsched.kube.go_strconv.int32`) on int64 arrays."""
    wrapped: IntArray = (values + 2**31) % 2**32 - 2**31
    return wrapped


def _scores(policy: str, columns: ChipColumns, rows: IntArray | slice) -> FloatArray:
    memory = columns.memory[rows]
    # calc_score's rule: only a card of no memory scores 0 (a negative one, from a
    # malformed registration, is scored as Go scores it), the ratio taken first.
    if policy == BINPACK:
        each = 100.0 * (columns.used_memory[rows] / np.where(memory != 0, memory, 1))
    elif policy == SPREAD:
        each = np.where(columns.used[rows] == 0, 100.0, 0.0)
    else:
        each = np.zeros(memory.shape)
    result: FloatArray = np.where(columns.exists[rows] & (memory != 0), each, 0.0)
    return result


def vnpu_fit_rows(columns: ChipColumns, chip: AscendChip, request: VnpuRequest, policy: str,
                  *, hami_core: bool, rows: IntArray | slice) -> VnpuRows:
    """The chip type's cards over the nodes of ``rows`` (see the module docstring); the
    score of rows whose cards have network groups (``grouped``) is not theirs."""
    exists = columns.exists[rows]
    has = columns.has[rows]
    n = len(has)
    scores = _scores(policy, columns, rows)
    # Cards are tried best score first, registration order among equals; a missing
    # card slot goes last.
    ranked = np.argsort(np.where(exists, -scores, np.inf), axis=1, kind="stable")
    top = ranked[:, 0] if ranked.shape[1] else np.zeros(n, dtype=np.int64)
    top_memory = np.take_along_axis(columns.memory[rows], top[:, None], axis=1)[:, 0]
    asked = np.full(n, request.memory, dtype=np.int64)
    if request.memory == 0 and request.memory_percentage != 0:
        product = _int32(top_memory * request.memory_percentage)
        # Go's division truncates toward zero.
        asked = np.where(product < 0, -((-product) // 100), product // 100)
    error = np.zeros(n, dtype=np.bool_)
    if not hami_core:
        # Rounded to templates once per distinct request (usually one per task), not
        # once per node.
        values, where = np.unique(asked, return_inverse=True)
        rounded = np.array([int32(chip.trim_memory(int(m))[0]) if m > 0 else int(m)
                            for m in values], dtype=np.int64)
        asked = rounded[where]
        if request.count > 1:
            # Several cards need whole ones (the rounded request read again).
            again = np.array([chip.trim_memory(int(m))[0] for m in rounded], dtype=np.int64)
            error = has & (again[where] != chip.memory_allocatable)
    total_cores = np.full(columns.cores[rows].shape, 100) if hami_core else columns.cores[rows]
    used, used_cores = columns.used[rows], columns.used_cores[rows]
    passing = (exists & (columns.count[rows] > used)
               & (_int32(columns.memory[rows] - columns.used_memory[rows]) >= asked[:, None])
               & (_int32(total_cores - used_cores) >= request.cores))
    if hami_core:
        passing &= columns.hami_core[rows][:, None]
    if request.cores == 100:
        passing &= ~((total_cores == 100) & (used > 0))
    if request.cores == 0:
        passing &= ~((total_cores != 0) & (used_cores == total_cores))
    enough = passing.sum(axis=1) >= max(request.count, 0)
    fits = ~has | (enough & ~error)
    in_order = np.take_along_axis(passing, ranked, axis=1)
    first = np.argmax(in_order, axis=1)
    chosen = np.take_along_axis(ranked, first[:, None], axis=1)[:, 0]
    first_score = np.take_along_axis(scores, chosen[:, None], axis=1)[:, 0]
    # A count of 0 takes the first passing card when there is one, else none (score 0).
    any_passing = in_order.any(axis=1)
    score = np.where(has & fits & any_passing, first_score, 0.0)
    return VnpuRows(fits, error, score)
