"""The Kubernetes view of a session's nodes, shared by predicates and nodeorder.

Volcano hands kube-scheduler's filter and score plugins one ``NodeInfo`` per
node, built at session open from every task on the node (Running, Bound,
Binding, Allocated, Pipelined and Releasing alike). Both the predicates and the
nodeorder plugin read **the same** objects, and only the predicates plugin's
event handlers change them: a task that is allocated or pipelined is added, a
task that is evicted or whose placement is undone disappears at once. So with
the predicates plugin configured, later tasks in a session see earlier
placements (pod count, host ports, pod affinity, requested resources); without
it, nodeorder keeps scoring against the session-open state.

:class:`KubeView` is that shared state, one per session (kept in
``ssn.extra``; over a cache with incremental snapshots, carried from one session
to the next and rebuilt only for the nodes with new copies). :class:`PodInfo`
is a task as the Kubernetes plugins see it: one container with the task's
requests (the init request folded in as Kubernetes does: per resource the
larger), host ports, parsed affinity, and the "non-zero" requests kube-scheduler
uses for spreading (a missing cpu counts 100m, a missing memory 200Mi; a request
of 0 counts as missing here).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from batchsched._carried import Carried
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import COMPLETED_STATUSES
from batchsched.errors import SchedulingError
from batchsched.kube.affinity import (
    Affinity,
    AffinityError,
    AffinityTerm,
    WeightedAffinityTerm,
    WeightedPodAffinityTerm,
    parse_affinity,
)
from batchsched.kube.host_ports import ANY_IP, HostPort, host_port_of
from batchsched.kube.pod_index import PlacedPodIndex
from batchsched.kube.taints import Toleration

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "GPU",
    "KubeView",
    "NodeView",
    "PodInfo",
    "pod_info",
    "task_affinity",
]

#: kube-scheduler's stand-ins for a missing request when spreading load.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
#: The extended resource BalancedAllocation looks at besides cpu and memory.
GPU = "nvidia.com/gpu"

_VIEW_KEY = "batchsched.kube_view"
#: Per cache whose sessions reuse node objects, the view its last session used.
_carried: Carried[KubeView] = Carried()
#: What ``parse_affinity(None)`` gives (immutable, so shared by every task without one).
_NO_AFFINITY = parse_affinity(None)


def kube_int(amount: float) -> int:
    """A quantity as the integer Kubernetes holds (rounded up, like ``Quantity.Value``)."""
    return math.ceil(amount - 1e-9) if amount > 0 else 0


def nonzero_request(task: TaskInfo) -> tuple[int, int]:
    """The milli-cpu and bytes kube-scheduler's scores count for the pod: its own
    figures (``TaskInfo.nonzero_request``) when known, else its requests with 100m and
    200Mi standing in for a request of none (kube's ``GetNonzeroRequests``)."""
    if task.nonzero_request is not None:
        return task.nonzero_request
    request = task.resreq
    return (kube_int(request.milli_cpu) or DEFAULT_MILLI_CPU_REQUEST,
            kube_int(request.memory) or DEFAULT_MEMORY_REQUEST)


@attrs.frozen
class PodInfo:
    """A task as kube-scheduler's plugins see it (immutable during a session)."""

    uid: str
    namespace: str
    labels: Mapping[str, str]
    node_selector: Mapping[str, str]
    affinity: Affinity
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    milli_cpu: int
    memory: int
    gpu: int
    nonzero_milli_cpu: int
    nonzero_memory: int
    images: tuple[str, ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]

    @property
    def has_pod_affinity(self) -> bool:
        """The pod declares a ``podAffinity`` or ``podAntiAffinity`` section."""
        return self.affinity.has_pod_affinity or self.affinity.has_pod_anti_affinity

    @property
    def best_effort(self) -> bool:
        """Requests nothing BalancedAllocation looks at (cpu, memory, GPUs)."""
        return self.milli_cpu == 0 and self.memory == 0 and self.gpu == 0


def task_affinity(task: TaskInfo) -> Affinity:
    """``parse_affinity(task.affinity, task.labels)``, read once and kept on the task
    while it holds the same document and labels objects (every session's copy of
    the task shares them): a replay's sessions and the loader's check read it once.
    Raises :class:`AffinityError` as ``parse_affinity`` does."""
    kept = task.affinity_read
    if kept is not None and kept[0] is task.affinity and kept[1] is task.labels:
        affinity: Affinity = kept[2]
        return affinity
    affinity = parse_affinity(task.affinity, task.labels)
    task.affinity_read = (task.affinity, task.labels, affinity)
    return affinity


def pod_info(task: TaskInfo) -> PodInfo:
    """Build the Kubernetes view of a task; a bad affinity raises SchedulingError."""
    req = task.resreq
    cpu, memory = kube_int(req.milli_cpu), kube_int(req.memory)
    nonzero = nonzero_request(task)
    ns = task.namespace
    required: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti: tuple[WeightedAffinityTerm, ...] = ()
    if task.affinity is None:
        affinity = _NO_AFFINITY  # most tasks: no parsing, no terms to resolve
    else:
        try:
            affinity = task_affinity(task)
        except AffinityError as exc:
            raise SchedulingError(f"task {task.uid}: affinity.{exc}") from exc
        required = tuple(t.resolve(ns) for t in affinity.required_affinity)
        required_anti = tuple(t.resolve(ns) for t in affinity.required_anti_affinity)
        preferred = _resolve_weighted(affinity.preferred_affinity, ns)
        preferred_anti = _resolve_weighted(affinity.preferred_anti_affinity, ns)
    return PodInfo(
        uid=task.uid,
        namespace=ns,
        labels=dict(task.labels),
        node_selector=dict(task.node_selector),
        affinity=affinity,
        tolerations=tuple(task.tolerations),
        host_ports=tuple(map(host_port_of, task.host_ports)) if task.host_ports else (),
        milli_cpu=cpu,
        memory=memory,
        gpu=kube_int(req.get(GPU)),
        nonzero_milli_cpu=nonzero[0],
        nonzero_memory=nonzero[1],
        images=tuple(task.images),
        required_affinity=required,
        required_anti_affinity=required_anti,
        preferred_affinity=preferred,
        preferred_anti_affinity=preferred_anti,
    )


def _resolve_weighted(
    terms: tuple[WeightedPodAffinityTerm, ...], owner_namespace: str
) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(WeightedAffinityTerm(t.weight, t.term.resolve(owner_namespace)) for t in terms)


@attrs.define(eq=False)
class NodeView:
    """One node as kube-scheduler sees it: its pods and the sums over them."""

    name: str
    pods: dict[str, PodInfo] = attrs.field(factory=dict)
    milli_cpu: int = 0
    memory: int = 0
    gpu: int = 0
    nonzero_milli_cpu: int = 0
    nonzero_memory: int = 0
    #: The host ports in use, as a set (kube-scheduler's ``HostPortInfo``): keys only.
    used_ports: dict[HostPort, int] = attrs.field(factory=dict)
    pods_with_affinity: int = 0
    pods_with_required_anti_affinity: int = 0

    def add(self, pod: PodInfo) -> None:
        if pod.uid in self.pods:
            self.remove(pod.uid)
        self.pods[pod.uid] = pod
        self._account(pod, 1)

    def remove(self, uid: str) -> PodInfo | None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            self._account(pod, -1)
        return pod

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.milli_cpu += sign * pod.milli_cpu
        self.memory += sign * pod.memory
        self.gpu += sign * pod.gpu
        self.nonzero_milli_cpu += sign * pod.nonzero_milli_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        if pod.host_ports:
            # A set, as kube-scheduler's HostPortInfo: removing a pod frees its ports
            # even when another pod on the node names one too.
            used = self.used_ports
            for port in pod.host_ports:
                if sign > 0:
                    used[port] = 1
                else:
                    used.pop(port, None)
        # pod.has_pod_affinity, read without the property: once per placement.
        affinity = pod.affinity
        if affinity.has_pod_affinity or affinity.has_pod_anti_affinity:
            self.pods_with_affinity += sign
        if pod.required_anti_affinity:
            self.pods_with_required_anti_affinity += sign

    def port_conflict(self, wanted: HostPort) -> bool:
        """Kubernetes' ``HostPortInfo.CheckConflict``: 0.0.0.0 clashes with every IP."""
        ip, protocol, port = wanted
        ip = ip or ANY_IP
        if ip == ANY_IP:
            return any(p == port and proto == protocol for _, proto, p in self.used_ports)
        used = self.used_ports
        return (ip, protocol, port) in used or (ANY_IP, protocol, port) in used


class KubeView:
    """Every session node's :class:`NodeView`, plus the parsed pods, for one session.

    Sessions over a cache that hands out unchanged nodes again (``incremental
    snapshots``: ``Session.reuses_objects``) share one view, carried from each session
    to the next (:meth:`carry_over`): a replay's session then rebuilds the views of the
    nodes that changed, not of every node."""

    def __init__(self, nodes: Mapping[str, NodeInfo]) -> None:
        self.nodes: dict[str, NodeView] = {}
        self._pods: dict[str, PodInfo] = {}
        self._where: dict[str, str] = {}
        #: Names of the nodes whose pods changed, oldest first (append-only), so that
        #: a columnar copy of the view can refresh only what moved.
        self.change_log: list[str] = []
        #: The placed pods by label and by anti-affinity anchor (inter-pod affinity).
        self.placed = PlacedPodIndex()
        #: Per node, the node object its view was built from and that object's
        #: mutation count then: while both hold, the view is the node's.
        self._built: dict[str, tuple[NodeInfo, int]] = {}
        # The nodes whose view holds a pod with a pod (anti-)affinity section, and
        # those holding one with required anti-affinity (kept as views change).
        self._with_affinity: set[str] = set()
        self._with_anti_affinity: set[str] = set()
        for name, node in nodes.items():
            self._build(name, node)
        self._note_affinity_nodes()

    def _build(self, name: str, node: NodeInfo) -> None:
        self.nodes[name] = NodeView(name)
        for task in node.tasks.values():
            # Finished tasks hold nothing in Kubernetes' view of a node.
            if task.status not in COMPLETED_STATUSES:
                self.add(task, name)
        self._built[name] = (node, node.mutations)

    def _note_affinity_nodes(self) -> None:
        #: The nodes that held a pod with a pod (anti-)affinity section, and those that
        #: held a pod with required anti-affinity, when the session opened: Volcano's
        #: session snapshot (``k8s.NewSnapshot`` at session open) lists them once, so a
        #: pod placed during the session on a node outside these lists is not seen by
        #: the rules of later pods without terms of their own (the existing pods'
        #: anti-affinity filter, the placed pods' preferred terms in the score) until
        #: the next session, while pods placed on a listed node are.
        self.affinity_nodes_at_open: frozenset[str] = frozenset(self._with_affinity)
        self.anti_affinity_nodes_at_open: frozenset[str] = frozenset(
            self._with_anti_affinity)

    def carry_over(self, nodes: Mapping[str, NodeInfo],
                   renewed: frozenset[str] | None = None) -> None:
        """Serve a later session over ``nodes``: a node's view stays when the node is
        the object it was built from, unchanged since (its ``mutations`` count; the
        cache hands out the same object for a node that nothing changed, and every
        placement or eviction of a session changes its node), and is built again
        otherwise. ``renewed``, when the cache can tell, names the nodes with new
        objects since the view was last brought up to date (``Session.
        nodes_renewed_since``): only they are looked at. The result is what a view
        built afresh over ``nodes`` holds."""
        self._pods = {}
        self.change_log = []
        built = self._built
        if renewed is not None and list(self.nodes) == list(nodes):
            stale = [name for name in renewed if name in nodes]
            gone: list[str] = []
        else:
            stale = [name for name, node in nodes.items()
                     if (kept := built.get(name)) is None or kept[0] is not node
                     or kept[1] != node.mutations]
            gone = [name for name in self.nodes if name not in nodes]
        # Every stale node's pods leave first: a pod that moved between two of them is
        # then placed once.
        for name in (*gone, *stale):
            self._clear(name)
        for name in gone:
            del self.nodes[name], built[name]
        for name in stale:
            self._build(name, nodes[name])
        if list(self.nodes) != list(nodes):  # nodes came or went: the session's order
            self.nodes = {name: self.nodes[name] for name in nodes}
        self._note_affinity_nodes()

    def _clear(self, name: str) -> None:
        """The node's pods leave the view (its own and the indexes)."""
        view = self.nodes.get(name)
        if view is None:
            return
        where = self._where
        for uid, pod in view.pods.items():
            self.placed.remove(pod)
            if where.get(uid) == name:
                del where[uid]
        self._with_affinity.discard(name)
        self._with_anti_affinity.discard(name)

    @classmethod
    def of(cls, ssn: object) -> KubeView:
        """The session's view, created from its nodes on first use (or carried over
        from the cache's previous session, see the class docstring)."""
        extra: dict[str, object] = ssn.extra  # type: ignore[attr-defined]
        view = extra.get(_VIEW_KEY)
        if not isinstance(view, KubeView):
            view = cls._carried_or_built(ssn)
            extra[_VIEW_KEY] = view
        return view

    @classmethod
    def _carried_or_built(cls, ssn: Any) -> KubeView:
        def carry(view: KubeView, renewed: frozenset[str] | None) -> bool:
            view.carry_over(ssn.nodes, renewed)
            return True

        return _carried.get(ssn, lambda: cls(ssn.nodes), carry)

    def pod(self, task: TaskInfo) -> PodInfo:
        """The task's PodInfo (parsed once per session)."""
        info = self._pods.get(task.uid)
        if info is None:
            info = pod_info(task)
            self._pods[task.uid] = info
        return info

    def add(self, task: TaskInfo, node_name: str) -> None:
        """The task now runs on ``node_name`` (an allocate or pipeline)."""
        uid = task.uid
        nodes = self.nodes
        previous = self._where.get(uid)
        if previous is not None and previous in nodes:
            gone = nodes[previous].remove(uid)
            if gone is not None:
                self.placed.remove(gone)
            self._changed(nodes[previous])
        node = nodes.get(node_name)
        if node is None:
            return
        pod = self.pod(task)
        node.add(pod)
        self.placed.add(pod, node_name)
        self._where[uid] = node_name
        self._changed(node)

    def remove(self, task: TaskInfo) -> None:
        """The task left its node (an eviction or an undone placement)."""
        name = self._where.pop(task.uid, None)
        if name is not None and name in self.nodes:
            node = self.nodes[name]
            gone = node.remove(task.uid)
            if gone is not None:
                self.placed.remove(gone)
            self._changed(node)

    def _changed(self, node: NodeView) -> None:
        name = node.name
        self.change_log.append(name)
        if node.pods_with_affinity:
            self._with_affinity.add(name)
        else:
            self._with_affinity.discard(name)
        if node.pods_with_required_anti_affinity:
            self._with_anti_affinity.add(name)
        else:
            self._with_anti_affinity.discard(name)

    def all_pods(self) -> Iterator[tuple[NodeView, PodInfo]]:
        for node in self.nodes.values():
            for pod in node.pods.values():
                yield node, pod
