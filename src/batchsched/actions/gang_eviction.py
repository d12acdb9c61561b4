"""What the gangpreempt and gangreclaim actions share: victim bundles, candidate
domains, the placement dry run, and the per-queue, per-job loop.

Volcano keeps these steps in ``pkg/scheduler/actions/utils`` (``bundle.go``,
``simulate.go``, ``util.go``). Both actions differ only in which running tasks
may become victims, how victim bundles of different jobs are ranked, which
:class:`~batchsched.framework.events.EvictionKind` they report to
``unified_evictable``, and two queue-level checks of gangreclaim; each is a hook
of :class:`GangEvictionAction`.

**Bundles.** The candidate victims of one job are split in two
(:func:`job_bundles`), lowest task priority first (ties: task id):

* the *safe* bundle: tasks whose eviction leaves the job gang-ready: the job
  keeps at least ``minMember`` ready tasks and, when its per-role minimums are
  enforced (``minMember >= sum(minTaskMember)``, gang's own rule), every role
  keeps its ``minTaskMember``. A job already below ``minMember`` has only a safe
  bundle: evicting more cannot break it further;
* the *whole* bundle: the rest. Taking any of it breaks the gang, so the whole
  job's requests count as its cost.

Bundles are ranked safe before whole, then by the action's owner order
(:meth:`GangEvictionAction.owner_less`), then by return on investment: the
share of the preemptor's need the bundle frees on the domain (each dimension
capped at the need) over the share its job gives up (0 for a safe bundle: an
infinite return), highest first; then by job id, first task id, and size.

**Domains.** A starving job scans up to ``maxDomains`` hypernodes, those the
network-topology gradients list for eviction (highest tier first); a job without a
hard topology also falls back to the whole cluster (:data:`CLUSTER_DOMAIN`, the
virtual root), which is its only domain without the network-topology-aware plugin.
Victims are taken from the domain's nodes, and a job with a hard topology is
placed, in the dry run, within the first hypernode under the domain (the sub-job
eviction gradient, highest tier first, as in Volcano) where all its pending tasks fit. Volcano then
nominates that hypernode for its allocate of the same session; batchsched does
not model that nomination (the tasks keep the nodes they are pipelined on).

**Dry run.** Victim bundles are taken in rank order, accumulating, until the
domain's idle plus releasing plus the victims' requests covers the job's need;
then (and after each further bundle) :func:`plan_in_domain` evicts the victims
and places every pending task of the job (task order) on the domain's nodes.
The first plan after which the job is pipelined is kept; a failed plan is
undone completely.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
from collections.abc import Callable, Iterable, Sequence

import attrs

from batchsched.actions.hypernode_allocate import EVICT, Worksheet, worksheet_of
from batchsched.actions.node_search import (
    FeasibleNodeScan,
    hard_shard_of,
    nodes_to_find_of,
    predicate_for_preempt_action,
    shard_first,
    soft_sharded,
)
from batchsched.actions.placement import select_best_node
from batchsched.actions.selector_action import PREDICATE_ERROR_CACHE_KEY
from batchsched.actions.victims import (
    commit_with_events,
    queues_and_starving_jobs,
    session_task,
)
from batchsched.api.fit import FitError, insufficient_resource_reason
from batchsched.api.hypernode import CLUSTER_TOP
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import DimensionDefault, Resource
from batchsched.api.sub_job import SubJobInfo, min_sub_jobs, sub_jobs_of
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.errors import SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import EvictionContext, EvictionKind
from batchsched.framework.session import Session
from batchsched.framework.statement import OperationKind, Statement

__all__ = [
    "ALLOW_WHOLE_BUNDLE_KEY",
    "CLUSTER_DOMAIN",
    "DEFAULT_MAX_DOMAINS",
    "MAX_DOMAINS_KEY",
    "Bundle",
    "BundleKind",
    "GangEvictionAction",
    "OwnerLess",
    "allowed_bundles",
    "candidate_domains",
    "gang_evictable",
    "job_bundles",
    "pending_for_gang_eviction",
    "pick_domains",
    "plan_in_domain",
    "sort_bundles",
]

log = logging.getLogger("batchsched")

#: Action argument: how many candidate domains are scanned per starving job.
MAX_DOMAINS_KEY = "maxDomains"
#: Action argument: whether whole bundles (victims that break their gang) may be taken.
ALLOW_WHOLE_BUNDLE_KEY = "allowWholeBundle"
#: ``maxDomains`` when unset or not positive.
DEFAULT_MAX_DOMAINS = 8
#: The whole cluster as a domain: every node of the session (the virtual root).
CLUSTER_DOMAIN = CLUSTER_TOP
#: Pod-group annotation or label that states a job's preemptability explicitly.
_PREEMPTABLE_KEY = "volcano.sh/preemptable"


# -- bundles ------------------------------------------------------------------------------


class BundleKind(enum.IntEnum):
    """Safe bundles rank before whole ones."""

    SAFE = 0
    WHOLE = 1


@attrs.frozen
class Bundle:
    """Victim tasks of one job taken together.

    ``local`` is what evicting ``tasks`` frees; ``cost`` is what their job gives up:
    nothing for a safe bundle, every task's request for a whole one.
    """

    kind: BundleKind
    job: JobInfo
    tasks: tuple[TaskInfo, ...]
    local: Resource
    cost: Resource

    def keeping(self, tasks: Sequence[TaskInfo]) -> Bundle:
        """The same bundle reduced to ``tasks``."""
        return attrs.evolve(self, tasks=tuple(tasks), local=_sum_requests(tasks))


def gang_evictable(job: JobInfo) -> bool:
    """Whether the gang actions may take victims from ``job``: yes unless its pod group
    states ``volcano.sh/preemptable`` (annotation or label), and then as stated."""
    podgroup = job.podgroup
    if _PREEMPTABLE_KEY in podgroup.annotations or _PREEMPTABLE_KEY in podgroup.labels:
        return job.preemptable
    return True


def job_bundles(job: JobInfo, candidates: Iterable[TaskInfo]) -> list[Bundle]:
    """Split ``job``'s candidate victims into a safe and a whole bundle (either may be
    missing; see the module docstring). With sub-group policies, a victim is safe
    only while its policy keeps ``minSubGroups`` ready sub-jobs (a sub-job already
    broken costs nothing more), as Volcano's ``CreateJobBundles``."""
    # By priority, then the pod's uid (Volcano's TaskInfo.UID), not the task's name.
    tasks = sorted(candidates, key=lambda t: (t.priority, t.order_uid))
    if not tasks:
        return []
    job_surplus = job.ready_task_num() - job.min_available
    if job_surplus < 0:
        return [Bundle(BundleKind.SAFE, job, tuple(tasks), _sum_requests(tasks), Resource())]
    role_surplus: dict[str, int] = {}
    if job.min_available >= job.task_min_available_total:
        ready = job.allocated_roles()
        role_surplus = {role: ready.get(role, 0) - minimum
                        for role, minimum in job.task_min_available.items()}
    # Sub-group policies: a task is safe only if its sub-job is broken already or its
    # policy has a ready sub-job to spare; the first victim of a sub-job breaks it.
    enforce_sub_jobs = bool(job.podgroup.sub_group_policies)
    sub_job_of: dict[str, SubJobInfo] = {}
    broken: set[str] = set()
    group_surplus: dict[str, int] = {}
    if enforce_sub_jobs:
        for sub_job in sub_jobs_of(job).values():
            sub_job_of.update(dict.fromkeys(sub_job.tasks, sub_job))
            if sub_job.is_ready():
                group_surplus[sub_job.gid] = group_surplus.get(sub_job.gid, 0) + 1
            else:
                broken.add(sub_job.uid)
        for gid, minimum in min_sub_jobs(job).items():
            group_surplus[gid] = group_surplus.get(gid, 0) - minimum
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for task in tasks:
        role_safe = role_surplus.get(task.role, 1) > 0
        held_by = sub_job_of.get(task.uid)
        group_safe = not enforce_sub_jobs or (held_by is not None and (
            held_by.uid in broken or group_surplus.get(held_by.gid, 0) > 0))
        if job_surplus > 0 and role_safe and group_safe:
            safe.append(task)
            job_surplus -= 1
            if task.role in role_surplus:
                role_surplus[task.role] -= 1
            if held_by is not None and held_by.uid not in broken:
                broken.add(held_by.uid)
                group_surplus[held_by.gid] = group_surplus.get(held_by.gid, 0) - 1
        else:
            whole.append(task)
    bundles = []
    if safe:
        bundles.append(Bundle(BundleKind.SAFE, job, tuple(safe), _sum_requests(safe), Resource()))
    if whole:
        bundles.append(Bundle(BundleKind.WHOLE, job, tuple(whole), _sum_requests(whole),
                              _sum_requests(job.tasks.values())))
    return bundles


#: Whether the first bundle's owner goes before the second's (jobs or their queues).
OwnerLess = Callable[[Bundle, Bundle], bool]


def sort_bundles(bundles: Iterable[Bundle], need: Resource, owner_less: OwnerLess) -> list[Bundle]:
    """``bundles`` in rank order: safe first, then ``owner_less`` (when it tells the two
    owners apart), then return on investment against ``need`` (highest first), then
    job id, first task id and size."""

    def compare(left: Bundle, right: Bundle) -> int:
        if left.kind != right.kind:
            return -1 if left.kind < right.kind else 1
        if left.job.uid != right.job.uid:
            ahead, behind = owner_less(left, right), owner_less(right, left)
            if ahead != behind:
                return -1 if ahead else 1
        left_roi, right_roi = _return_on(left, need), _return_on(right, need)
        if left_roi != right_roi:
            return -1 if left_roi > right_roi else 1
        left_key, right_key = _tie_key(left), _tie_key(right)
        if left_key != right_key:
            return -1 if left_key < right_key else 1
        return 0

    return sorted(bundles, key=functools.cmp_to_key(compare))


def allowed_bundles(bundles: Iterable[Bundle], allowed: set[str]) -> list[Bundle]:
    """What is left of ``bundles`` once only the tasks in ``allowed`` (task ids) may go:
    a safe bundle keeps its allowed tasks, a whole bundle survives only entire."""
    kept = []
    for bundle in bundles:
        approved = [task for task in bundle.tasks if task.uid in allowed]
        if bundle.kind is BundleKind.WHOLE:
            if len(approved) == len(bundle.tasks):
                kept.append(bundle)
        elif approved:
            kept.append(bundle.keeping(approved))
    return kept


def _return_on(bundle: Bundle, need: Resource) -> float:
    gained = _share_of_need(bundle.local, need, cap=True)
    lost = _share_of_need(bundle.cost, need, cap=False)
    return math.inf if lost == 0 else gained / lost


def _share_of_need(amount: Resource, need: Resource, *, cap: bool) -> float:
    """Sum over the dimensions ``need`` asks for (``pods`` among them: every task asks
    one) of ``amount / need``, each term capped at 1 with ``cap`` (Volcano's
    ``scoreAgainstNeed``)."""
    share = 0.0
    for name in need.resource_names():
        wanted = need.get(name)
        if wanted <= 0:
            continue
        held = amount.get(name)
        if cap:
            held = min(held, wanted)
        share += held / wanted
    return share


def _tie_key(bundle: Bundle) -> tuple[str, str, int]:
    first = bundle.tasks[0].uid if bundle.tasks else ""
    return bundle.job.uid, first, len(bundle.tasks)


def _sum_requests(tasks: Iterable[TaskInfo]) -> Resource:
    total = Resource()
    for task in tasks:
        total.add(task.resreq)
    return total


# -- domains ------------------------------------------------------------------------------


def pick_domains(
    gradients: Iterable[Iterable[str]], max_domains: int, fallback: str = ""
) -> list[str]:
    """Domain names from ``gradients`` (best first), each once, at most
    ``max_domains`` of them (no cap when not positive); ``[fallback]`` when there is
    none and a fallback is given."""
    domains: list[str] = []
    for gradient in gradients:
        for name in gradient:
            if name in domains:
                continue
            domains.append(name)
            if 0 < max_domains <= len(domains):
                return domains
    if not domains and fallback:
        domains.append(fallback)
    return domains


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[str]:
    """The domains a starving job scans (Volcano's ``GetCandidateDomains``): the
    eviction gradients' hypernodes, with the whole cluster as the fallback of a job
    none of whose sub-jobs has a hard topology either."""
    gradients = ssn.hyper_node_gradient(job, CLUSTER_DOMAIN, EVICT)
    # A hard topology of the job or of one of its sub-jobs (ContainsHardTopology).
    hard = _contains_hard_topology(ssn, job)
    return pick_domains(gradients, max_domains, "" if hard else CLUSTER_DOMAIN)


def domain_nodes(ssn: Session, domain: str) -> list[NodeInfo]:
    """The nodes of ``domain``, in session node order."""
    if domain == CLUSTER_DOMAIN:
        return list(ssn.node_list)
    return list(ssn.topology.real_node_list.get(domain, ()))


def _idle_and_releasing(nodes: Iterable[NodeInfo]) -> Resource:
    total = Resource()
    for node in nodes:
        total.add(node.idle)
        total.add(node.releasing)
    return total


# -- the dry run --------------------------------------------------------------------------


def pending_for_gang_eviction(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The job's Pending tasks that ask for resources, sub-job by sub-job in worksheet
    order, each in task order: what the gang actions make room for and place (only
    the first sub-job's when the job is already ready, as Volcano's
    ``CollectPendingTasksForGangEviction``)."""
    sheet = _eviction_worksheet(ssn, job)
    ready = ssn.job_ready(job)
    tasks: list[TaskInfo] = []
    while sheet.sub_jobs:
        sub_job = sheet.sub_jobs.pop()
        queue = sheet.tasks[sub_job.uid]
        tasks.extend(queue.pop() for _ in range(len(queue)))
        if ready:
            break
    return tasks


def _eviction_worksheet(ssn: Session, job: JobInfo) -> Worksheet:
    """Volcano's ``organizeEvictionWorksheet``: allocate's worksheet order, pending
    tasks that ask for resources (their requests, as Volcano reads ``Resreq``)."""

    def pending() -> PriorityQueue[TaskInfo]:
        return PriorityQueue(ssn.task_order_fn, [
            task for task in job.tasks_in(TaskStatus.PENDING).values()
            if not task.resreq.is_empty() and not task.scheduling_gated])

    return worksheet_of(ssn, job, pending, every_gate=True)


def plan_in_domain(
    ssn: Session,
    job: JobInfo,
    *,
    queue: QueueInfo | None,
    nodes: Sequence[NodeInfo],
    victims: Sequence[TaskInfo],
    reason: str,
    cache_errors: bool = True,
    domain: str = CLUSTER_DOMAIN,
) -> Statement | None:
    """Evict ``victims`` and place every pending task of ``job`` on ``nodes``.

    Each task, in task order, must be allocatable to its queue, pass the
    pre-predicates, and find a node among ``nodes`` (less those an earlier
    allocate found hopeless for it) whose future idle holds it and whose
    predicates pass as preempt reads them; nodes whose idle already holds it are
    preferred to those that hold it only once releases finish, then the best
    scored node. The task is pipelined there. A job with a hard network topology
    is placed within one hypernode under ``domain``: the first, in sub-job gradient
    order, where every task is placed. Returns the statement holding the
    evictions and placements, still applied, when every task was placed and the
    job is then pipelined; otherwise undoes everything and returns None.
    """
    plan = Statement(ssn)
    try:
        if _plan(ssn, plan, job, queue=queue, nodes=nodes, victims=victims, reason=reason,
                 cache_errors=cache_errors, domain=domain):
            return plan
    except BaseException:
        plan.discard()
        raise
    plan.discard()
    return None


def _plan(
    ssn: Session, plan: Statement, job: JobInfo, *, queue: QueueInfo | None,
    nodes: Sequence[NodeInfo], victims: Sequence[TaskInfo], reason: str, cache_errors: bool,
    domain: str,
) -> bool:
    """Volcano's ``BuildNominationPlanInDomain``: after the evictions, each sub-job in
    worksheet order is placed (a job with a hard topology within the first hypernode
    of its gradient under the domain where it fits, any other on the domain's nodes)
    until the job is pipelined; a sub-job that fits nowhere fails the plan."""
    if not nodes:
        return False
    sheet = _eviction_worksheet(ssn, job)
    if not sheet:
        return False
    for victim in victims:
        plan.evict(victim, reason)
    evicted = bool(victims)
    was_ready = ssn.job_ready(job)
    hard = _contains_hard_topology(ssn, job)
    pipelined = False
    while sheet.sub_jobs:
        sub_job = sheet.sub_jobs.pop()
        tasks = [sheet.tasks[sub_job.uid].pop() for _ in range(len(sheet.tasks[sub_job.uid]))]
        if not tasks:
            continue
        candidates = [hyper_node for gradient in ssn.sub_job_hyper_node_gradient(
            sub_job, domain, EVICT) for hyper_node in gradient] if hard else [domain]
        for hyper_node in candidates:
            within = nodes if not hard else ssn.topology.real_node_list.get(hyper_node, [])
            if not within:
                continue
            trial = Statement(ssn)
            if _place_all(ssn, trial, job, tasks, queue=queue, nodes=within, evicted=evicted,
                          cache_errors=cache_errors, sub_job=sub_job):
                plan.merge(trial)
                break
            trial.discard()
        else:
            return False
        pipelined = ssn.job_pipelined(job)
        if was_ready or pipelined:
            break
    return pipelined


def _contains_hard_topology(ssn: Session, job: JobInfo) -> bool:
    """Volcano's ``ContainsHardTopology``: the job's topology, or a sub-job's, is hard."""
    if job.network_topology is not None and job.network_topology.hard_tier() is not None:
        return True
    if not job.podgroup.sub_group_policies:
        return False
    for sub_job in sub_jobs_of(job).values():
        spec = ssn.sub_job_topology(job, sub_job)
        if spec is not None and spec.hard_tier() is not None:
            return True
    return False


def _place_all(
    ssn: Session, plan: Statement, job: JobInfo, tasks: Sequence[TaskInfo], *,
    queue: QueueInfo | None, nodes: Sequence[NodeInfo], evicted: bool, cache_errors: bool,
    sub_job: SubJobInfo,
) -> bool:
    """Pipeline every task on ``nodes`` (Volcano's ``runSimulateTrialAtHyperNode``):
    True when the sub-job (the job, without sub-group policies) is then ready or
    pipelined."""
    scan = FeasibleNodeScan(ssn.node_list, error_cache_enabled=cache_errors, rotate=False,
                            nodes_to_find=nodes_to_find_of(ssn), shard=hard_shard_of(ssn))
    for task in tasks:
        if queue is not None and not ssn.allocatable(queue, task):
            return False
        usable = _resolvable_nodes(ssn, job, task, nodes)
        if not usable or ssn.pre_predicate(task) is not None:
            return False
        feasible, _ = scan.feasible_nodes(task, usable,
                                          lambda t, n: _simulate_predicate(ssn, t, n))
        node = _best_simulated_node(ssn, task, feasible)
        if node is None or not task.init_resreq.less_equal(node.future_idle()):
            return False
        try:
            plan.pipeline(task, node, eviction_occurred=evicted)
        except SchedulingError:
            return False
    placed = any(op.kind is OperationKind.PIPELINE for op in plan.operations)
    return placed and (ssn.sub_job_ready(job, sub_job) or ssn.sub_job_pipelined(job, sub_job))


def _resolvable_nodes(ssn: Session, job: JobInfo, task: TaskInfo,
                      nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
    """``nodes`` less those an earlier attempt found hopeless for the task (Volcano's
    ``FilterOutUnschedulableAndUnresolvableNodesForTask``, intersected by name); when
    every session node was hopeless that filter is empty, and Volcano's intersection
    then keeps all of ``nodes``."""
    errors = job.nodes_fit_errors.get(task.uid)
    if errors is None:
        return list(nodes)
    hopeless = errors.unresolvable_nodes()
    if len(hopeless) >= len(ssn.node_list) and all(
            node.name in hopeless for node in ssn.node_list):
        return list(nodes)
    return [node for node in nodes if node.name not in hopeless]


def _simulate_predicate(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitError | None:
    fits, short = task.init_resreq.less_equal_with_names(node.future_idle(),
                                                         DimensionDefault.ZERO)
    if not fits:
        return FitError.of(task.namespace, task.name, node.name,
                           insufficient_resource_reason(short),
                           code=FitStatusCode.UNSCHEDULABLE)
    return predicate_for_preempt_action(ssn, task, node)


def _best_simulated_node(
    ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]
) -> NodeInfo | None:
    """Among nodes that hold the task now, else among those that hold it once
    releases finish, the best one (:func:`~batchsched.actions.placement.select_best_node`).
    A group that yields no node (its scoring failed) gives way to the next, as in
    Volcano's ``prioritizeNodesForSimulate``."""
    request = task.init_resreq
    now = [n for n in nodes if request.less_equal(n.idle)]
    later = [n for n in nodes if not request.less_equal(n.idle)
             and request.less_equal(n.future_idle())]
    groups = [now, later]
    if soft_sharded(ssn):
        # The shard's nodes first, now and later (Volcano's four groups).
        groups = [part for group in groups for part in shard_first(ssn, group)]
    for group in groups:
        best = select_best_node(ssn, task, group) if group else None
        if best is not None:
            return best
    return None


# -- the action ---------------------------------------------------------------------------


class GangEvictionAction:
    """The loop both gang actions run; subclasses say whose tasks may go and in which
    order. Arguments (the action's ``configurations`` entry):

    ``maxDomains`` (int, default 8)
        how many candidate domains a starving job scans. A value that is not
        positive, or not a YAML integer (``"1"``, ``3.0``), falls back to 8, logged
        as a warning, as Volcano's ``GetInt`` does.
    ``allowWholeBundle`` (bool, default true)
        whether victims may be taken from whole bundles, that is at the cost of
        breaking their job's gang.

    ``predicateErrorCacheEnable`` is read from the *allocate* action's
    configuration (default true), as Volcano does, for the predicate-error cache
    of the placement dry run.
    """

    name = ""
    #: The eviction kind reported to ``unified_evictable``.
    kind = EvictionKind.UNKNOWN

    def __init__(self, arguments: Arguments | None = None) -> None:
        args = arguments if arguments is not None else Arguments()
        # Volcano's GetInt: a YAML integer; anything else keeps the default (logged).
        max_domains = args.get_int(MAX_DOMAINS_KEY, DEFAULT_MAX_DOMAINS, owner=self.name)
        if max_domains <= 0:
            log.warning("action %r: %s=%d is not positive; using %d instead", self.name,
                        MAX_DOMAINS_KEY, max_domains, DEFAULT_MAX_DOMAINS)
            max_domains = DEFAULT_MAX_DOMAINS
        self.max_domains = max_domains
        self.allow_whole_bundle = args.get_bool(ALLOW_WHOLE_BUNDLE_KEY, True, owner=self.name)
        args.warn_unknown(self.name, [MAX_DOMAINS_KEY, ALLOW_WHOLE_BUNDLE_KEY], kind="action")

    def initialize(self) -> None:
        """Nothing to prepare: the action keeps no state between sessions."""

    def uninitialize(self) -> None:
        """Nothing to release."""

    # -- hooks --------------------------------------------------------------------------

    def skips_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        """Whether the starving jobs of ``queue`` get nothing this session."""
        return False

    def may_evict_for(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        """Whether ``queue`` may evict others for these pending tasks at all."""
        return True

    def is_candidate(self, ssn: Session, evictor: JobInfo, task: TaskInfo) -> bool:
        """Whether a task held by a node may become a victim of ``evictor``."""
        raise NotImplementedError

    def owner_less(self, ssn: Session, evictor: JobInfo) -> OwnerLess:
        """How bundles of different jobs rank (before return on investment)."""
        raise NotImplementedError

    # -- the loop -----------------------------------------------------------------------

    def execute(self, ssn: Session) -> None:
        """For each queue in queue order, each starving job in job order: find victims
        and a placement in a statement committed only if the job is then pipelined."""
        cache_errors = ssn.configuration.action_arguments("allocate").get_bool(
            PREDICATE_ERROR_CACHE_KEY, True, owner="allocate")
        queues, starving, _ = queues_and_starving_jobs(ssn)

        while queues:
            queue = queues.pop()
            if self.skips_queue(ssn, queue):
                continue
            jobs = starving.get(queue.name)
            while jobs:
                job = jobs.pop()
                stmt = Statement(ssn)
                self.evict_for_job(ssn, stmt, queue, job, cache_errors=cache_errors)
                if ssn.job_pipelined(job):
                    commit_with_events(ssn, stmt)
                else:
                    stmt.discard()

    def evict_for_job(
        self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, *,
        cache_errors: bool = True,
    ) -> bool:
        """Scan the candidate domains for the first victim set with which every pending
        task of ``job`` can be placed; merge that plan into ``stmt``. True if found."""
        pending = pending_for_gang_eviction(ssn, job)
        if not pending or not self.may_evict_for(ssn, queue, pending):
            return False
        need = Resource()
        for task in pending:
            need.add(task.init_resreq)
        for domain in candidate_domains(ssn, job, self.max_domains):
            nodes = domain_nodes(ssn, domain)
            if not nodes:
                continue
            bundles = self.select_bundles(ssn, job, need, nodes, domain)
            if not bundles:
                continue
            room = _idle_and_releasing(nodes)
            victims: list[TaskInfo] = []
            for bundle in bundles:
                victims.extend(bundle.tasks)
                room.add(bundle.local)
                if not need.less_equal(room):
                    continue
                plan = plan_in_domain(ssn, job, queue=queue, nodes=nodes, victims=victims,
                                      reason=self.name, cache_errors=cache_errors,
                                      domain=domain)
                if plan is not None:
                    stmt.merge(plan)
                    return True
        return False

    def select_bundles(
        self, ssn: Session, evictor: JobInfo, need: Resource, nodes: Sequence[NodeInfo],
        domain: str = CLUSTER_DOMAIN,
    ) -> list[Bundle]:
        """The victim bundles on ``nodes`` for ``evictor``, in rank order, reduced to
        what ``unified_evictable`` allows (whole bundles dropped unless
        ``allowWholeBundle``)."""
        by_job: dict[str, list[TaskInfo]] = {}
        for node in nodes:
            for held in node.tasks.values():
                if not self.is_candidate(ssn, evictor, held):
                    continue
                task = session_task(ssn, held)
                if task is not None:
                    by_job.setdefault(task.job, []).append(task)
        bundles = [bundle for uid, tasks in by_job.items()
                   for bundle in job_bundles(ssn.jobs[uid], tasks)]
        if not bundles:
            return []
        owner_less = self.owner_less(ssn, evictor)
        ranked = sort_bundles(bundles, need, owner_less)
        candidates = [task for bundle in ranked for task in bundle.tasks]
        allowed = ssn.unified_evictable(EvictionContext(self.kind, evictor, hyper_node=domain),
                                        candidates)
        if not allowed:
            return []
        kept = allowed_bundles(ranked, {task.uid for task in allowed})
        return [bundle for bundle in sort_bundles(kept, need, owner_less)
                if self.allow_whole_bundle or bundle.kind is not BundleKind.WHOLE]
