"""allocate for a job whose network topology confines it, or whose pod group splits it
into sub-jobs (Volcano's ``allocateForJob`` and ``allocateForSubJob``).

A hard topology (and a soft one, which the session turns into hard with the whole
cluster as its limit, :mod:`batchsched.framework.network_topology`) places the job
within one hypernode of a tier no higher than it allows. The gradient plugin
(network-topology-aware) lists the hypernodes to try, tier by tier, lowest first.
For each hypernode of a tier the job's sub-jobs are placed in turn, as a dry run,
then undone; among the hypernodes where the job ended ready or pipelined, the one
whose sub-jobs scored highest wins and its placements are made again for real. A
higher tier is tried only when no hypernode of a lower one worked. A job without a
topology but with sub-group policies takes the same path with the whole cluster as
its one hypernode.

Each sub-job (:mod:`batchsched.api.sub_job`; a job without policies has one, all its
tasks) is placed by the same search within the hypernode tried for the job: its own
gradient (its own topology, if any), a dry run per hypernode on that hypernode's
nodes until the sub-job is ready, the best by hypernode-order score kept. Sub-jobs
go in worksheet order: the not-ready ones the job needs to reach each policy's
``minSubGroups`` first, then the sub-job order (priority, gang: not ready first,
then match index, then id); a sub-job with tasks left after its turn goes back in.
The job keeps where it and each sub-job lie (the lowest common ancestor of the old
and the new), which bounds their later tasks.

Ties: Volcano picks among equal hypernode scores at random (Go map order and
``rand.Intn``); batchsched takes the first in gradient order (the plugin lists a
tier's hypernodes by name).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from batchsched.api.hypernode import CLUSTER_TOP
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.sub_job import SubJobInfo, min_sub_jobs, sub_jobs_of
from batchsched.api.task import TaskInfo, TransactionContext
from batchsched.api.types import TaskStatus
from batchsched.errors import SchedulingError
from batchsched.framework.statement import Operation, OperationKind, Statement

if TYPE_CHECKING:
    from batchsched.actions.allocate import _AllocateRun
    from batchsched.framework.session import Session

__all__ = ["ALLOCATE", "EVICT", "Worksheet", "allocate_in_hyper_nodes", "uses_hyper_nodes",
           "worksheet_of"]

#: The purposes a gradient is asked for (Volcano's ``PurposeAllocate``/``PurposeEvict``).
ALLOCATE = "allocate"
EVICT = "evict"

T = TypeVar("T")


class GoHeap(Generic[T]):
    """Go's ``container/heap`` over a ``less`` read at every step (Volcano's sub-job
    queue compares readiness, which placements change while items wait)."""

    def __init__(self, less: Callable[[T, T], bool]) -> None:
        self.less = less
        self.items: list[T] = []

    def __len__(self) -> int:
        return len(self.items)

    def push(self, item: T) -> None:
        items = self.items
        items.append(item)
        j = len(items) - 1
        while j > 0:
            i = (j - 1) // 2
            if not self.less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def pop(self) -> T:
        items = self.items
        n = len(items) - 1
        items[0], items[n] = items[n], items[0]
        i = 0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and self.less(items[j2], items[j1]):
                j = j2
            if not self.less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j
        return items.pop()

    def clone(self) -> GoHeap[T]:
        twin: GoHeap[T] = GoHeap(self.less)
        twin.items = list(self.items)
        return twin


@attrs.define
class Worksheet:
    """What a job has left to place: its sub-jobs in worksheet order and each one's
    pending tasks in task order (Volcano's ``JobWorksheet``)."""

    sub_jobs: GoHeap[SubJobInfo]
    tasks: dict[str, PriorityQueue[TaskInfo]]

    def __bool__(self) -> bool:
        return bool(self.sub_jobs)

    def clone(self) -> Worksheet:
        return Worksheet(self.sub_jobs.clone(),
                         {uid: tasks.clone() for uid, tasks in self.tasks.items()})

    def adopt(self, other: Worksheet) -> None:
        self.sub_jobs = other.sub_jobs
        self.tasks = other.tasks


def uses_hyper_nodes(job: JobInfo) -> bool:
    """Whether allocate places the job through hypernodes and sub-jobs (Volcano:
    ``ContainsHardTopology() || ContainsSubJobPolicy()``)."""
    if job.podgroup.sub_group_policies:
        return True
    spec = job.network_topology
    return spec is not None and spec.hard_tier() is not None


def worksheet_of(ssn: Session, job: JobInfo,
                 default_tasks: Callable[[], PriorityQueue[TaskInfo]], *,
                 every_gate: bool = False) -> Worksheet:
    """Volcano's ``organizeJobWorksheet``. ``default_tasks`` gives the task queue of a
    job without policies (the one allocate keeps for the job). A sub-job's tasks
    leave out pods another controller gates (allocate passes over those held only by
    Volcano's queue-allocation gate), or, with ``every_gate``, every gated pod (the
    eviction worksheet's rule)."""
    sub_jobs = sub_jobs_of(job)
    policies = bool(job.podgroup.sub_group_policies)
    ready_count: dict[str, int] = {}
    candidates = []
    for sub_job in sub_jobs.values():
        if ssn.sub_job_ready(job, sub_job):
            ready_count[sub_job.gid] = ready_count.get(sub_job.gid, 0) + 1
        else:
            candidates.append(sub_job)
    candidates.sort(key=functools.cmp_to_key(
        lambda left, right: -1 if ssn.sub_job_less(left, right) else 1))
    required: set[str] = set()
    minimums = min_sub_jobs(job)
    for sub_job in candidates:
        if ready_count.get(sub_job.gid, 0) < minimums.get(sub_job.gid, 0):
            required.add(sub_job.uid)
            ready_count[sub_job.gid] = ready_count.get(sub_job.gid, 0) + 1

    def less(left: SubJobInfo, right: SubJobInfo) -> bool:
        if (left.uid in required) != (right.uid in required):
            return left.uid in required
        return ssn.sub_job_less(left, right)

    heap: GoHeap[SubJobInfo] = GoHeap(less)
    queues: dict[str, PriorityQueue[TaskInfo]] = {}
    for sub_job in sub_jobs.values():
        if policies:
            tasks = ssn.task_queue(
                task for task in sub_job.tasks_in(TaskStatus.PENDING)
                if not task.resreq.is_empty()
                and not (task.scheduling_gated if every_gate else task.externally_gated))
        else:
            tasks = default_tasks()
        if tasks:
            heap.push(sub_job)
            queues[sub_job.uid] = tasks
    return Worksheet(heap, queues)


def allocate_in_hyper_nodes(run: _AllocateRun, queue: QueueInfo, job: JobInfo) -> bool:
    """One round for such a job: True when it was committed."""
    ssn = run.ssn
    worksheet = run.worksheet(job)
    if not worksheet:
        return False
    found = _search_for_job(run, queue, job, worksheet)
    if found is None:
        return False
    stmt, for_job = found
    if not ssn.job_ready(job):
        return False  # pipelined only: the placements stay for the session, unbound
    stmt.commit()
    topology = ssn.topology
    job.allocated_hyper_node = topology.lca(job.allocated_hyper_node, for_job)
    # Volcano's recorder: every sub-job decision made within that hypernode during this
    # action (earlier rounds' too) is applied.
    for uid, decided in run.sub_job_decisions.get(job.uid, {}).get(for_job, {}).items():
        job.set_sub_job_hyper_node(uid, topology.lca(job.sub_job_hyper_node(uid), decided))
    return True


@attrs.frozen
class _Tried:
    operations: list[Operation]
    worksheet: Worksheet
    score: float
    transactions: dict[str, TransactionContext | None]


def _transactions(operations: list[Operation]) -> dict[str, TransactionContext | None]:
    """The last transaction of each task the operations place, as when they were saved:
    Volcano saves a dry run's operations on copies of its tasks (``SaveOperations``),
    and the placements made again from them (``RecoverOperations``) leave those copies
    in the job, with the last transaction they had then, whatever the dry runs after
    it stamped on the tasks."""
    return {op.task.uid: op.task.last_transaction for op in operations}


def _restore_transactions(operations: list[Operation],
                          saved: dict[str, TransactionContext | None]) -> None:
    for op in operations:
        op.task.last_transaction = saved[op.task.uid]


def _search_for_job(
    run: _AllocateRun, queue: QueueInfo, job: JobInfo, worksheet: Worksheet
) -> tuple[Statement, str] | None:
    ssn = run.ssn
    held = {uid: job.sub_job_hyper_node(uid) for uid in worksheet.tasks}
    gradients = ssn.hyper_node_gradient(job, CLUSTER_TOP, ALLOCATE)
    tried_any: list[bool] = []  # whether a sub-job had a hypernode to try its tasks in
    for gradient in gradients:
        tried: dict[str, _Tried] = {}
        for hyper_node in gradient:
            if hyper_node not in ssn.topology:
                continue
            job.job_fit_errors = ""
            job.nodes_fit_errors = {}
            left = worksheet.clone()
            placed: list[Statement] = []
            score = 0.0
            while left.sub_jobs:
                sub_job = left.sub_jobs.pop()
                outcome = _search_for_sub_job(run, queue, job, sub_job,
                                              tasks=left.tasks[sub_job.uid], within=hyper_node,
                                              attempted=tried_any)
                if outcome is None or not outcome[0].operations:
                    continue  # dropped from this dry run
                stmt, sub_score = outcome
                placed.append(stmt)
                score += sub_score
                if left.tasks[sub_job.uid]:
                    left.sub_jobs.push(sub_job)
                if ssn.job_ready(job):
                    break
            for uid, name in held.items():
                job.set_sub_job_hyper_node(uid, name)
            operations = [op for stmt in placed for op in stmt.operations]
            if operations and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                tried[hyper_node] = _Tried(operations, left, score, _transactions(operations))
            for stmt in reversed(placed):
                stmt.discard()
        if not tried:
            continue
        best = max(tried, key=lambda name: tried[name].score)  # the first of the highest
        chosen = tried[best]
        replayed = _replay(run, chosen.operations)
        if replayed is None:
            return None
        _restore_transactions(chosen.operations, chosen.transactions)
        worksheet.adopt(chosen.worksheet)
        return replayed, best
    if ssn.recorder is not None:
        ssn.recorder.note(job.uid, "allocate",
                          _why_no_hyper_node(ssn, job, gradients, tasks_tried=bool(tried_any)))
    return None


def _why_no_hyper_node(ssn: Session, job: JobInfo, gradients: list[list[str]], *,
                       tasks_tried: bool) -> str:
    """What an explanation says of a job no hypernode took."""
    spec = job.network_topology
    limit = (f"{spec.mode} network topology up to tier {spec.highest_tier_allowed}"
             if spec is not None and spec.hard_tier() is not None else "sub-group policies")
    tried = [name for gradient in gradients for name in gradient]
    if not tried:
        return (f"{limit}: no hypernode of an allowed tier has room for the job's minimum "
                "(idle or future idle, as at session open)")
    shown = ", ".join(tried[:8]) + (f" and {len(tried) - 8} more" if len(tried) > 8 else "")
    if not tasks_tried:
        # The sub-jobs' own gradients passed over every hypernode within those: no task
        # was tried anywhere.
        return (f"{limit}: within the hypernodes tried ({shown}), none has room for the "
                "requests of a sub-group's pending tasks, all of them (idle or future idle, "
                "as at session open): no task was tried")
    return f"{limit}: the job is ready or pipelined in none of the hypernodes tried ({shown})"


def _search_for_sub_job(
    run: _AllocateRun, queue: QueueInfo, job: JobInfo, sub_job: SubJobInfo, *,
    tasks: PriorityQueue[TaskInfo], within: str, attempted: list[bool] | None = None,
) -> tuple[Statement, float] | None:
    """``attempted`` gets an entry when a hypernode is tried (for the explanation)."""
    ssn = run.ssn
    topology = ssn.topology
    for gradient in ssn.sub_job_hyper_node_gradient(sub_job, within, ALLOCATE):
        if gradient and attempted is not None and not attempted:
            attempted.append(True)
        tried: dict[str, tuple[list[Operation], PriorityQueue[TaskInfo],
                               dict[str, TransactionContext | None]]] = {}
        for hyper_node in gradient:
            nodes: list[NodeInfo] = topology.real_node_list.get(hyper_node, [])
            for uid in sub_job.tasks:
                job.nodes_fit_errors.pop(uid, None)
            left = tasks.clone()
            stmt = run.place_tasks(queue, job, left, nodes,
                                   hyper_node if hyper_node != CLUSTER_TOP else "",
                                   sub_job=sub_job)
            if stmt is not None and stmt.operations:
                tried[hyper_node] = (list(stmt.operations), left,
                                     _transactions(stmt.operations))
                stmt.discard()
        if not tried:
            continue
        scores = ssn.hyper_node_order(sub_job, list(tried))
        best = max(tried, key=lambda name: scores[name])
        operations, left, transactions = tried[best]
        replayed = _replay(run, operations)
        if replayed is None:
            return None
        _restore_transactions(operations, transactions)
        tasks.adopt(left)
        decided = topology.lca(job.sub_job_hyper_node(sub_job.uid), best)
        job.set_sub_job_hyper_node(sub_job.uid, decided)
        run.sub_job_decisions.setdefault(job.uid, {}).setdefault(within, {})[sub_job.uid] = decided
        return replayed, scores[best]
    return None


def _replay(run: _AllocateRun, operations: list[Operation]) -> Statement | None:
    """Volcano's ``RecoverOperations``: the dry run's placements, made again. Should
    one fail (a side effect the dry run left, such as deviceshare's node lock, refuses
    it), the replay is undone and the search fails; Volcano leaves the operations
    before it applied."""
    ssn = run.ssn
    stmt = Statement(ssn)
    try:
        for op in operations:
            node = ssn.nodes[op.node_name]
            if op.kind is OperationKind.PIPELINE:
                stmt.pipeline(op.task, node)
            else:
                stmt.allocate(op.task, node)
    except SchedulingError:
        stmt.discard()
        return None
    return stmt
