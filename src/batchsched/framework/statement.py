"""Statement: transactional decisions (Volcano's ``framework/statement.go``).

``allocate``, ``pipeline`` and ``evict`` change the session's view at once (task
status, node figures, job indexes) and run the allocate/deallocate event
handlers, so that later decisions in the same session see them. ``commit``
hands the binds and evictions to the cache; ``discard`` undoes every operation
in reverse order, restoring each task's previous status and node exactly.

>>> # stmt = Statement(ssn); stmt.allocate(task, node)
>>> # if ssn.job_ready(job): stmt.commit()
>>> # else: stmt.discard()
"""

from __future__ import annotations

import enum
import functools
import logging
from typing import TYPE_CHECKING

import attrs

from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.sub_job import gang_ready
from batchsched.api.task import TaskInfo, TransactionContext
from batchsched.api.types import ALLOCATED_STATUSES, TaskStatus
from batchsched.errors import SchedulingError

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "BIND_FAILURE_POLICY_ANNOTATION",
    "KEEP_BOUND",
    "ROLLBACK_GANG",
    "Operation",
    "OperationKind",
    "Statement",
    "bind_failure_policy",
]

#: How a failed bind's ``FailedScheduling`` message starts (Volcano's wording).
BIND_FAILURE_PREFIX = "failed to bind to node "

log = logging.getLogger("batchsched")


_PENDING = TaskStatus.PENDING
_BINDING = TaskStatus.BINDING
#: Where a pending task on no node was (contexts are immutable values: one serves all).
_UNPLACED = TransactionContext("", _PENDING)


class OperationKind(enum.Enum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


@attrs.frozen
class Operation:
    """One decision and what the task was before it."""

    kind: OperationKind
    task: TaskInfo
    node_name: str
    before: TransactionContext
    reason: str = ""


class Statement:
    """An operation log over one session."""

    __slots__ = ("operations", "ssn")

    def __init__(self, ssn: Session) -> None:
        _refuse_closed(ssn, "a statement")
        self.ssn = ssn
        self.operations: list[Operation] = []
        ssn._statements.append(self)

    # -- decisions ----------------------------------------------------------------------

    def allocate(self, task: TaskInfo, node: NodeInfo | str, *,
                 refusals_ignored: bool = False) -> None:
        """Place a pending task on a node: status Allocated, node charged.

        An allocate handler's refusal (SchedulingError) undoes the placement and is
        raised, as Volcano's ``Statement.Allocate``; with ``refusals_ignored`` the
        task stays placed, as Volcano's ``Session.Allocate`` (backfill's) calls every
        handler and reads none of their errors."""
        self._place(task, node, TaskStatus.ALLOCATED, OperationKind.ALLOCATE,
                    refusals_ignored=refusals_ignored)

    def pipeline(
        self, task: TaskInfo, node: NodeInfo | str, eviction_occurred: bool = False
    ) -> None:
        """Reserve the node's future idle for a task: status Pipelined.

        ``eviction_occurred`` (preempt and reclaim: victims were evicted on this node
        for the task) is recorded on the task, where Volcano reads it to report the
        node as the pod's nominated node (the cache's ``nominate`` at session close).
        """
        task.eviction_occurred = eviction_occurred
        self._place(task, node, TaskStatus.PIPELINED, OperationKind.PIPELINE)
        if eviction_occurred:
            self.ssn._pipelined_after_evictions.append(task)

    def evict(self, task: TaskInfo, reason: str = "") -> None:
        """Mark a running task Releasing; its node keeps it until the eviction completes.

        A task that holds no node (Pending, Pipelined) or is Releasing already (evicted
        before, in this statement or by the cache) is a
        :class:`~batchsched.errors.SchedulingError`, nothing changed: evicting it again
        would give its resources back to every plugin twice. (Volcano's ``Evict`` has no
        such guard; its actions never ask it.)"""
        ssn = self.ssn
        _refuse_closed(ssn, "an eviction")
        job = self._job_of(task)
        if task.status not in ALLOCATED_STATUSES or not task.node_name:
            raise SchedulingError(f"cannot evict task {task.uid}: it is {task.status}"
                                  + (f" on node {task.node_name}" if task.node_name
                                     else " on no node")
                                  + ", not holding its node (Bound, Binding, Running or "
                                    "Allocated)")
        node = ssn.nodes.get(task.node_name)
        before = task.transaction
        job.update_task_status(task, TaskStatus.RELEASING)
        if node is not None:
            node.update_task(task)
        op = Operation(OperationKind.EVICT, task, task.node_name, before, reason)
        try:
            ssn._fire_deallocate(task)
        except BaseException:
            self._revert(op)
            raise
        self.operations.append(op)

    def _place(
        self, task: TaskInfo, node: NodeInfo | str, status: TaskStatus, kind: OperationKind,
        *, refusals_ignored: bool = False,
    ) -> None:
        ssn = self.ssn
        _refuse_closed(ssn, "a placement")
        node_info = ssn.nodes.get(node) if isinstance(node, str) else node
        if node_info is None or ssn.nodes.get(node_info.name) is not node_info:
            name = node if isinstance(node, str) else node.name
            raise SchedulingError(
                f"cannot {kind.value} task {task.uid}: no node {name!r} in session"
            )
        job = self._job_of(task)
        name = node_info.name
        if task.node_name and task.node_name != name:
            raise SchedulingError(
                f"cannot {kind.value} task {task.uid} on {name}: it is on {task.node_name}"
            )
        if ssn.recorder is not None:
            ssn.recorder.before_placement(ssn, task, node_info, kind.value)
        # Nearly every placement is of a pending task on no node: share that context.
        unplaced = not task.node_name and task.status == _PENDING
        before = _UNPLACED if unplaced else task.transaction
        if node_info.gpu_free is not None and status is not TaskStatus.PIPELINED:
            task.gpu_devices = ssn.select_devices(task, node_info)
        job.update_task_status(task, status)
        task.node_name = name
        try:
            node_info.add_task(task)
        except SchedulingError:
            job.update_task_status(task, before.status)
            task.node_name = before.node_name
            raise
        op = Operation(kind, task, name, before)
        undone: list[bool] = []

        def unplace() -> None:
            # Volcano's unallocate, before its deallocate functions run: they see the
            # task Pending and off the node, its node name still set.
            node_info.remove_task(task)
            job.update_task_status(task, before.status)
            undone.append(True)

        try:
            if refusals_ignored:
                ssn._fire_allocate_refusals_ignored(task)
            else:
                ssn._fire_allocate(task, unplace)
        except BaseException:
            if undone:
                self._restore_fields(op)
            else:
                self._revert(op)
            raise
        self.operations.append(op)

    def _job_of(self, task: TaskInfo) -> JobInfo:
        job = self.ssn.jobs.get(task.job)
        if job is None:
            raise SchedulingError(f"task {task.uid} belongs to job {task.job!r}, "
                                  "which is not in the session")
        return job

    # -- undo -----------------------------------------------------------------------------

    def _revert(self, op: Operation, *, fire: bool = False) -> None:
        """Put the task back exactly as it was before ``op``."""
        ssn = self.ssn
        task = op.task
        job = ssn.jobs[task.job]
        node = ssn.nodes.get(op.node_name)
        if op.kind is OperationKind.EVICT:
            job.update_task_status(task, op.before.status)
            if node is not None:
                node.update_task(task)
            if fire:
                ssn._fire_undone(task, allocate=True)
            return
        if node is not None:
            node.remove_task(task)
        job.update_task_status(task, op.before.status)
        try:
            if fire:
                # Handlers still see the node the task is leaving, as in Volcano.
                ssn._fire_undone(task, allocate=False)
        finally:
            self._restore_fields(op)

    @staticmethod
    def _restore_fields(op: Operation) -> None:
        """The task's node name (and what goes with it) as before ``op``."""
        task = op.task
        task.node_name = op.before.node_name
        task.job_allocated_hyper_node = ""
        if not task.node_name:
            task.gpu_devices = ()

    def discard(self) -> None:
        """Undo every operation, last first.

        If an event handler raises, the operation being undone is reverted anyway (and
        every other handler sees it undone), the ones not yet undone stay in the
        statement (a second ``discard`` finishes the job), and the error propagates.
        """
        while self.operations:
            op = self.operations.pop()
            op.task.generate_last_transaction()
            self._revert(op, fire=True)

    def unallocate(self, task: TaskInfo) -> None:
        """Undo the latest placement of one task (Volcano's ``UnAllocate``/``UnPipeline``)."""
        for i in range(len(self.operations) - 1, -1, -1):
            op = self.operations[i]
            if op.task is task and op.kind is not OperationKind.EVICT:
                del self.operations[i]
                self._revert(op, fire=True)
                return

    # -- commit ---------------------------------------------------------------------------

    def commit(self) -> None:
        """Hand evictions and binds to the cache, in order.

        Allocated tasks become Binding. A bind the cache refuses, or that raises
        (the host's API server was unreachable, say), returns that task to Pending
        (its node and the plugins' shares are released) and is recorded as Volcano
        records it: a ``FailedScheduling`` warning ``failed to bind to node <node>:
        <reason>``; the other operations stand, except for the gang
        rule: when a failed bind leaves its job below its minimum (not ready), the
        job's other binds of this commit are rolled back too (the cache's
        ``unbind`` if it has one, else ``evict``), so that no gang is left partly
        bound. A job annotated ``batchsched.io/bind-failure-policy: KeepBound``
        keeps the binds that went through instead; its failed tasks wait for the
        next session (:func:`bind_failure_policy`).
        """
        _refuse_closed(self.ssn, "a commit")
        ssn = self.ssn
        committed: list[Operation] = []
        operations = self.operations
        handed_over = 0
        failed_jobs: set[str] = set()
        # A plugin raising while a refused operation is reverted must not stop the
        # commit half-way: the host has taken what it took, and a gang below its
        # minimum must still be taken back. The first such error is raised at the end.
        raised: list[Exception] = []
        try:
            for op in operations:
                task, kind = op.task, op.kind
                task.clear_last_transaction()
                if kind is OperationKind.EVICT:
                    if ssn._evict(task, op.reason):
                        committed.append(op)
                        ssn._evicted_on.add(op.node_name)
                    else:
                        self._revert_noting(op, raised)
                elif kind is OperationKind.ALLOCATE:
                    if self._bind(task):
                        ssn.jobs[task.job].update_task_status(task, _BINDING)
                        node = ssn.nodes.get(op.node_name)
                        if node is not None:
                            node.update_task(task)
                        committed.append(op)
                    else:
                        self._revert_noting(op, raised)
                        failed_jobs.add(task.job)
                else:
                    committed.append(op)
                handed_over += 1
        finally:
            # If the cache raised, the operations not yet handed over (the failing one
            # included) stay in the statement, where discard can still undo them.
            del operations[:handed_over]
        for uid in sorted(failed_jobs):
            job = ssn.jobs[uid]
            # Below minMember, a role's minTaskMember or a sub-group policy's minimum
            # (the gang's readiness), whatever the plugins say, and the job did not ask
            # to keep what was bound.
            if not gang_ready(job) and bind_failure_policy(ssn, job) == ROLLBACK_GANG:
                committed = self._roll_back_binds(uid, committed, raised)
        ssn._statement_committed(committed)
        if raised:
            raise raised[0]

    def _revert_noting(self, op: Operation, raised: list[Exception]) -> None:
        """:meth:`_revert` with the handlers fired; an error is kept in ``raised``
        (the task is reverted anyway)."""
        try:
            self._revert(op, fire=True)
        except Exception as exc:
            raised.append(exc)

    def _bind(self, task: TaskInfo) -> bool:
        ssn = self.ssn
        try:
            if ssn._bind(task):
                return True
            reason = "the cache refused the bind"
        except Exception as exc:  # the host's failure: the bind did not happen
            reason = f"bind raised {type(exc).__name__}: {exc}"
            log.warning("batchsched: task %s: %s", task.uid, reason)
        # Volcano's cache.Bind on a failure: the pod's condition (SchedulerError) and a
        # FailedScheduling warning.
        message = f"{BIND_FAILURE_PREFIX}{task.node_name}: {reason}"
        ssn.record_event(task.uid, "Warning", "FailedScheduling", message)
        task.scheduling_condition = ("SchedulerError", message)
        keep = getattr(ssn.cache, "set_scheduling_condition", None)
        if keep is not None:
            ssn._tell_cache("set_scheduling_condition", task.uid,
                            functools.partial(keep, task, "SchedulerError"), message)
        return False

    def _roll_back_binds(self, job_uid: str, committed: list[Operation],
                         raised: list[Exception]) -> list[Operation]:
        """Undo the job's binds of this commit (the gang fell below its minimum), as
        far as the host took them back: an unbound pod is Pending again; an evicted
        one (a host without ``unbind``) is Releasing on its node, its room freed once
        it is gone; a bind the host kept stands in this session too (its room is not
        the session's to give again)."""
        ssn = self.ssn
        kept: list[Operation] = []
        for op in committed:
            if op.kind is not OperationKind.ALLOCATE or op.task.job != job_uid:
                kept.append(op)
                continue
            outcome = ssn._unbind(op.task, "gang below its minimum after a failed bind")
            if outcome == "kept":
                kept.append(op)
                continue
            ssn.bound_count -= 1
            if outcome == "unbound":
                self._revert_noting(op, raised)
                continue
            task = op.task
            ssn.jobs[task.job].update_task_status(task, TaskStatus.RELEASING)
            node = ssn.nodes.get(op.node_name)
            if node is not None:
                node.update_task(task)
            try:
                ssn._fire_undone(task, allocate=False)  # as an eviction does
            except Exception as exc:
                raised.append(exc)
        return kept

    def merge(self, *others: Statement) -> None:
        """Take over the operations of other statements (Volcano's ``Merge``)."""
        for other in others:
            self.operations.extend(other.operations)
            other.operations = []

    def has_evictions(self) -> bool:
        return any(op.kind is OperationKind.EVICT for op in self.operations)

    def evicts_requests(self) -> bool:
        """Whether an eviction here frees something besides a pod slot (preempt's
        "eviction occurred": Volcano ignores best-effort victims)."""
        return any(op.kind is OperationKind.EVICT and not op.task.resreq.is_empty()
                   for op in self.operations)

    def __len__(self) -> int:
        return len(self.operations)



#: A pod-group annotation choosing what a failed bind does to the gang.
BIND_FAILURE_POLICY_ANNOTATION = "batchsched.io/bind-failure-policy"
#: The default: a failed bind that leaves the gang below minMember takes back the
#: gang's other binds of the commit (no gang is left partly bound).
ROLLBACK_GANG = "RollbackGang"
#: The binds that went through stand; the failed tasks are tried again next session.
KEEP_BOUND = "KeepBound"
_POLICIES = (ROLLBACK_GANG, KEEP_BOUND)


def bind_failure_policy(ssn: Session, job: JobInfo) -> str:
    """The job's bind-failure policy (``batchsched.io/bind-failure-policy``). An
    unknown value is reported as a Warning event on the job and the default applies."""
    value = job.podgroup.annotations.get(BIND_FAILURE_POLICY_ANNOTATION, ROLLBACK_GANG)
    if value in _POLICIES:
        return value
    ssn.record_event(job.uid, "Warning", "InvalidBindFailurePolicy",
                     f"annotation {BIND_FAILURE_POLICY_ANNOTATION}: {value!r} is not one of "
                     f"{', '.join(_POLICIES)}; {ROLLBACK_GANG} applies")
    return ROLLBACK_GANG


def _refuse_closed(ssn: Session, what: str) -> None:
    """A closed session handed its statuses to the cache: nothing decided on it may
    reach the cache after them."""
    if ssn._closed:
        raise SchedulingError(f"session {ssn.uid} is closed: {what} on it would reach the "
                              "cache after the statuses it handed over; open a new session "
                              "(Session.open)")
