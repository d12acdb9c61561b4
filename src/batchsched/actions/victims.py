"""What the preempt and reclaim actions share: finding candidate nodes, ordering
victims, checking whether a preemptor fits, and committing evictions with events.

Volcano's equivalents live in ``pkg/scheduler/util`` (``PredicateHelper``,
``PrioritizeNodes``, ``SortNodes``, ``ValidateVictims``) and in
``Session.PredicateForPreemptAction`` /
``Session.FilterOutUnschedulableAndUnresolvableNodesForTask``. The node search
itself (how many nodes a scan collects, which predicate statuses fail a node,
scores, the predicate-error cache) is :mod:`batchsched.actions.node_search`,
the same rules allocate and backfill follow. Where Volcano iterates a Go map or runs
goroutines, the rule used here is stated in the function's docstring; nothing
depends on randomness or timing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from batchsched.actions.node_search import (
    FeasibleNodeScan,
    hard_shard_of,
    node_scores,
    nodes_to_find_of,
    predicate_for_preempt_action,
)
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.columnar.eviction_room import EvictionRoom
from batchsched.columnar.node_columns import IndexArray, NodeColumns
from batchsched.columnar.selector import (
    fast_path_enabled,
    vector_preempt_scan,
    vector_ranked_nodes,
    vector_ranked_positions,
)
from batchsched.framework.session import Session
from batchsched.framework.statement import OperationKind, Statement

__all__ = [
    "PREEMPT_REASON",
    "RECLAIM_REASON",
    "NodePredicates",
    "TaskFilter",
    "candidates_on_node",
    "commit_with_events",
    "evicting_jobs",
    "eviction_room",
    "fits_on_node",
    "in_victim_order",
    "jobs_in_order",
    "lazy_victims",
    "nodes_to_visit",
    "pending_tasks",
    "queues_and_starving_jobs",
    "score_nodes",
    "session_task",
    "validate_victims",
    "victim_order",
    "worth_visiting",
]

#: The reason Volcano passes to ``Statement.Evict`` (and so to the evictor) per action.
PREEMPT_REASON = "preempt"
RECLAIM_REASON = "reclaim"

#: Which tasks on a node may be offered to the Preemptable/Reclaimable plugins.
TaskFilter = Callable[[TaskInfo], bool]

T = TypeVar("T")


# -- arguments ----------------------------------------------------------------------------


# -- ordering -----------------------------------------------------------------------------


def _sorted_by(less: Callable[[T, T], bool], items: Iterable[T]) -> list[T]:
    def compare(left: T, right: T) -> int:
        if less(left, right):
            return -1
        if less(right, left):
            return 1
        return 0

    return sorted(items, key=functools.cmp_to_key(compare))


def jobs_in_order(ssn: Session, jobs: Iterable[JobInfo] | None = None) -> list[JobInfo]:
    """The session's jobs (or the given ones) in job order (``ssn.job_order_fn``).

    Volcano walks ``ssn.Jobs``, a Go map, when it collects preemptors; walking
    them in job order instead makes every later tie (heap insertion order, the
    order of preempt's within-job pass) reproducible. ``job_order_fn`` falls back
    to creation time and then the job id, so the order is total.
    """
    items = ssn.jobs.values() if jobs is None else jobs
    key = ssn.job_order_key()
    if key is not None:
        return sorted(items, key=key)  # the same total order, compared in C
    return _sorted_by(ssn.job_order_fn, items)


def evicting_jobs(ssn: Session) -> Iterator[tuple[QueueInfo, JobInfo]]:
    """The jobs, in job order, that take part in an eviction action, with their
    queue: not Pending, valid (``ssn.job_valid``), of a queue of the session."""
    for job in jobs_in_order(ssn):
        if job.is_pending():
            continue
        verdict = ssn.job_valid(job)
        if verdict is not None and not verdict.passed:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is not None:
            yield queue, job


def queues_and_starving_jobs(
    ssn: Session,
) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]], list[JobInfo]]:
    """What reclaim and the gang actions walk: every queue with an evicting job (queue
    order), its starving jobs (job order), and those jobs as they were found."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    seen: set[str] = set()
    starving: dict[str, PriorityQueue[JobInfo]] = {}
    found: list[JobInfo] = []
    for queue, job in evicting_jobs(ssn):
        if queue.name not in seen:
            seen.add(queue.name)
            queues.push(queue)
        if ssn.job_starving(job):
            starving.setdefault(queue.name, PriorityQueue(ssn.job_order_fn)).push(job)
            found.append(job)
    return queues, starving, found


def pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """The job's Pending tasks that no scheduling gate holds, in task order
    (``ssn.task_order_fn``): those preempt and reclaim make room for."""
    return PriorityQueue(ssn.task_order_fn, (
        task for task in job.tasks_in(TaskStatus.PENDING).values()
        if not task.scheduling_gated))


def victim_order(ssn: Session, preemptor: TaskInfo, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """``tasks`` in the order they would be evicted for ``preemptor``
    (``ssn.build_victims_priority_queue``: the first one is evicted first)."""
    if isinstance(tasks, list) and len(tasks) < 2:
        return list(tasks)  # nothing to order (the node's last candidate, often)
    queue = ssn.build_victims_priority_queue(tasks, preemptor)
    return [queue.pop() for _ in range(len(queue))]


def session_task(ssn: Session, task: TaskInfo) -> TaskInfo | None:
    """The job's own object for a task (nodes hold copies), or None if the job is gone."""
    job = ssn.jobs.get(task.job)
    if job is None:
        return None
    return job.tasks.get(task.uid)


def candidates_on_node(
    ssn: Session, preemptor: TaskInfo, node: NodeInfo, keep: TaskFilter
) -> list[TaskInfo]:
    """The tasks on ``node`` that ``keep`` accepts, as the jobs' own objects, in
    victim order.

    Volcano hands the plugins the node's tasks in Go map order, and budget-style
    plugins (gang, pdb, proportion, drf) accept candidates in the order given. We
    hand them over in eviction order, so a budget is spent on the victims that
    would be evicted first anyway. This is the only victim ordering of a node
    attempt: what the plugins keep is put back in this order by
    :func:`in_victim_order`, without asking the order plugins again.
    """
    picked: list[TaskInfo] = []
    for held in node.tasks.values():
        if not keep(held):
            continue
        task = session_task(ssn, held)
        if task is not None:
            picked.append(task)
    return victim_order(ssn, preemptor, picked)


def in_victim_order(victims: Iterable[TaskInfo], ordered: Sequence[TaskInfo]) -> list[TaskInfo]:
    """``victims`` (what the plugins kept of ``ordered``, the node's candidates in
    victim order) in the order of ``ordered``.

    The victim order is a total order over the tasks, so the order of a subset is
    its order within the whole set: no order plugin is asked again. A task not
    among ``ordered`` (a plugin returned something it was not offered) goes last,
    in the order the plugins gave. Evicting one after the other is
    :func:`lazy_victims`' business.
    """
    rank = {task.uid: i for i, task in enumerate(ordered)}
    missing = len(rank)
    return sorted(victims, key=lambda task: rank.get(task.uid, missing))


def lazy_victims(ssn: Session, preemptor: TaskInfo,
                 victims: Sequence[TaskInfo]) -> PriorityQueue[TaskInfo]:
    """The victims of one node attempt as Volcano evicts them: pushed (in victim
    order) into ``ssn.build_victims_priority_queue`` and popped one at a time, each
    pop after the evictions before it. The heap compares when it pops, so an
    eviction that moves a share or a job's readiness (capacity's, drf's, gang's
    orders) reorders the victims still queued, as Volcano's heap does."""
    return ssn.build_victims_priority_queue(victims, preemptor)


# -- nodes --------------------------------------------------------------------------------


def fits_on_node(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    """Whether the preemptor could be placed on the node now: its queue may take it
    (``ssn.allocatable``), its request fits the node's future idle (``pods``
    included), and every predicate passes."""
    return (
        ssn.allocatable(queue, task)
        and task.init_resreq.less_equal(node.future_idle())
        and ssn.predicate(task, node) is None
    )


def validate_victims(task: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]) -> bool:
    """Volcano's ``ValidateVictims``: could the task fit the node's future idle once
    every victim is gone? An empty victim list is valid when it already fits."""
    room = node.future_idle()
    for victim in victims:
        room.add(victim.resreq)
    return task.init_resreq.less_equal(room)


def eviction_room(ssn: Session, point: str) -> EvictionRoom | None:
    """What :func:`worth_visiting` needs for one execution of an action whose victims
    the plugins of ``point`` (``"preemptable"`` or ``"reclaimable"``) choose (None on
    the reference path, which visits every node)."""
    return EvictionRoom(ssn, point) if fast_path_enabled() else None


def worth_visiting(
    ssn: Session, room: EvictionRoom | None, task: TaskInfo, nodes: Sequence[NodeInfo]
) -> Iterable[NodeInfo]:
    """``nodes`` (in their order) without those where no victims the plugins could
    choose make room for ``task``: there :func:`validate_victims` fails whatever
    they choose, so visiting them decides nothing
    (:mod:`batchsched.columnar.eviction_room`). Produced one at a time."""
    if room is None or not nodes:
        return nodes
    columns = NodeColumns.of(ssn)
    positions = columns.positions_of(nodes)
    if positions is None:
        return nodes
    return _unless_hopeless(room, task, positions, columns.nodes)


def nodes_to_visit(
    ssn: Session, room: EvictionRoom | None, task: TaskInfo, nodes: Sequence[NodeInfo]
) -> Iterable[NodeInfo]:
    """``nodes`` in :func:`score_nodes` order, less those :func:`worth_visiting` drops,
    produced one at a time (a preemptor usually takes one of the first: the rest is
    never judged)."""
    if room is None or len(nodes) < 2:
        return worth_visiting(ssn, room, task, score_nodes(ssn, task, nodes))
    ranked = vector_ranked_positions(ssn, task, nodes)
    if ranked is None:
        return worth_visiting(ssn, room, task, score_nodes(ssn, task, nodes))
    return _unless_hopeless(room, task, ranked, NodeColumns.of(ssn).nodes)


def _unless_hopeless(
    room: EvictionRoom, task: TaskInfo, ranked: IndexArray, every: Sequence[NodeInfo]
) -> Iterator[NodeInfo]:
    """The nodes at ``ranked`` that are not hopeless, asked a slice at a time (doubling
    from 32): a preemptor usually takes one of the first, and the bound of a slice
    costs only its nodes' tasks. Each slice is judged when reached, on the session
    as it then is (a node visited in vain leaves it as it found it)."""
    start, size = 0, 32
    while start < len(ranked):
        part = ranked[start:start + size]
        hopeless = room.hopeless_at(task, part)
        for at in part[~hopeless].tolist():
            yield every[at]
        start += size
        size *= 2


def score_nodes(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
    """``nodes`` by node-order score (:func:`~batchsched.actions.node_search.node_scores`:
    node-order plus batch node-order functions; a node-order function that fails a
    node scores it 0 there, as Volcano does), highest first; equal scores keep
    their order in ``nodes`` (Volcano's ``SortNodes`` walks a Go map of score
    buckets). A single node is scored too, as Volcano's preempt scores it: a batch
    node-order function that fails (an extender's prioritize) leaves no node to try."""
    if not nodes:
        return []
    ranked_nodes = vector_ranked_nodes(ssn, task, nodes)
    if ranked_nodes is not None:
        return ranked_nodes
    scores = node_scores(ssn, task, nodes)
    if scores is None:
        return []  # no scores (Volcano's PrioritizeNodes error): no node to try
    ranked = sorted(range(len(nodes)), key=lambda i: -scores[i])
    return [nodes[i] for i in ranked]


class NodePredicates:
    """The preempt predicate over the session's nodes, through the shared
    :class:`~batchsched.actions.node_search.FeasibleNodeScan`.

    :meth:`feasible_nodes` scans the session's nodes in session order, always from
    the first (Volcano starts from a rotating index with 16 goroutines, so its
    result order varies), and stops after
    :func:`~batchsched.actions.node_search.num_feasible_nodes_to_find` hits. With
    ``cache_errors``, a node that failed for one task of a job's role
    (``job/role``; never for the empty role) is failed without re-running the
    predicates for the other tasks of that role.
    """

    def __init__(self, ssn: Session, *, cache_errors: bool = True) -> None:
        self.ssn = ssn
        self.cache_errors = cache_errors
        self._scan = FeasibleNodeScan(ssn.node_list, error_cache_enabled=cache_errors,
                                      rotate=False,
                                      nodes_to_find=nodes_to_find_of(ssn),
                                      shard=hard_shard_of(ssn))

    def feasible_nodes(self, task: TaskInfo) -> list[NodeInfo]:
        ssn = self.ssn
        skip = self._hopeless_for(task)
        found = vector_preempt_scan(ssn, self._scan, task, ssn.node_list, exclude=skip)
        if found is not None:
            return found
        nodes = [n for n in ssn.node_list if n.name not in skip] if skip else list(
            ssn.node_list)
        found, _ = self._scan.feasible_nodes(
            task, nodes, lambda t, n: predicate_for_preempt_action(ssn, t, n))
        return found

    def _hopeless_for(self, task: TaskInfo) -> set[str]:
        """The nodes an earlier allocate found hopeless for this task
        (UnschedulableAndUnresolvable): the scan leaves them out."""
        job = self.ssn.jobs.get(task.job)
        errors = job.nodes_fit_errors.get(task.uid) if job is not None else None
        return set() if errors is None else errors.unresolvable_nodes()


# -- committing ---------------------------------------------------------------------------


def commit_with_events(ssn: Session, stmt: Statement) -> int:
    """Commit ``stmt`` and record Volcano's events for each eviction the cache took.

    Per eviction, as Volcano's evictor and cache do: on the pod a Warning
    ``Evict`` "Pod is evicted, because of <reason>", and on its pod group a
    Normal ``Evict`` "<reason>". Returns the number of evictions committed.
    """
    evictions = [op for op in stmt.operations if op.kind is OperationKind.EVICT]
    stmt.commit()
    done = 0
    for op in evictions:
        if op.task.status is not TaskStatus.RELEASING:
            continue  # the cache refused it and the statement put the task back
        done += 1
        ssn.record_event(op.task.uid, "Warning", "Evict",
                         f"Pod is evicted, because of {op.reason}")
        ssn.record_event(op.task.job, "Normal", "Evict", op.reason)
    return done
