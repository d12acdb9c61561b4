"""deviceshare's Ascend vNPU functions in one session (``deviceshare.AscendHAMiVNPUEnable``).

Before any plugin opens, every node gets a ledger of its cards per chip type of the
device configuration (from its register annotation and the tasks on it) and the
session hides the memory and core resources of the chip types some node registers
(:meth:`AscendSession.prepare`). Then, as Volcano's deviceshare and predicates
plugins do: the predicate asks each chip type's cards for the task (Volcano's
``FilterNode``; Unschedulable when the cards are busy, Error when no card can ever
serve it), the node order scores them when ``deviceshare.ScheduleWeight`` is
positive, a statement placing the task chooses its cards and writes them on it
(``Allocate``) and undoing the placement gives them back (``Release``).
"""

from __future__ import annotations

from collections.abc import Mapping

from batchsched.api.ascend import (
    BIND_PHASE_ANNOTATION,
    NO_DEVICE,
    AscendChip,
    AscendDevices,
    SelectionError,
    VnpuRequest,
    asks,
    calc_score,
    fit,
    hami_core_mode,
    release_keys,
    vnpu_request,
)
from batchsched.api.fit import FitError
from batchsched.api.node import NodeInfo
from batchsched.api.node_lock import ASCEND_LOCK
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.columnar import VectorFallback
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray, NodeColumns
from batchsched.columnar.vnpu_columns import (
    IntArray,
    VnpuColumns,
    VnpuRows,
    vnpu_fit_rows,
)
from batchsched.errors import SchedulingError
from batchsched.framework.events import Event
from batchsched.framework.session import Session
from batchsched.plugins.deviceshare.locking import PLACED_NOW, lock_node

__all__ = ["AscendSession"]

#: Tasks whose cards a node's ledger does not count (Volcano's node skips them).
_NOT_COUNTED = (TaskStatus.RELEASING, TaskStatus.PIPELINED)


class AscendSession:
    """The vNPU functions of one session, for the configured chip types."""

    def __init__(self, plugin: str, chips: tuple[AscendChip, ...], hami_core: bool,
                 policy: str, weight: int, *, node_lock: bool = False) -> None:
        self.plugin = plugin
        self.node_lock = node_lock
        self.chips = chips
        self.hami_core = hami_core
        self.policy = policy
        self.weight = weight
        self.ssn: Session | None = None

    # -- before plugins open -----------------------------------------------------------

    def prepare(self, ssn: Session) -> frozenset[str]:
        """Give every node its cards' ledgers; the resources to hide: the memory and
        core resources of the chip types some node registers."""
        self.ssn = ssn
        hidden: set[str] = set()
        for node in ssn.node_list:
            ledgers: dict[str, AscendDevices] = {}
            for chip in self.chips:
                cards = AscendDevices.from_node(node.name, node.annotations,
                                                node.allocatable.scalars, chip, self.hami_core)
                if cards is None:
                    continue
                for uid, held in node.tasks.items():
                    if held.status not in _NOT_COUNTED:
                        cards.add_task(uid, held.annotations)
                ledgers[chip.common_word] = cards
                hidden.update(chip.hidden_names)
            node.ascend = ledgers or None
        return frozenset(hidden)

    # -- what a task asks ----------------------------------------------------------------

    def _requests(self, task: TaskInfo) -> list[tuple[AscendChip, VnpuRequest]]:
        """What the task asks of each chip type (configuration order)."""
        assert self.ssn is not None
        requests = self.ssn.device_requests(task)
        out = []
        for chip in self.chips:
            request = vnpu_request(requests, chip) if asks(requests, chip) else None
            if request is not None:
                out.append((chip, request))
        return out

    def asks(self, task: TaskInfo) -> bool:
        assert self.ssn is not None
        requests = self.ssn.device_requests(task)
        return any(asks(requests, chip) for chip in self.chips)

    def _on_node(self, task: TaskInfo, node: NodeInfo
                 ) -> list[tuple[AscendDevices, VnpuRequest]]:
        """The node's cards of each type the task asks, with the request; a type the
        node has no cards of is passed over (the count resource's fit refuses it)."""
        ledgers = node.ascend
        if not ledgers:
            return []
        return [(ledgers[chip.common_word], request)
                for chip, request in self._requests(task) if chip.common_word in ledgers]

    # -- predicate and node order ------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return self._filter(task, node, self.policy)

    def simulate_predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """The predicate as topology-aware preemption's dry run asks it (no policy)."""
        return self._filter(task, node, "")

    def _filter(self, task: TaskInfo, node: NodeInfo, policy: str) -> FitError | None:
        mode = hami_core_mode(task.annotations)
        for cards, request in self._on_node(task, node):
            code, why = cards.filter(request, policy, hami_core=mode)
            if code != FitStatusCode.SUCCESS:
                return FitError.of(task.namespace, task.name, node.name, NO_DEVICE, code=code,
                                   plugin=self.plugin, detail=f"{cards.chip.common_word}: {why}")
        return None

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The sum of the chip types' scores (deviceshare rounds and weighs it)."""
        mode = hami_core_mode(task.annotations)
        return sum(cards.score(request, self.policy, hami_core=mode)
                   for cards, request in self._on_node(task, node))

    def _rows(self, task: TaskInfo, rows: IntArray | slice, *, scoring: bool
              ) -> VnpuRows | None:
        """The column forms' answer for the task's one chip type (None: it asks no card
        any node has); VectorFallback when only the scalar form can answer: a task
        asking two chip types, or a score among 910 cards grouped by network."""
        requests = self._requests(task)
        if not requests:
            return None
        if len(requests) > 1:
            raise VectorFallback
        assert self.ssn is not None
        chip, request = requests[0]
        columns = VnpuColumns.of(self.ssn).chips.get(chip.common_word)
        if columns is None:
            return None
        if scoring and columns.grouped[rows].any():
            raise VectorFallback
        return vnpu_fit_rows(columns, chip, request, self.policy,
                             hami_core=hami_core_mode(task.annotations), rows=rows)

    def column(self, task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        """:meth:`predicate` over every node (a task asking no card passes everywhere)."""
        answer = self._rows(task, slice(None), scoring=False)
        return None if answer is None else answer.fits

    def preempt_column(self, task: TaskInfo, columns: NodeColumns
                       ) -> tuple[BoolArray, BoolArray] | None:
        """The predicate as preempt reads it: evicting may help where the cards are busy
        (Unschedulable), not where none can ever serve the task (Error)."""
        answer = self._rows(task, slice(None), scoring=False)
        return None if answer is None else (answer.fits, ~answer.fits & ~answer.error)

    def column_score(self, task: TaskInfo, columns: NodeColumns,
                     candidates: Candidates) -> FloatArray | float:
        """:meth:`score` over the candidates."""
        answer = self._rows(task, candidates.indices, scoring=True)
        return 0.0 if answer is None else answer.score

    # -- explanations ------------------------------------------------------------------

    def explain(self, task: TaskInfo) -> list[str]:
        """Why no node's cards serve the task, chip type by chip type: what it asks as
        the cards read it, how many cards there are, and the most that could serve it
        on one node (for ``batchsched explain``)."""
        assert self.ssn is not None
        mode = hami_core_mode(task.annotations)
        lines = []
        for chip, request in self._requests(task):
            word = chip.common_word
            ledgers = [node.ascend[word] for node in self.ssn.node_list
                       if node.ascend and word in node.ascend]
            if not ledgers:
                lines.append(f"{word}: no node registers cards of this type")
                continue
            best, served = 0, request
            for cards in ledgers:
                ranked = sorted(cards.devices.values(),
                                key=lambda d: -calc_score(self.policy, d))
                served = cards.resolved_request(request, ranked[0], mode)
                best = max(best, sum(
                    fit(served, device, chip, hami_core=mode, device_hami_core=cards.hami_core)
                    for device in cards.devices.values()))
            asked = (f"{served.memory} MiB" if served.memory else "any memory") + (
                f" and {served.cores} cores" if served.cores else "")
            total = sum(len(cards.devices) for cards in ledgers)
            lines.append(
                f"{word}: asks {request.count} card(s) with {asked} each"
                f"{' (hami-core)' if mode else ''}; {total} card(s) on {len(ledgers)} "
                f"node(s); at most {best} could serve it on one node")
        return lines

    def note_pending(self, ssn: Session) -> None:
        """Explanations of the watched tasks no node took (when a recorder listens)."""
        recorder = ssn.recorder
        if recorder is None:
            return
        for job in ssn.jobs.values():
            for uid in job.nodes_fit_errors:
                task = job.tasks.get(uid)
                if task is not None and uid in recorder.watch and not task.node_name:
                    for line in self.explain(task):
                        recorder.note(uid, self.plugin, line)

    # -- placing and undoing -------------------------------------------------------------

    @property
    def allocate_policy(self) -> str:
        """The order cards are chosen in when a task is placed. Volcano's ``Allocate``
        reads the policy its node score left on the node's cards: none unless the
        score ran (a positive weight, and more than one node fitting), and then any
        fitting card may be chosen (Go's map order). batchsched keeps the policy's
        order whenever the weight is positive, and takes the first card in
        registration order without one: each is a choice Volcano can make."""
        return self.policy if self.weight > 0 else ""

    def reserve(self, event: Event) -> None:
        """A statement placed the task: choose its cards, count them and write them on
        the task for the bind to carry (Volcano's ``Allocate``)."""
        assert self.ssn is not None
        task = event.task
        node = self.ssn.nodes.get(task.node_name)
        if node is None or not node.ascend or task.uid not in node.tasks:
            return
        written: dict[str, str] = {}
        mode = hami_core_mode(task.annotations)
        taken: list[AscendDevices] = []
        try:
            self._reserve_cards(task, node, mode, written, taken)
        except SchedulingError:
            # A later chip type failed (its lock, or its cards): the earlier ones give
            # their cards back, as the statement undoes the placement.
            for cards in taken:
                cards.remove_task(task.uid)
            raise
        if written:
            # A new mapping: the task's annotations may be shared with the cache's copy.
            task.annotations = {**task.annotations, **written}

    def _reserve_cards(self, task: TaskInfo, node: NodeInfo, mode: bool,
                       written: dict[str, str], taken: list[AscendDevices]) -> None:
        assert self.ssn is not None
        for cards, request in self._on_node(task, node):
            if cards.holds(task.uid) and task.status not in PLACED_NOW:
                # An eviction undone: the pod still holds its cards. Volcano's
                # Allocate runs again and takes the lock (its refusal is ignored).
                if self.node_lock:
                    self._lock(task, node)
                continue
            # Cards a stale annotation named when the task came to the node stay counted
            # while its cards are chosen, as in Volcano (its node.AddTask counted them;
            # Allocate chooses on that state, and a card already counted for the task
            # is not counted twice).
            if self.node_lock:
                # Before the cards are chosen, for each chip type asked, as Volcano's
                # Allocate: a second type finds the lock the first one took.
                self._lock(task, node)
            try:
                written.update(cards.allocate(task.uid, request, self.allocate_policy,
                                              hami_core=mode, node=node.name,
                                              now=int(self.ssn.now)))
            except SelectionError as exc:
                raise SchedulingError(f"task {task.uid}: failed to select ascend devices "
                                      f"for pod {task.name}: {exc}") from exc
            taken.append(cards)

    def _lock(self, task: TaskInfo, node: NodeInfo) -> None:
        assert self.ssn is not None
        lock_node(self.ssn, task, node, ASCEND_LOCK,
                  refusal=f"node {node.name} locked for {task.name} hami vnpu. lockname")

    def release(self, event: Event) -> None:
        """The task leaves the node (evicted, or its placement undone): give its cards
        back; an undone placement also loses the annotations it wrote (Volcano's
        ``Release``: those of every configured chip type)."""
        assert self.ssn is not None
        task = event.task
        node = self.ssn.nodes.get(task.node_name)
        if node is None or not node.ascend or not self.asks(task):
            return
        for cards in node.ascend.values():
            cards.remove_task(task.uid)
        if task.status is TaskStatus.RELEASING or \
                task.annotations.get(BIND_PHASE_ANNOTATION) == "success":
            return  # a pod that holds its cards until it is gone
        keys = release_keys(chip.common_word for chip in self.chips)
        if any(key in task.annotations for key in keys):
            task.annotations = _without(task.annotations, keys)


def _without(annotations: Mapping[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    return {key: value for key, value in annotations.items() if key not in keys}
