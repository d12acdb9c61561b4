"""The preempt action: starving jobs evict lower-ranked tasks of their own queue.

Volcano's ``actions/preempt``. Two passes per queue, queues in queue order:

A job with a network topology (``networkTopology`` on its pod group) does not
preempt here, as in Volcano (gangpreempt is the action for those).

1. **Between jobs.** The queue's starving jobs in job order, each with its own
   statement. While the job starves, its Pending tasks in task order try to
   preempt Bound/Running tasks of *other* jobs of the same queue. The statement
   is committed only if the job is then pipelined (``ssn.job_pipelined``);
   otherwise every eviction and reservation of that job is undone.
2. **Within a job.** For each job that was starving when the action started (job
   order), its current Pending tasks try to preempt tasks of the *same* job; each
   task has its own statement, committed when the task was placed; the first
   failure ends that job.

A preemptor never evicts anything when its ``preemptionPolicy`` is ``Never``,
and a best-effort preemptor never evicts a task that is not best-effort. Which
candidates may go is the tiered Preemptable rule (``ssn.preemptable``); the
order they go in is the victim order (``ssn.build_victims_priority_queue``, a
heap popped one victim at a time, as Volcano's: an eviction that moves a share or
a job's readiness reorders the victims still queued;
:func:`~batchsched.actions.victims.lazy_victims`).
Preemption reserves the node for the preemptor (status Pipelined); it is never
bound here, allocate places it in a later session once the victims are gone.

Two ways of picking victims on a node:

* **Default** (Volcano's normal path): nodes passing the preempt predicate, by
  node-order score (ties: session node order). On each node, in a temporary
  statement, before each eviction check whether the preemptor already fits
  (queue allocatable, request <= future idle, predicates); stop at the first fit.
  The first node where it fits wins and its statement is merged; on any other
  node the temporary statement is discarded.
* **enableTopologyAwarePreemption: true** (Volcano's take on kube-scheduler's
  DefaultPreemption, see :meth:`PreemptAction._topology_aware`): a dry run per
  node on copies: take victims off in victim order until the preemptor fits, then
  put them back in the reverse order, keeping off those it cannot do without;
  choose among candidate nodes by the lowest priority of the first victim, the
  lowest priority sum, the fewest victims, the latest start time; then evict that
  node's victims. (Volcano has no PodDisruptionBudget logic here, so neither
  have we.)

Events: each committed eviction records a Warning ``Evict`` "Pod is evicted,
because of preempt" on the pod and a Normal ``Evict`` "preempt" on its pod
group (Volcano's wording).
"""

from __future__ import annotations

import functools

import attrs

from batchsched.actions.node_search import shard_groups
from batchsched.actions.selector_action import PREDICATE_ERROR_CACHE_KEY
from batchsched.actions.victims import (
    PREEMPT_REASON,
    NodePredicates,
    TaskFilter,
    candidates_on_node,
    commit_with_events,
    evicting_jobs,
    eviction_room,
    fits_on_node,
    in_victim_order,
    lazy_victims,
    nodes_to_visit,
    pending_tasks,
    validate_victims,
)
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.sub_job import sub_jobs_of
from batchsched.api.task import TaskInfo
from batchsched.api.types import PREEMPTABLE_STATUSES, TaskStatus
from batchsched.columnar.eviction_room import EvictionRoom
from batchsched.errors import ConfigError, DryRunError, SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement

__all__ = ["PreemptAction"]

# Kube-scheduler adds this to every victim priority before summing, so that the sum
# stays meaningful with negative priorities (and more victims weigh more).
_PRIORITY_OFFSET = 2**31


@attrs.frozen
class _Attempt:
    """One preemptor looking for room: its queue and which tasks it may evict."""

    ssn: Session
    preemptor: TaskInfo
    queue: QueueInfo
    keep: TaskFilter


@attrs.frozen
class _Candidate:
    """A node where evicting ``victims`` would make room (topology-aware path), in
    the order the dry run kept them off (the last taken off first), which is also
    the order they are evicted in."""

    node: NodeInfo
    victims: tuple[TaskInfo, ...]


class PreemptAction:
    """Volcano's preempt action. Arguments (the action's ``configurations`` entry):

    ``enableTopologyAwarePreemption`` (bool, default false)
        use the kube-scheduler dry-run algorithm instead of the default path.
    ``minCandidateNodesPercentage`` (int, default 10) and
    ``minCandidateNodesAbsolute`` (int, default 1)
        topology-aware path: how many candidate nodes the dry run collects before
        choosing, ``max(nodes * percentage // 100, absolute)``, capped by
        ``maxCandidateNodesAbsolute`` (int, default 100) and the node count (0
        candidates: the topology-aware path never preempts, as in Volcano).
    ``predicateErrorCacheEnable`` (bool, default true)
        remember predicate failures per job and role for the whole action.
    ``topologyAwarePreemptWorkerNum`` (int, default 16)
        how many dry runs Volcano runs in parallel; ours are sequential, and the
        same but for 0, with which Volcano's dry run examines no node.

    An argument that is no integer keeps its default (logged), as Volcano's
    ``GetInt``; with topology-aware preemption on, values with which Volcano's preempt
    would panic (a negative worker count, a negative candidate count) are a
    :class:`~batchsched.errors.ConfigError` naming the argument (with it off, Volcano
    never reads them, and neither does this action).
    """

    name = "preempt"

    def __init__(self, arguments: Arguments | None = None) -> None:
        args = arguments if arguments is not None else Arguments()
        self.topology_aware = args.get_bool("enableTopologyAwarePreemption", False,
                                            owner=self.name)
        self.cache_predicate_errors = args.get_bool(PREDICATE_ERROR_CACHE_KEY, True,
                                                    owner=self.name)
        #: During an execution, the nodes' eviction bound (see ``nodes_to_visit``).
        self._room: EvictionRoom | None = None
        read = functools.partial(args.get_int, owner=self.name)
        self.min_candidate_nodes_percentage = read("minCandidateNodesPercentage", 10)
        self.min_candidate_nodes_absolute = read("minCandidateNodesAbsolute", 1)
        self.max_candidate_nodes_absolute = read("maxCandidateNodesAbsolute", 100)
        self.workers = read("topologyAwarePreemptWorkerNum", 16)
        args.warn_unknown(self.name, [
            "enableTopologyAwarePreemption", PREDICATE_ERROR_CACHE_KEY,
            "minCandidateNodesPercentage", "minCandidateNodesAbsolute",
            "maxCandidateNodesAbsolute", "topologyAwarePreemptWorkerNum"], kind="action")
        if self.topology_aware:
            self._refuse_what_volcano_panics_on()

    def _refuse_what_volcano_panics_on(self) -> None:
        """The topology-aware path hands the worker count to a WaitGroup and the
        candidate count to a slice's length: below 0 Volcano panics. Only that path
        reads them, so they are checked only when it is on."""
        where = f"configurations[{self.name}].arguments"
        if self.workers < 0:
            raise ConfigError(f"must not be negative, got {self.workers}",
                              key=f"{where}.topologyAwarePreemptWorkerNum")
        if self.max_candidate_nodes_absolute < 0 or (
                self.min_candidate_nodes_absolute < 0 and self.min_candidate_nodes_percentage < 0):
            raise ConfigError("the candidate count would be negative (maxCandidateNodesAbsolute "
                              f"{self.max_candidate_nodes_absolute}, "
                              f"minCandidateNodesAbsolute {self.min_candidate_nodes_absolute}, "
                              f"minCandidateNodesPercentage {self.min_candidate_nodes_percentage})",
                              key=where)

    def initialize(self) -> None:
        """Nothing to prepare: the action keeps no state between sessions."""

    def uninitialize(self) -> None:
        """Nothing to release."""

    # -- the two passes ---------------------------------------------------------------------

    def execute(self, ssn: Session) -> None:
        """Run both passes over every queue that has a starving job."""
        starving: dict[str, PriorityQueue[JobInfo]] = {}
        under_request: dict[str, list[JobInfo]] = {}
        preemptors: dict[str, PriorityQueue[TaskInfo]] = {}
        for _, job in evicting_jobs(ssn):
            if not ssn.job_starving(job):
                continue
            if job.network_topology is not None or any(
                    sub_job.policy_topology is not None
                    for sub_job in sub_jobs_of(job).values()):
                # As in Volcano (its issue 4374): jobs with a network topology, their
                # own or a sub-group's, do not preempt (gangpreempt places them
                # within hypernodes).
                continue
            starving.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
            under_request.setdefault(job.queue, []).append(job)
            preemptors[job.uid] = pending_tasks(ssn, job)

        queues = PriorityQueue(ssn.queue_order_fn, (ssn.queues[q] for q in starving))
        predicates = NodePredicates(ssn, cache_errors=self.cache_predicate_errors)
        self._room = eviction_room(ssn, "preemptable")
        try:
            while queues:
                queue = queues.pop()
                jobs = starving[queue.name]
                while jobs:
                    job = jobs.pop()
                    self._between_jobs(ssn, job, preemptors[job.uid], predicates)
                for job in under_request[queue.name]:
                    self._within_job(ssn, job, predicates)
        finally:
            self._room = None  # it holds the session

    def _between_jobs(
        self, ssn: Session, job: JobInfo, tasks: PriorityQueue[TaskInfo],
        predicates: NodePredicates,
    ) -> None:
        stmt = Statement(ssn)
        while ssn.job_starving(job) and tasks:
            preemptor = tasks.pop()
            self._preempt(ssn, stmt, preemptor, _other_jobs_of_queue(ssn, preemptor, job),
                          predicates)
        if ssn.job_pipelined(job):
            commit_with_events(ssn, stmt)
        else:
            stmt.discard()

    def _within_job(self, ssn: Session, job: JobInfo, predicates: NodePredicates) -> None:
        tasks = pending_tasks(ssn, job)
        while tasks:
            preemptor = tasks.pop()
            stmt = Statement(ssn)
            if not self._preempt(ssn, stmt, preemptor, _same_job(preemptor), predicates):
                stmt.discard()
                return
            commit_with_events(ssn, stmt)

    # -- one preemptor ------------------------------------------------------------------------

    def _preempt(
        self, ssn: Session, stmt: Statement, preemptor: TaskInfo, keep: TaskFilter,
        predicates: NodePredicates,
    ) -> bool:
        """Try to make room for ``preemptor``; True when it was pipelined somewhere."""
        if preemptor.never_preempts:
            if ssn.recorder is not None:
                ssn.recorder.note(preemptor.uid, self.name, "its preemptionPolicy is Never: "
                                  "no pod is evicted for it")
            return False  # kube's preemption never runs for it: its nomination stands
        ssn.note_preemption_tried(preemptor)
        if not _eligible_by_nomination(ssn, preemptor):
            return False
        if ssn.pre_predicate(preemptor) is not None:
            return False
        nodes = predicates.feasible_nodes(preemptor)
        if not nodes:
            return False
        attempt = _Attempt(ssn, preemptor, ssn.queues[ssn.jobs[preemptor.job].queue], keep)
        # Sharded soft, the shard's nodes are tried first, as a group of their own.
        for group in shard_groups(ssn, nodes):
            if self.topology_aware:
                if self._topology_aware(attempt, stmt, group):
                    return True
            elif self._normal(attempt, stmt, group):
                return True
        return False

    def _normal(self, attempt: _Attempt, stmt: Statement, nodes: list[NodeInfo]) -> bool:
        ssn, preemptor, queue = attempt.ssn, attempt.preemptor, attempt.queue
        for node in nodes_to_visit(ssn, self._room, preemptor, nodes):
            candidates = candidates_on_node(ssn, preemptor, node, attempt.keep)
            victims = ssn.preemptable(preemptor, candidates)
            if ssn.metrics is not None:  # Volcano's UpdatePreemptionVictimsCount
                ssn.metrics.set("pod_preemption_victims", len(victims))
            if not validate_victims(preemptor, node, victims):
                continue
            node_stmt = Statement(ssn)
            pending_victims = lazy_victims(ssn, preemptor, in_victim_order(victims, candidates))
            fits = fits_on_node(ssn, queue, preemptor, node)
            while not fits and pending_victims:
                node_stmt.evict(pending_victims.pop(), PREEMPT_REASON)
                fits = fits_on_node(ssn, queue, preemptor, node)
            # Volcano flags "eviction occurred" only when the evicted requests are not
            # empty: best-effort victims do not count.
            if fits and _pipeline(node_stmt, preemptor, node, node_stmt.evicts_requests()):
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
        return False

    # -- topology-aware (kube-scheduler) path -----------------------------------------------

    def candidate_count(self, nodes: int) -> int:
        """How many candidate nodes the dry run collects among ``nodes`` feasible ones:
        ``nodes * minCandidateNodesPercentage // 100``, at least
        ``minCandidateNodesAbsolute``, at most ``maxCandidateNodesAbsolute`` and
        ``nodes``."""
        count = nodes * self.min_candidate_nodes_percentage // 100
        count = max(count, self.min_candidate_nodes_absolute)
        return min(count, self.max_candidate_nodes_absolute, nodes)

    def _topology_aware(self, attempt: _Attempt, stmt: Statement, nodes: list[NodeInfo]) -> bool:
        """Kube-scheduler's DefaultPreemption over the feasible nodes.

        Dry run: the nodes are visited in order starting at offset 0 (kube-scheduler
        and Volcano start at a random offset; we start at the first feasible node in
        session node order, so the same input always examines the same nodes), one
        at a time, until :meth:`candidate_count` candidates are found or the nodes
        run out. Budgets count as on the other path, through the victim filter (the
        pdb plugin's Preemptable); kube-scheduler's PDB tie-break among candidates is
        not applied, as in Volcano (a TODO there). Then :func:`_best_candidate` picks
        one, its victims
        are evicted in victim order and the preemptor is pipelined there.
        """
        ssn, preemptor = attempt.ssn, attempt.preemptor
        wanted = self.candidate_count(len(nodes)) if self.workers else 0
        if wanted <= 0:
            return False  # Volcano's dry run keeps no candidate (or runs no worker)
        found: list[_Candidate] = []
        for node in nodes:
            candidate = _select_victims_on_node(attempt, node)
            if candidate is None:
                continue
            found.append(candidate)
            if len(found) >= wanted:
                break
        if not found:
            return False
        best = _best_candidate(found, ssn.now)
        node_stmt = Statement(ssn)
        for victim in best.victims:
            node_stmt.evict(victim, PREEMPT_REASON)
        if not _pipeline(node_stmt, preemptor, best.node, True):
            node_stmt.discard()
            return False
        stmt.merge(node_stmt)
        return True


# -- filters ----------------------------------------------------------------------------------


def _eligible_by_nomination(ssn: Session, preemptor: TaskInfo) -> bool:
    """Volcano's ``taskEligibleToPreempt`` on a nominated preemptor: not when its
    nominated node is gone from the session, nor when that node passes the
    predicates already (preemption means none does); yes when the node's refusal is
    unresolvable (it may preempt elsewhere); otherwise not while a pod of lower
    priority that the scheduler preempted is still terminating there (its room is
    on its way)."""
    nominated = preemptor.nominated_node
    if not nominated:
        return True
    node = ssn.nodes.get(nominated)
    if node is None:
        return False
    refusal = ssn.predicate(preemptor, node)
    if refusal is None:
        return False
    if refusal.unresolvable:
        return True
    priority = preemptor.pod_priority
    return not any(
        task.preempted_by_scheduler
        and (task.status is TaskStatus.RELEASING or task.deleting)
        and task.pod_priority < priority for task in node.tasks.values())


def _eligible(preemptor: TaskInfo, task: TaskInfo) -> bool:
    """Bound or Running, preemptable, and not a non-best-effort task for a
    best-effort preemptor."""
    return (
        task.status in PREEMPTABLE_STATUSES
        and task.preemptable
        and not (preemptor.best_effort and not task.best_effort)
    )


def _other_jobs_of_queue(ssn: Session, preemptor: TaskInfo, job: JobInfo) -> TaskFilter:
    def keep(task: TaskInfo) -> bool:
        if not _eligible(preemptor, task) or task.job == preemptor.job:
            return False
        owner = ssn.jobs.get(task.job)
        return owner is not None and owner.queue == job.queue

    return keep


def _same_job(preemptor: TaskInfo) -> TaskFilter:
    def keep(task: TaskInfo) -> bool:
        return task.job == preemptor.job and _eligible(preemptor, task)

    return keep


def _pipeline(stmt: Statement, task: TaskInfo, node: NodeInfo, evicted: bool) -> bool:
    """Reserve ``node`` for ``task``; False (nothing changed) if the node refuses it."""
    try:
        stmt.pipeline(task, node, eviction_occurred=evicted)
    except SchedulingError:
        return False
    return True


# -- dry run on one node (topology-aware path) ------------------------------------------------


def _select_victims_on_node(attempt: _Attempt, node: NodeInfo) -> _Candidate | None:
    """Volcano's ``SelectVictimsOnNode`` on a copy of ``node``.

    The eligible tasks (``keep``, then ``ssn.preemptable``) are taken off the copy
    one at a time in victim order until the preemptor fits (``ssn.simulate_allocatable``,
    request <= future idle of the copy, ``ssn.simulate_predicate``); if the
    predicates still refuse it then, the node is no candidate. The tasks taken off
    are put back in the reverse order: one that can come back while the preemptor
    still fits is reprieved; the others are the victims, in that order. A node with
    no victim (the preemptor fits already) is no candidate either.

    Plugins follow the dry run through ``ssn.simulate_remove_task`` /
    ``ssn.simulate_add_task``; every removal is matched by an addition before
    returning, so their state is as it was. The session is not changed.
    """
    ssn, preemptor, queue = attempt.ssn, attempt.preemptor, attempt.queue
    candidates = candidates_on_node(ssn, preemptor, node, attempt.keep)
    potential = ssn.preemptable(preemptor, candidates)
    if ssn.metrics is not None:  # Volcano's UpdatePreemptionVictimsCount
        ssn.metrics.set("pod_preemption_victims", len(potential))
    if not potential or not validate_victims(preemptor, node, potential):
        return None
    copy = node.clone()

    def fits() -> bool:
        return (
            ssn.simulate_allocatable(queue, preemptor)
            and preemptor.init_resreq.less_equal(copy.future_idle())
            and ssn.simulate_predicate(preemptor, copy) is None
        )

    taken_off: list[TaskInfo] = []  # in victim order
    removed: list[TaskInfo] = []
    victims: list[TaskInfo] = []
    try:
        # Volcano's SelectVictimsOnNode: off one at a time until the preemptor fits.
        for task in in_victim_order(potential, candidates):
            ssn.simulate_remove_task(preemptor, task, copy)
            copy.remove_task(task)
            removed.append(task)
            taken_off.append(task)
            if fits():
                break
        # Only the predicates are asked here (not the queue): a preemptor that fits
        # nowhere in its queue keeps every victim it took off.
        if ssn.simulate_predicate(preemptor, copy) is not None:
            return None
        # Put back, the last taken off first (higher priority first); keep off those
        # the preemptor cannot do without.
        for task in reversed(taken_off):
            ssn.simulate_add_task(preemptor, task, copy)
            copy.add_task(task)
            removed.remove(task)
            if fits():
                continue
            ssn.simulate_remove_task(preemptor, task, copy)
            copy.remove_task(task)
            removed.append(task)
            victims.append(task)
    except DryRunError:
        return None  # a plugin cannot follow the dry run: Volcano fails the node
    finally:
        for task in reversed(removed):
            ssn.simulate_add_task(preemptor, task, copy)
    if not victims:
        return None
    return _Candidate(node=node, victims=tuple(victims))


def _best_candidate(candidates: list[_Candidate], now: float) -> _Candidate:
    """Volcano's ``pickOneNodeForPreemption``, on pod priorities (``spec.priority``):
    the lowest priority of the first victim, then the lowest sum of victim
    priorities (each offset by 2^31), then the fewest
    victims, then the latest start among the highest-priority victims (a pod not
    started yet counts as starting now); remaining ties go to the candidate found
    first (Volcano's are in map order)."""

    def rank(candidate: _Candidate) -> tuple[int, int, int, float]:
        # Volcano's PodPriority: the pod's own priority, not the task priority a
        # volcano.sh/task-priority annotation gives.
        victims = candidate.victims
        top = max(v.pod_priority for v in victims)
        earliest_top_start = min(v.start_time if v.start_time is not None else now
                                 for v in victims if v.pod_priority == top)
        return (
            victims[0].pod_priority,
            sum(v.pod_priority + _PRIORITY_OFFSET for v in victims),
            len(victims),
            -earliest_top_start,
        )

    return min(candidates, key=rank)
