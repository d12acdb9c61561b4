"""numa-aware: place tasks that want exclusive CPUs where the kubelet's topology
manager will admit them, on as few NUMA nodes as possible (Volcano's
``plugins/numaaware``).

A node takes part when it carries a NUMA topology (``NodeInfo.numa_topology``,
:mod:`batchsched.api.numa`; the scenario key ``numaTopology``). A task's own
topology policy is its annotation ``volcano.sh/numa-topology-policy`` (none when
absent).

**Which tasks.** Only Guaranteed tasks: any other task passes on every node, and
nothing is assigned to it. A task whose cpu request is not a whole number of CPUs
gets no exclusive CPUs (it passes, with nothing assigned).

**Predicate.** For a Guaranteed task T on node N:

* when T has a policy other than ``none``, N must have a topology (else
  ``numa info is empty``), a ``static`` CPU manager policy (``cpu manager policy
  isn't static``), the same topology manager policy as T (``task topology
  policy[P] is different with node[Q]``), be known to the session (``no topo
  information``: the session opened without N's topology) and have free CPUs
  (``cpu allocatable map is empty``); each failure is an Error, which rules N out
  for preemption too;
* when T has no policy, N is checked only when it has a topology, a ``static`` CPU
  manager policy and a topology manager policy other than ``none``; any other node
  passes without a check.

A node checked has the hints of the CPU provider
(:mod:`~batchsched.plugins.numaaware.cpu_provider`) merged by its topology manager
policy (:mod:`~batchsched.plugins.numaaware.policy`); a task the policy does not
admit fails with ``container NAME cannot be assigned by numa`` (Unschedulable and
unresolvable). Otherwise the CPUs it would get there are worked out and kept (one
set per task and node, replaced at each check).

**Batch node order.** For a task with a policy other than ``none`` that was
checked, each node scores by the number of NUMA nodes its CPUs there span, fewer
better: ``100 - 100 * count // largest count`` (100 everywhere when no CPUs were
assigned anywhere), times ``weight``.

**Allocate / deallocate events.** A task placed on a node takes the CPUs worked
out for it there from that node's free CPUs for the rest of the session; taking it
off (a discarded statement, an eviction) gives them back.

**Session close.** The CPUs of the tasks still placed are handed to a cache that
offers ``add_unassigned_numa_pods(assignments)`` (task id -> {node name -> {resource
-> ids}}), which is expected to keep them out of the topologies of later
snapshots until the node's exporter reports them (Volcano's
``AddUnassignedNumaPods``). A cache without it is left alone; one whose method
raises has the failure kept in ``ssn.host_errors``.

Argument ``weight`` (integer, default 1).

Differences from Volcano:

* batchsched's tasks carry requests only, no limits and no containers. A task is
  read as one container, named after the task, requesting the task's requests,
  and as Guaranteed when it requests both cpu and memory (the class of a pod whose
  limits equal its requests). A pod that is Burstable in Kubernetes (limits above
  requests) counts as Guaranteed here, and a pod of several containers whose cpu
  requests are fractional but add up to whole CPUs gets exclusive CPUs here.
* Where Volcano's CPU assignment starts from Go's map order (random), batchsched
  starts from ascending ids (:mod:`~batchsched.plugins.numaaware.cpu_assignment`).
* A node without a topology among those batch-scored counts 0 NUMA nodes (Volcano
  would dereference a nil topology; it cannot happen once the predicate ran).
* The handing over at close needs a cache that takes it. ``MemoryCache`` (and so
  the simulator) does: it keeps the CPUs out of the node's topology until the task
  leaves the node; the one-session scenario runner does not need to.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from batchsched.api.fit import FitError
from batchsched.api.node import NodeInfo
from batchsched.api.numa import NumaTopology, ResourceSets
from batchsched.api.resource import CPU, MEMORY, PODS, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.errors import CacheError
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.plugins.numaaware.cpu_provider import CpuHintProvider
from batchsched.plugins.numaaware.policy import NONE, HintProvider, ProviderHints, policy_for

__all__ = [
    "MAX_NODE_SCORE",
    "NUMA_POLICY_ANNOTATION",
    "PLUGIN_NAME",
    "WEIGHT_ARGUMENT",
    "Assignments",
    "NumaAwarePlugin",
    "is_guaranteed",
    "numa_node_count",
    "task_policy",
]

log = logging.getLogger("batchsched")

PLUGIN_NAME = "numa-aware"
WEIGHT_ARGUMENT = "weight"
NUMA_POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"
MAX_NODE_SCORE = 100
STATIC = "static"
#: Task id -> {node name -> the ids it would get there, per resource}.
Assignments = dict[str, dict[str, dict[str, frozenset[int]]]]


def is_guaranteed(task: TaskInfo) -> bool:
    """Whether the task is read as Guaranteed: it requests both cpu and memory."""
    return not task.resreq.is_zero(CPU) and not task.resreq.is_zero(MEMORY)


def task_policy(task: TaskInfo) -> str:
    """The task's topology policy (its ``volcano.sh/numa-topology-policy``)."""
    return task.annotations.get(NUMA_POLICY_ANNOTATION, "")


def numa_node_count(cpus: frozenset[int], topology: NumaTopology | None) -> int:
    """How many NUMA nodes ``cpus`` span (a CPU the topology does not describe
    counts on NUMA node 0, as in Volcano)."""
    if topology is None:
        return 0
    details = topology.cpu_detail
    return len({details[cpu].numa if cpu in details else 0 for cpu in cpus})


class NumaAwarePlugin:
    """Volcano's numa-aware plugin (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.weight = arguments.get_int(WEIGHT_ARGUMENT, 1, owner=PLUGIN_NAME)
        arguments.warn_unknown(PLUGIN_NAME, {WEIGHT_ARGUMENT})
        self.providers: tuple[HintProvider, ...] = (CpuHintProvider(),)
        #: The CPUs each checked task would get on each node checked.
        self.assignments: Assignments = {}
        #: Each node's free ids per resource, as the session's placements leave them.
        self.free: dict[str, dict[str, frozenset[int]]] = {}
        #: The NUMA node ids of each node with a topology.
        self.numa_nodes: dict[str, tuple[int, ...]] = {}
        #: Task id -> the node it was placed on in this session (with its CPUs).
        self.placed: dict[str, str] = {}

    def on_session_open(self, ssn: Session) -> None:
        for node in ssn.node_list:
            topology = node.numa_topology
            if topology is not None:
                self.free[node.name] = topology.free_sets()
                self.numa_nodes[node.name] = topology.numa_nodes()
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate,
                                           deallocate=self.on_deallocate, plugin=self.name))
        ssn.add_predicate_fn(self.name, self.predicate)
        ssn.add_batch_node_order_fn(self.name, self.batch_node_order)

    # -- predicate --------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        if not is_guaranteed(task):
            return None
        reason = self._policy_mismatch(task, node)
        if reason is not None:
            return FitError.of(task.namespace, task.name, node.name, reason)
        topology = node.numa_topology
        if topology is None or not self._checked(task, topology):
            return None
        # A node the session did not have at open has nothing free here (as in Volcano).
        free = dict(self.free.get(node.name, {}))
        policy = policy_for(topology.topology_manager_policy,
                            self.numa_nodes.get(node.name, ()))
        assigned: dict[str, frozenset[int]] = {}
        for container, requests in self._containers(task):
            hints: Sequence[ProviderHints] = [
                provider.topology_hints(requests, topology, free) for provider in self.providers]
            best, admitted = policy.predicate(hints)
            if not admitted:
                return FitError.of(
                    task.namespace, task.name, node.name,
                    f"container {container} cannot be assigned by numa",
                    code=FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, plugin=PLUGIN_NAME)
            for provider in self.providers:
                for resource, ids in provider.allocate(requests, best, topology, free).items():
                    assigned[resource] = assigned.get(resource, frozenset()) | ids
                    free[resource] = free.get(resource, frozenset()) - ids
        self.assignments.setdefault(task.uid, {})[node.name] = assigned
        return None

    def _policy_mismatch(self, task: TaskInfo, node: NodeInfo) -> str | None:
        """Why a task with a topology policy cannot go to the node, if it cannot."""
        policy = task_policy(task)
        if policy in ("", NONE):
            return None
        topology = node.numa_topology
        if topology is None:
            return "numa info is empty"
        if topology.cpu_manager_policy != STATIC:
            return "cpu manager policy isn't static"
        if policy != topology.topology_manager_policy:
            return (f"task topology policy[{policy}] is different with "
                    f"node[{topology.topology_manager_policy}]")
        free = self.free.get(node.name)
        if free is None:
            return "no topo information"
        if not free.get(CPU):
            return "cpu allocatable map is empty"
        return None

    @staticmethod
    def _checked(task: TaskInfo, topology: NumaTopology) -> bool:
        """Whether the task's CPUs are worked out on a node of this topology that
        :meth:`_policy_mismatch` let through: always for a task with a policy, and for
        one without only where the kubelet aligns CPUs at all."""
        if task_policy(task) not in ("", NONE):
            return True
        return (topology.cpu_manager_policy == STATIC
                and topology.topology_manager_policy not in ("", NONE))

    @staticmethod
    def _containers(task: TaskInfo) -> list[tuple[str, Resource]]:
        """The task's containers with their requests: the task itself, as one, with
        what its app containers ask (Volcano looks at ``spec.containers`` only: init
        containers that ask more do not make the task need more exclusive CPUs)."""
        requests = (task.container_requests or task.resreq).clone()
        requests.scalars.pop(PODS, None)
        return [(task.name, requests)]

    # -- batch node order ---------------------------------------------------------------

    def batch_node_order(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        assigned = self.assignments.get(task.uid)
        if assigned is None or task_policy(task) in ("", NONE):
            return {}
        counts = [numa_node_count(assigned.get(node.name, {}).get(CPU, frozenset()),
                                  node.numa_topology) for node in nodes]
        largest = max(counts, default=0)
        scores: dict[str, float] = {}
        for node, count in zip(nodes, counts, strict=True):
            score = MAX_NODE_SCORE - (MAX_NODE_SCORE * count // largest if largest else 0)
            scores[node.name] = float(score * self.weight)
        return scores

    # -- events -------------------------------------------------------------------------

    def on_allocate(self, event: Event) -> None:
        task = event.task
        assigned = self.assignments.get(task.uid, {}).get(task.node_name)
        if assigned is None:
            return
        _update(self.free.get(task.node_name), assigned, taken=True)
        self.placed[task.uid] = task.node_name

    def on_deallocate(self, event: Event) -> None:
        task = event.task
        assigned = self.assignments.get(task.uid, {}).get(task.node_name)
        if assigned is None:
            return
        _update(self.free.get(task.node_name), assigned, taken=False)
        self.placed.pop(task.uid, None)

    # -- session close ----------------------------------------------------------------------

    def on_session_close(self, ssn: Session) -> None:
        """Hand the CPUs of the tasks still placed to a cache that takes them."""
        handed: Assignments = {}
        for uid, node_name in self.placed.items():
            assigned = self.assignments.get(uid, {}).get(node_name)
            if assigned is None:
                log.warning("plugin %r: no CPU assignment of task %s on node %s to hand "
                            "over", PLUGIN_NAME, uid, node_name)
                continue
            handed[uid] = {node_name: assigned}
        take = getattr(ssn.cache, "add_unassigned_numa_pods", None)
        if not handed or take is None:
            return
        try:
            take(handed)
        except Exception as exc:
            error = CacheError(f"the cache's add_unassigned_numa_pods raised "
                               f"{type(exc).__name__}: {exc}",
                               operation="add_unassigned_numa_pods")
            error.__cause__ = exc
            ssn.host_errors.append(error)
            log.warning("batchsched: %s", error)


def _update(free: dict[str, frozenset[int]] | None, sets: ResourceSets, *,
            taken: bool) -> None:
    """Take ``sets`` from (or give them back to) a node's free ids, for the resources
    the node has."""
    if free is None:
        return
    for resource, ids in sets.items():
        if resource in free:
            free[resource] = free[resource] - ids if taken else free[resource] | ids

