"""The smallest changes that would let a pending job start now, each checked by a session.

Every change is applied to a copy of the scenario and a full session runs on it
(the configured actions and plugins, nothing simulated aside): a change is
proposed only if that session starts the job (or places the task). Kinds:

* ``moreNodes``: N more nodes like an existing one (for each distinct node
  shape, the smallest N up to ``max_nodes``);
* ``smallerRequests``: the job's pending requests scaled down (the largest
  factor of 3/4, 1/2, 1/4, 1/10 that works);
* ``quota``: the job's queue with a larger ceiling: its ``capability`` or
  ``deserved`` raised by what the quota plugin found short, or, for weighted
  shares (proportion), its weight doubled up to 16 times;
* ``victims``: running tasks whose eviction lets the job start, taken as
  preemption and reclaim would consider them (lower priority in the job's own
  queue, or any task of another reclaimable queue), lowest priority and newest
  first; the set is then shrunk until no victim can be spared.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import attrs

from batchsched.api.hypernode import CLUSTER_TOP, HyperNode, HyperNodeMember, build_topology
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import PODS, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import PodGroupPhase, TaskStatus
from batchsched.errors import ScenarioError
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.scenario.loader import Scenario
from batchsched.scenario.runner import ScenarioCache
from batchsched.scheduler import run_actions

__all__ = ["counterfactuals", "starts", "with_nodes", "with_queue", "with_smaller_requests",
           "without_tasks"]

_FACTORS = (0.75, 0.5, 0.25, 0.1)
_WEIGHT_STEPS = (2, 4, 8, 16)
_PLACED = (TaskStatus.RUNNING, TaskStatus.BOUND)
#: A task in these has not started: a pipelined one waits for room being freed.
#: A task still Allocated at close was placed by a statement its gang kept pipelined
#: (neither committed nor discarded): it is not bound.
_NOT_STARTED = (TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED)


def starts(scenario: Scenario, job: str, task: str | None = None,
           registry: Registry | None = None) -> bool:
    """Whether, in one session on ``scenario``, the job starts (its gang is ready and no
    task that asks for resources is left pending, but for pods waiting for their
    scheduling gates) or, for ``task``, that task is placed.
    A job with no pods yet (a Volcano Job's, whose controller creates them once its pod
    group is admitted) starts as far as a session can take it when it is admitted."""
    # The cache run_scenario uses: the scenario's faults (bind failures) happen here too.
    cache = ScenarioCache(scenario.to_cluster(), scenario.bind_failures)
    ssn = Session.open(cache, scenario.configuration, registry=registry)
    try:
        run_actions(ssn)
    except BaseException:
        ssn.abort()
        raise
    ssn.close()
    target = ssn.jobs.get(job)
    if target is None:
        return False
    if task is not None:
        placed = target.tasks.get(task)
        return placed is not None and placed.status not in _NOT_STARTED
    if not target.tasks:
        return target.podgroup.phase is not PodGroupPhase.PENDING
    # A gated pod waits for its gates whatever changes: no change can place it.
    return (target.ready_task_num() >= max(target.min_available, 1)
            and not target.tasks_in(TaskStatus.PIPELINED)
            and not target.tasks_in(TaskStatus.ALLOCATED)
            and not any(not t.resreq.is_empty() and not t.scheduling_gated
                        and not t.externally_gated
                        for t in target.tasks_in(TaskStatus.PENDING).values()))


#: The pod (or pod group) annotation or label that may forbid evicting it.
_PREEMPTABLE = "volcano.sh/preemptable"
#: Node labels whose value is the node's own name.
_NODE_NAME_LABELS = ("kubernetes.io/hostname",)


def with_nodes(scenario: Scenario, template: NodeInfo, count: int) -> Scenario:
    """The scenario with ``count`` more nodes shaped like ``template`` (empty, with its
    NUMA topology as the exporter reports it). Each is a host of its own: the labels
    that name a host (``kubernetes.io/hostname``) name the new node, whatever the
    template's said, so per-host anti-affinity and node pins see a new host, as a
    real added node would be."""
    def labels(name: str) -> dict[str, str]:
        own = dict(template.labels)
        for key in _NODE_NAME_LABELS:
            if key in own:
                own[key] = name
        return own

    taken = {node.name for node in scenario.nodes}
    # A node of a name the cluster has would replace it, not be added.
    names = list(itertools.islice(
        (name for name in (f"{template.name}-extra-{k}" for k in itertools.count())
         if name not in taken), count))
    extra = tuple(
        NodeInfo.create(name, template.allocatable,
                        capacity=template.capacity,
                        labels=labels(name),
                        annotations=dict(template.annotations), taints=template.taints,
                        numa_topology=template.numa_topology.fresh()
                        if template.numa_topology is not None else None)
        for name in names
    )
    return attrs.evolve(scenario, nodes=scenario.nodes + extra,
                        hyper_nodes=_beside(scenario, template, extra))


def _beside(scenario: Scenario, template: NodeInfo,
            added: tuple[NodeInfo, ...]) -> tuple[HyperNode, ...]:
    """The hypernodes with the new nodes put where the template lies: every hypernode
    one of whose node members selects the template selects the new nodes too (a node
    added to the same rack), by exact name where no member selects it already (by its
    own name and labels: a member selecting hostnames does not select a new host)."""
    if not scenario.hyper_nodes:
        return scenario.hyper_nodes
    node_labels = {node.name: node.labels for node in scenario.nodes}
    with_new = {**node_labels, **{node.name: node.labels for node in added}}
    out = []
    for hyper_node in scenario.hyper_nodes:
        node_members = [m for m in hyper_node.members if m.kind == "Node"]
        if not any(template.name in m.nodes(node_labels) for m in node_members):
            out.append(hyper_node)
            continue
        missing = [node.name for node in added
                   if not any(node.name in m.nodes(with_new) for m in node_members)]
        out.append(attrs.evolve(hyper_node, members=hyper_node.members + tuple(
            HyperNodeMember(kind="Node", exact=name) for name in missing)))
    return tuple(out)


def _hyper_node_membership(scenario: Scenario) -> dict[str, frozenset[str]]:
    """Node name -> the hypernodes it lies in (nodes of different hypernodes are no one
    shape: a node added like one lies where its name takes it)."""
    if not scenario.hyper_nodes:
        return {}
    topology = build_topology(scenario.hyper_nodes, scenario.nodes, partial=True)
    out: dict[str, set[str]] = {}
    for hyper_node, nodes in topology.real_nodes.items():
        if hyper_node == CLUSTER_TOP:
            continue
        for name in nodes:
            out.setdefault(name, set()).add(hyper_node)
    return {name: frozenset(found) for name, found in out.items()}


#: Quota names that count objects (``count/pods``): no request makes them smaller.
_QUOTA_COUNT_PREFIX = "count/"


def _extended(name: str) -> bool:
    """An extended resource (``vendor.example/thing``): Kubernetes takes it whole."""
    return "/" in name


def with_smaller_requests(scenario: Scenario, job: str, factor: float) -> Scenario:
    """The scenario with the job's pending requests times ``factor`` (pods kept), each
    amount rounded up as a scenario's quantity is read (whole milli-units, whole
    bytes): the requests a changed file can hold. An extended resource asked in whole
    units (a device count, device memory) stays whole, rounded down, and is kept as
    asked where that would be none: a pod cannot ask a fraction of a device."""
    def smaller(request: Resource) -> Resource:
        scaled = request.clone().multi(factor)
        # Rounded to a millionth first: 1000m x 0.3 is 300m, not 301m.
        scaled.milli_cpu = math.ceil(round(scaled.milli_cpu, 6))
        scaled.memory = math.ceil(round(scaled.memory, 6))
        for name, amount in scaled.scalars.items():
            original = request.scalars[name]
            if name.startswith(_QUOTA_COUNT_PREFIX):
                # A quota's count of objects (count/pods): the pods are kept.
                scaled.scalars[name] = original
                continue
            if original % 1000:
                # Asked in fractions (milli-GPUs): scaled in milli-units.
                scaled.scalars[name] = float(math.ceil(round(amount, 6)))
                continue
            if not _extended(name):
                # A native resource asked whole (bytes of ephemeral storage, hugepages):
                # rounded up to whole units, as a file would ask it.
                scaled.scalars[name] = math.ceil(round(amount / 1000, 6)) * 1000.0
                continue
            # Asked whole (devices, MiB of device memory): Kubernetes takes an extended
            # resource whole only, and Volcano reads a fraction of a device count as 0:
            # rounded down, and one at least (none stays none).
            scaled.scalars[name] = (max(math.floor(round(amount / 1000, 6)), 1) * 1000.0
                                    if original else 0.0)
        if request.has(PODS):
            scaled.set(PODS, request.get(PODS))
        return scaled

    def smaller_nonzero(figures: tuple[int, int] | None) -> tuple[int, int] | None:
        # kube-scheduler's figures scale with the requests (a 0 stays 0).
        return None if figures is None else (
            math.ceil(round(figures[0] * factor, 6)), math.ceil(round(figures[1] * factor, 6)))

    tasks = tuple(
        attrs.evolve(task, resreq=smaller(task.resreq), init_resreq=smaller(task.init_resreq),
                     nonzero_request=smaller_nonzero(task.nonzero_request),
                     # What its app containers ask (NUMA and device plugins read it).
                     container_requests=None if task.container_requests is None
                     else smaller(task.container_requests))
        if task.job == job and task.status is TaskStatus.PENDING else task
        for task in scenario.tasks
    )

    def with_smaller_minimum(owner: JobInfo) -> JobInfo:
        """The pod group's minResources (what admission weighs) scaled alike."""
        minimum = owner.podgroup.min_resources
        if owner.uid != job or minimum is None:
            return owner
        twin = owner.clone()
        twin.podgroup.min_resources = smaller(minimum)
        return twin

    jobs = tuple(with_smaller_minimum(owner) for owner in scenario.jobs)
    return attrs.evolve(scenario, tasks=tasks, jobs=jobs)


def with_queue(scenario: Scenario, name: str, change: Callable[[QueueInfo], QueueInfo]
               ) -> Scenario:
    """The scenario with queue ``name`` replaced by ``change(copy of it)``."""
    queues = tuple(change(q.clone()) if q.name == name else q for q in scenario.queues)
    return attrs.evolve(scenario, queues=queues)


def without_tasks(scenario: Scenario, uids: set[str]) -> Scenario:
    """The scenario with the tasks ``uids`` gone (evicted and deleted)."""
    return attrs.evolve(scenario, tasks=tuple(t for t in scenario.tasks if t.uid not in uids))


def counterfactuals(scenario: Scenario, *, job: str | None = None, task: str | None = None,
                    registry: Registry | None = None, max_nodes: int = 16,
                    quota: list[dict[str, Any]] | None = None,
                    max_sessions: int = 64) -> list[dict[str, Any]]:
    """The smallest change of each kind that lets the job (or task) start now, each
    found and checked by a session on the changed scenario (see the module docstring).

    ``quota`` is the explanation's quota gaps (``explain(...)["quota"]``); without it
    the quota kind tries the queue's weight only. ``max_sessions`` bounds the
    sessions the victims search may run.
    """
    if task is not None:
        job = next((t.job for t in scenario.tasks if t.uid == task), None)
    if job is None:
        raise ScenarioError("explain one job or one task", source=scenario.source)
    target: str = job

    def works(changed: Scenario) -> bool:
        return starts(changed, target, task, registry)

    if works(scenario):
        return []
    found: list[dict[str, Any]] = []
    more = _more_nodes(scenario, works, max_nodes)
    if more is not None:
        found.append(more)
    smaller = _smaller_requests(scenario, target, works)
    if smaller is not None:
        found.append(smaller)
    raised = _raised_quota(scenario, target, quota or [], works)
    if raised is not None:
        found.append(raised)
    victims = _victims(scenario, target, works, max_sessions)
    if victims is not None:
        found.append(victims)
    return found


def _more_nodes(scenario: Scenario, works: Callable[[Scenario], bool],
                max_nodes: int) -> dict[str, Any] | None:
    shapes: dict[tuple[Any, ...], NodeInfo] = {}
    membership = _hyper_node_membership(scenario)
    for node in scenario.nodes:
        if node.unschedulable or not node.ready:
            continue  # "more nodes like a cordoned one" would be no advice to follow
        # The labels that name the host do not make a shape: with_nodes renames them.
        labels = tuple(sorted((k, v) for k, v in node.labels.items()
                              if k not in _NODE_NAME_LABELS))
        # Annotations by name (a device plugin's registration names each node's own
        # cards, but a mode switch such as hami-vnpu-core makes another kind of node).
        key = (tuple(sorted(node.allocatable.to_dict().items())), labels, node.taints,
               repr(node.numa_topology.fresh() if node.numa_topology is not None else None),
               membership.get(node.name, frozenset()), tuple(sorted(node.annotations)))
        shapes.setdefault(key, node)
    best: dict[str, Any] | None = None
    for template in shapes.values():
        limit = max_nodes if best is None else best["count"] - 1
        for count in range(1, limit + 1):
            if works(with_nodes(scenario, template, count)):
                best = {"kind": "moreNodes", "like": template.name, "count": count,
                        "text": f"{count} more node(s) like {template.name}"}
                break
    return best


def _smaller_requests(scenario: Scenario, job: str,
                      works: Callable[[Scenario], bool]) -> dict[str, Any] | None:
    whole = any(amount and not amount % 1000
                for task in scenario.tasks
                if task.job == job and task.status is TaskStatus.PENDING
                for name, amount in task.resreq.scalars.items() if _extended(name))
    note = " (device counts and other extended resources in whole units, none below one)"
    # A job with no pods yet is weighed by its pod group's minResources alone.
    what = ("the job's pending requests" if any(task.job == job for task in scenario.tasks)
            else "its pod group's minResources")
    for factor in _FACTORS:
        if works(with_smaller_requests(scenario, job, factor)):
            return {"kind": "smallerRequests", "factor": factor,
                    "text": f"{what} times {factor}" + (note if whole else "")}
    return None


def _raised_quota(scenario: Scenario, job: str, gaps: list[dict[str, Any]],
                  works: Callable[[Scenario], bool]) -> dict[str, Any] | None:
    owner = next((j for j in scenario.jobs if j.uid == job), None)
    queue = next((q for q in scenario.queues if owner is not None and q.name == owner.queue),
                 None)
    if queue is None:
        return None
    by_name = {q.name: q for q in scenario.queues}
    for gap in gaps:
        field = gap["ceiling"]
        # The queue short may be an ancestor of the job's (hierarchical capacity).
        short_queue = by_name.get(gap.get("queue", queue.name))
        if not gap["short"] or field not in ("capability", "deserved") or short_queue is None:
            continue
        spec: Resource | None = getattr(short_queue, field)
        if spec is None:
            continue  # the ceiling comes from elsewhere (the cluster, the weights)
        short = Resource.from_mapping(gap["short"])

        def raise_field(q: QueueInfo, field: str = field, short: Resource = short) -> QueueInfo:
            raised = (getattr(q, field) or Resource()).clone().add(short)
            defined = dict(q.defined)
            if field in defined:
                defined[field] = defined[field] | frozenset(short.to_dict())
            if field == "capability":
                return attrs.evolve(q, capability=raised, defined=defined)
            return attrs.evolve(q, deserved=raised, defined=defined)

        if works(with_queue(scenario, short_queue.name, raise_field)):
            amounts = ", ".join(f"{k} {v}" for k, v in gap["short"].items())
            return {"kind": "quota", "queue": short_queue.name, "field": field,
                    "by": dict(gap["short"]),
                    "text": f"queue {short_queue.name}'s {field} raised by {amounts}"}
    for step in _WEIGHT_STEPS:
        weight = queue.weight * step

        def reweigh(q: QueueInfo, weight: int = weight) -> QueueInfo:
            return attrs.evolve(q, weight=weight)

        if works(with_queue(scenario, queue.name, reweigh)):
            return {"kind": "quota", "queue": queue.name, "field": "weight", "to": weight,
                    "text": f"queue {queue.name}'s weight raised from {queue.weight} to "
                            f"{weight}"}
    return None


def _within_budgets(candidates: list[TaskInfo], scenario: Scenario) -> list[TaskInfo]:
    """The candidates, in order, that can be evicted together: each disruption budget
    lets go of at most its ``disruptionsAllowed`` (the later ones beyond it are left
    out, so that every prefix respects every budget)."""
    allowed = [pdb.disruptions_allowed for pdb in scenario.pdbs]
    kept = []
    for task in candidates:
        covering = [i for i, pdb in enumerate(scenario.pdbs)
                    if pdb.matches(task.namespace, task.labels)]
        if any(allowed[i] <= 0 for i in covering):
            continue
        for i in covering:
            allowed[i] -= 1
        kept.append(task)
    return kept


def _victims(scenario: Scenario, job: str, works: Callable[[Scenario], bool],
             max_sessions: int) -> dict[str, Any] | None:
    jobs = {j.uid: j for j in scenario.jobs}
    owner = jobs.get(job)
    if owner is None:
        return None
    reclaimable = {q.name for q in scenario.queues if q.reclaimable}
    if all(q.name != "default" for q in scenario.queues):
        reclaimable.add("default")  # the implicit default queue is reclaimable

    def basis(task: TaskInfo) -> str | None:
        """Preempt takes lower-priority tasks of the preemptor's queue; reclaim takes
        tasks of other, reclaimable queues."""
        other = jobs.get(task.job)
        if other is None:
            return None
        if other.queue == owner.queue:
            return "preempt" if other.priority < owner.priority else None
        return "reclaim" if other.queue in reclaimable else None

    def protected(task: TaskInfo) -> bool:
        """A pod no eviction may take: marked not preemptable (the pod's, or its pod
        group's, ``volcano.sh/preemptable: "false"``). Disruption budgets are kept by
        :func:`_within_budgets`."""
        other = jobs.get(task.job)
        marked = other is not None and any(
            _PREEMPTABLE in source for source in (other.podgroup.annotations,
                                                  other.podgroup.labels))
        return not task.preemptable or (marked and other is not None and not other.preemptable)

    candidates = [t for t in scenario.tasks
                  if t.job != job and t.node_name and t.status in _PLACED
                  and basis(t) is not None and not protected(t)]
    candidates.sort(key=lambda t: (jobs[t.job].priority, t.priority, -t.creation_time, t.uid))
    candidates = _within_budgets(candidates, scenario)
    if not candidates:
        return None
    budget = [max_sessions]

    def works_without(uids: set[str]) -> bool:
        budget[0] -= 1
        return works(without_tasks(scenario, uids))

    if not works_without({t.uid for t in candidates}):
        return None
    # The shortest prefix that works (binary search), then spare whom we can.
    low, high = 1, len(candidates)
    while low < high and budget[0] > 0:
        middle = (low + high) // 2
        if works_without({t.uid for t in candidates[:middle]}):
            high = middle
        else:
            low = middle + 1
    chosen = [t.uid for t in candidates[:high]]
    for uid in reversed(list(chosen)):
        if budget[0] <= 0 or len(chosen) == 1:
            break
        trial = set(chosen) - {uid}
        if works_without(trial):
            chosen.remove(uid)
    # Every prefix kept and every removal made was checked by a session above.
    by_uid = {t.uid: t for t in candidates}
    listed = [{"task": uid, "job": by_uid[uid].job, "node": by_uid[uid].node_name,
               "basis": basis(by_uid[uid])} for uid in sorted(chosen)]
    names = ", ".join(uid for uid in sorted(chosen))
    return {"kind": "victims", "tasks": listed,
            "text": f"evicting {len(chosen)} task(s): {names}"}
