"""strict-allocate: allocate in job order, and let no job overtake a blocked one.

The HPC "no backfilling" rule. It works as :mod:`~batchsched.actions.allocate`
does (queue order, job order, gangs through a statement, the same node
choice), with one difference: the first job that cannot start (its statement
is not committed) ends the action for the rest of the session, in every queue
(the simulation contract's rule: no job overtakes a blocked one); with
``blockPerQueue`` it blocks only its own queue, and the other queues go on. The
blocked place is published for :mod:`~batchsched.actions.easy_backfill` in
``ssn.extra["strict-allocate.blocked"]`` (queue name -> job uid).

A gang whose whole request exceeds what the cluster will have free in total
(idle plus releasing, less what is pipelined) cannot start anywhere; it is
reported blocked without trying every node, which decides the same and keeps
a long blocked head cheap.

Arguments (``configurations: - name: strict-allocate``):

* ``holdBlockedHead`` (default false): a job that blocked its queue stays the
  queue's head in later sessions until it starts, even if a job that the order
  puts before it arrives meanwhile, and while a job of another queue blocks
  first (queues still take their turns in queue order). RLScheduler's reference
  simulator works this way (it picks a head once and waits for it); batchsched's
  own rule re-reads the order at every session.
* ``blockPerQueue`` (default false): a blocked job blocks its own queue only.
* ``predicateErrorCacheEnable``, as for allocate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from batchsched.actions.allocate import AllocateAction, _AllocateRun
from batchsched.actions.placement import NodeSelector
from batchsched.api.job import JobInfo
from batchsched.api.node import node_changes
from batchsched.api.resource import Resource
from batchsched.api.types import TaskStatus
from batchsched.columnar.node_columns import NodeColumns
from batchsched.framework.arguments import Arguments

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = [
    "BLOCKED_KEY",
    "PER_QUEUE_KEY",
    "StrictAllocateAction",
    "cluster_free",
    "gang_may_fit",
    "pending_request",
]

#: Where the session keeps each queue's blocked head (queue name -> job uid).
BLOCKED_KEY = "strict-allocate.blocked"
#: True in the session when a blocked head blocks its own queue only
#: (``blockPerQueue``); else it blocked every queue.
PER_QUEUE_KEY = "strict-allocate.perQueue"


class StrictAllocateAction(AllocateAction):
    """allocate, stopping at the first job that cannot start (in its queue only, with
    ``blockPerQueue``)."""

    name = "strict-allocate"
    arguments_read = ("holdBlockedHead", "blockPerQueue")

    def __init__(self, arguments: Arguments | None = None) -> None:
        super().__init__(arguments)
        self.hold_blocked_head = self.arguments.get_bool("holdBlockedHead", False, owner=self.name)
        self.block_per_queue = self.arguments.get_bool("blockPerQueue", False, owner=self.name)
        #: Queue name -> the job holding its head (kept across sessions).
        self.held: dict[str, str] = {}

    def execute(self, ssn: Session) -> None:
        held = self.held if self.hold_blocked_head else {}
        run = _StrictRun(ssn, lambda: self.new_selector(ssn), held,
                         per_queue=self.block_per_queue)
        run.run()
        if self.hold_blocked_head:
            # A queue whose turn did not come (a job of another queue blocked first)
            # keeps its held head.
            self.held = {**{queue: job.uid for queue, job in run.held.items()},
                         **run.blocked}
        ssn.extra[BLOCKED_KEY] = dict(run.blocked)
        ssn.extra[PER_QUEUE_KEY] = self.block_per_queue


class _StrictRun(_AllocateRun):
    def __init__(
        self, ssn: Session, selector: Callable[[], NodeSelector], held: dict[str, str], *,
        per_queue: bool = False,
    ) -> None:
        super().__init__(ssn, selector)
        self.per_queue = per_queue
        self.blocked: dict[str, str] = {}
        self.tried: list[JobInfo] = []
        self._free: Resource | None = None
        # A held head is taken out of its queue's heap: it goes first, and the heap
        # must not hold a job whose rank changes while it sits there.
        self.held: dict[str, JobInfo] = {}
        for queue, uid in held.items():
            job = ssn.jobs.get(uid)
            # A list scan by identity, in C: most sessions hold one head.
            if job is None or not self.has_jobs(queue) or job not in self.considered:
                continue
            self.held[queue] = job
            self.leave_out(queue, job)

    def run(self) -> None:
        ssn = self.ssn
        done: set[str] = set()
        while self.queues:
            queue = self.queues.pop()
            if ssn.overused(queue):
                continue
            job = self._next_job(queue.name, done)
            if job is None or not self.has_jobs(queue.name):
                continue
            self.tried.append(job)
            # The fit in total first: a blocked head's task list is then never built.
            started = self._may_fit(job)
            if started:
                tasks = self.tasks_of(job)
                started = self.allocate_job(queue, job, tasks)
            if not started:
                self.blocked[queue.name] = job.uid
                if not self.per_queue:
                    return  # no job, of any queue, overtakes a blocked one
                continue  # the queue is blocked: it is not pushed back
            self._free = None
            if self.has_work(job, tasks):
                jobs = self.job_heap(queue.name)
                assert jobs is not None  # has_jobs
                jobs.push(job)
            else:
                done.add(job.uid)
            self.queues.push(queue)

    def _next_job(self, queue: str, done: set[str]) -> JobInfo | None:
        held = self.held.pop(queue, None)
        if held is not None:
            return held
        jobs = self.job_heap(queue)
        while jobs:
            job = jobs.pop()
            if job.uid not in done:
                return job
        return None

    def _may_fit(self, job: JobInfo) -> bool:
        if self._free is None:
            self._free = cluster_free(self.ssn)
        return gang_may_fit(job, self._free)


def cluster_free(ssn: Session) -> Resource:
    """What the cluster will have free in total: idle plus releasing, less pipelined.

    A fresh object the caller may change. The sum is kept on the session until a
    node changes (:func:`~batchsched.api.node.node_changes` has not moved):
    strict-allocate and easy-backfill ask for it after every job they try.
    """
    version = node_changes()
    kept = ssn.extra.get(_FREE_KEY)
    if kept is not None and kept[0] == version:
        return kept[1].clone()  # type: ignore[no-any-return]
    columns = NodeColumns.built_for(ssn)
    if columns is not None:
        free = columns.future_idle_total()
        ssn.extra[_FREE_KEY] = (version, free)
        return free.clone()
    # Resource.add's float operations, inlined: this runs after every job started.
    cpu = memory = 0.0
    scalars: dict[str, float] = {}
    for node in ssn.node_list:
        releasing, pipelined = node.releasing, node.pipelined
        # _exactly_zero's test, its common case inlined (no scalars named).
        if (not (releasing.milli_cpu or releasing.memory or pipelined.milli_cpu
                 or pipelined.memory)
                and (not releasing.scalars or _exactly_zero(releasing))
                and (not pipelined.scalars or _exactly_zero(pipelined))):
            part = node.idle  # (idle + 0) - 0 is idle, bit for bit
        else:
            part = node.future_idle()
        cpu += part.milli_cpu
        memory += part.memory
        for name, amount in part.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + amount
    free = Resource(cpu, memory, scalars)
    ssn.extra[_FREE_KEY] = (version, free)
    return free.clone()


def _exactly_zero(res: Resource) -> bool:
    return not (res.milli_cpu or res.memory or (res.scalars and any(res.scalars.values())))


def gang_may_fit(job: JobInfo, free: Resource) -> bool:
    """False when the job is all-or-nothing and its pending request exceeds ``free`` in
    total: no placement can then start it, so it need not be searched for."""
    if job.min_available < len(job.tasks):
        return True  # the gang may start with part of its tasks: only a search can tell
    return pending_request(job).less_equal(free)


def pending_request(job: JobInfo) -> Resource:
    """What the job's pending tasks ask for, in total (do not change the result: it is
    kept until the job's tasks change)."""
    kept = job.memo.get(_PENDING_KEY)
    if kept is not None and kept[0] == job.mutations:
        need: Resource = kept[1]
        return need
    need = Resource()
    for task in job.tasks_in(TaskStatus.PENDING).values():
        need.add(task.resreq)
    job.memo[_PENDING_KEY] = (job.mutations, need)
    return need


_FREE_KEY = "strict-allocate.cluster-free"
#: Each job's last pending request, kept in its memo with its mutation count.
_PENDING_KEY = "strict-allocate.pending-request"
