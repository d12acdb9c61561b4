"""predicates: may this task run on that node (Volcano's ``plugins/predicates``).

Volcano runs kube-scheduler's filter plugins; this module applies the same
rules to the task and node model. ``predicate(task, node)`` checks, in this order:

1. **pod count** (always): the node holds fewer pods than its allocatable
   ``pods`` (a node without ``pods`` takes none) -- ``node(s) pod number exceeded``,
   Unschedulable. It does not stop the other checks.
2. the node-static checks, each stopping at its first failure (all
   UnschedulableAndUnresolvable):

   * **node unschedulable** (always): a cordoned node takes only tasks that
     tolerate ``node.kubernetes.io/unschedulable:NoSchedule`` --
     ``node(s) were unschedulable``;
   * **node affinity** (``predicate.NodeAffinityEnable``): the ``nodeSelector``
     and the required node affinity -- ``node(s) didn't match Pod's node
     affinity/selector``;
   * **taints** (``predicate.TaintTolerationEnable``): every ``NoSchedule`` and
     ``NoExecute`` taint must be tolerated -- ``node(s) had untolerated
     taint(s)`` (``batchsched explain`` names the first one, in node order).
3. **host ports** (``predicate.NodePortsEnable``): no pod on the node uses one
   of the task's host ports -- ``node(s) didn't have free ports for the
   requested pod ports``, Unschedulable.
4. **inter-pod affinity** (``predicate.PodAffinityEnable``): the task's required
   pod affinity (UnschedulableAndUnresolvable, ``node(s) didn't match pod
   affinity rules``), its required anti-affinity (``node(s) didn't match pod
   anti-affinity rules``) and the required anti-affinity of pods already placed
   (``node(s) didn't satisfy existing pods anti-affinity rules``), the last two
   Unschedulable.
5. **pod topology spread** (``predicate.PodTopologySpreadEnable``): the task's
   ``DoNotSchedule`` topology spread constraints
   (:mod:`batchsched.kube.topology_spread`): a node without a constraint's
   topology label fails UnschedulableAndUnresolvable (``node(s) didn't match pod
   topology spread constraints (missing required label)``), a node where the
   task would exceed ``maxSkew`` fails Unschedulable (``node(s) didn't match pod
   topology spread constraints``). Placed pods count except terminating ones
   (Releasing at session open). Tasks without constraints skip it (no default
   constraints: the model has no services or replica sets to derive them from).
6. **proportional** (``predicate.ProportionalEnable``, default false, the
   argument set of Volcano releases that had it here; resource-strategy-fit
   offers the same check): a task that asks for none of the listed resources
   (e.g. GPUs) must leave enough idle cpu and memory for the node's idle
   GPUs -- ``proportional of resource R check failed``, UnschedulableAndUnresolvable.

The result is a :class:`~batchsched.api.fit.FitError` holding every failure in
that order (preempt reads the codes: an UnschedulableAndUnresolvable node is
not worth evicting for). Volume, zone, CSI-limit and DRA
checks have nothing to look at in this model: their switches are accepted and
they always pass.

**State within a session.** The plugin keeps the Kubernetes view of each node
(:mod:`batchsched.kube.pod_view`) current: a task allocated or pipelined
counts on its node at once, an evicted task or an undone placement stops
counting at once. ``pre_predicate(task)`` computes the task's inter-pod
affinity and topology spread counts over all nodes; like Volcano, a check found irrelevant for a
task at that point (e.g. inter-pod affinity for a task without required terms
while no placed pod has an anti-affinity against it) stays off for that task
for the rest of the session. ``predicate`` without an earlier
``pre_predicate`` computes the counts itself (Volcano would fail the node).

``predicate.CacheEnable`` (default false) remembers, per node and per pod
template (annotation ``volcano.sh/template-uid``), the outcome of the
node-static checks; a remembered failure reads ``plugin equivalence cache
predicates failed`` (code Error).

``simulate_predicate`` (the dry run of topology-aware preemption) checks inter-pod
affinity only (not topology spread), on the node copy it is given: the pods counted on that node are
those of the view that the copy still holds.

``vector_predicate`` answers ``predicate`` for all nodes at once (a mask) for the
fast node selector (:mod:`batchsched.columnar.selector`): the pod count is
one comparison over the view's arrays, the node-static filters are computed
once per distinct combination of selector, required node affinity and
tolerations, host ports look only at nodes with used ports, and inter-pod
affinity once per distinct combination of the topology labels involved. It
declines the proportional check, the equivalence cache and tasks with
``DoNotSchedule`` topology spread constraints (the scalar predicate then serves
those tasks).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping

import attrs
import numpy as np

from batchsched import columnar
from batchsched.api.devices import DEVICE_SIMULATE_KEY
from batchsched.api.fit import NODE_POD_NUMBER_EXCEEDED, FitError, FitStatus
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.kube_columns import KubeColumns
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray, NodeColumns
from batchsched.errors import SchedulingError
from batchsched.framework.arguments import Arguments, decode_int
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.kube.affinity import node_selector_matches
from batchsched.kube.dra.allocator import AllocationError
from batchsched.kube.dra.objects import AllocationResult
from batchsched.kube.dra.scheduling import (
    PLUGIN as DYNAMIC_RESOURCES,
)
from batchsched.kube.dra.scheduling import (
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    DraRejection,
    DynamicResources,
)
from batchsched.kube.go_strings import trim_space
from batchsched.kube.pod_index import PlacedPodIndex
from batchsched.kube.pod_view import KubeView, NodeView, PodInfo
from batchsched.kube.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    UNSCHEDULABLE_TAINT_KEY,
    Taint,
    find_untolerated_taint,
    tolerations_tolerate,
)
from batchsched.kube.topology_spread import (
    REASON_NODE_LABEL_NOT_MATCH,
    PlacedPod,
    SpreadConstraint,
    SpreadNode,
    domain_counts,
    spread_filter,
)
from batchsched.plugins.resource_strategy_fit import (
    ProportionalRates,
    check_proportional,
    proportional_reason,
)

__all__ = [
    "REASON_AFFINITY_RULES",
    "REASON_ANTI_AFFINITY_RULES",
    "REASON_EXISTING_ANTI_AFFINITY_RULES",
    "REASON_NODE_AFFINITY",
    "REASON_NODE_PORTS",
    "REASON_NODE_UNSCHEDULABLE",
    "REASON_UNTOLERATED_TAINT",
    "InterPodCounts",
    "PredicatesPlugin",
    "inter_pod_affinity_counts",
    "spread_placements",
    "untolerated_taint_detail",
    "untolerated_taint_reason",
]

log = logging.getLogger("batchsched")

PLUGIN_NAME = "predicates"
#: Volcano's argument for the DRA plugin's filter deadline (seconds).
DRA_FILTER_TIMEOUT = "dynamicresources.filterTimeoutSeconds"
#: Volcano's VolumeBinding arguments (read whenever the filter is on, the default).
VOLUME_BINDING_WEIGHT = "volumebinding.weight"
VOLUME_BINDING_TIMEOUT = "volumebinding.bindTimeoutSeconds"

REASON_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_AFFINITY_RULES = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY_RULES = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_CACHE_FAILED = "plugin equivalence cache predicates failed"
REASON_NODE_NOT_FOUND = "node info not found"
REASON_AFFINITY_CONFLICT = "pod affinity terms conflict"
TEMPLATE_UID_ANNOTATION = "volcano.sh/template-uid"

# kube-scheduler's plugin names, carried on each status.
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_AFFINITY = "NodeAffinity"
TAINT_TOLERATION = "TaintToleration"
NODE_PORTS = "NodePorts"
INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
PROPORTIONAL = "predicate.ProportionalEnable"

_UU = FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE
_UNSCHEDULABLE = FitStatusCode.UNSCHEDULABLE
_ABORT = frozenset({_UU, FitStatusCode.ERROR, FitStatusCode.WAIT, FitStatusCode.SKIP})
_BLOCKING_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
_UNSCHEDULABLE_TAINT = Taint(UNSCHEDULABLE_TAINT_KEY, "", NO_SCHEDULE)
#: A task in these statuses was bound: the claims it reserved are allocated.
_BOUND_STATUSES = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})

TopologyPair = tuple[str, str]


#: kube-scheduler's TaintToleration reason since Kubernetes 1.35 (Volcano pins 1.36),
#: whichever taint it is; ``batchsched explain`` names the taint in the detail.
REASON_UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"


def untolerated_taint_reason(taint: Taint) -> str:
    """``node(s) had untolerated taint(s)``: kube-scheduler names no taint (its log
    does; :func:`untolerated_taint_detail` is that)."""
    return REASON_UNTOLERATED_TAINT


def untolerated_taint_detail(taint: Taint) -> str:
    """``untolerated taint {key: value}``: the first taint no toleration tolerates."""
    return f"untolerated taint {taint}"


@attrs.define
class InterPodCounts:
    """kube-scheduler's InterPodAffinity pre-filter counts for one incoming pod.

    Each maps a topology pair (label key, value) to a number of pods:
    ``existing_anti``: placed pods whose required anti-affinity selects the
    incoming pod; ``affinity``: placed pods matching all of the incoming pod's
    required affinity terms; ``anti``: placed pods selected by one of the incoming
    pod's required anti-affinity terms (once per term).
    """

    existing_anti: Counter[TopologyPair] = attrs.field(factory=Counter)
    affinity: Counter[TopologyPair] = attrs.field(factory=Counter)
    anti: Counter[TopologyPair] = attrs.field(factory=Counter)


def inter_pod_affinity_counts(
    pod: PodInfo, placed: Iterable[tuple[Mapping[str, str], PodInfo]]
) -> InterPodCounts:
    """Count, over ``(node labels, placed pod)`` pairs, what the filter needs."""
    counts = InterPodCounts()
    for labels, other in placed:
        if other.uid == pod.uid or not labels:
            continue
        for term in other.required_anti_affinity:
            key = term.topology_key
            if key in labels and term.matches(pod.namespace, pod.labels):
                counts.existing_anti[(key, labels[key])] += 1
        if pod.required_affinity and all(
            t.matches(other.namespace, other.labels) for t in pod.required_affinity
        ):
            for term in pod.required_affinity:
                key = term.topology_key
                if key in labels:
                    counts.affinity[(key, labels[key])] += 1
        for term in pod.required_anti_affinity:
            key = term.topology_key
            if key in labels and term.matches(other.namespace, other.labels):
                counts.anti[(key, labels[key])] += 1
    return counts


def indexed_inter_pod_affinity_counts(
    pod: PodInfo, placed: PlacedPodIndex, node_labels: Callable[[str], Mapping[str, str]],
    anti_affinity_nodes: Container[str] | None = None,
) -> InterPodCounts:
    """:func:`inter_pod_affinity_counts` over every placed pod, visiting only the pods
    and terms the index says may match (the same counts, see
    :mod:`batchsched.kube.pod_index`). With ``anti_affinity_nodes``, the placed pods'
    own anti-affinity counts only on those nodes (Volcano's session lists them once,
    see :attr:`KubeView.anti_affinity_nodes_at_open`)."""
    counts = InterPodCounts()
    namespace, labels_of_pod = pod.namespace, pod.labels
    for term, _, node, other in placed.anti_terms_selecting(labels_of_pod):
        if other.uid == pod.uid:
            continue
        if anti_affinity_nodes is not None and node not in anti_affinity_nodes:
            continue
        labels = node_labels(node)
        key = term.topology_key
        if key in labels and term.matches(namespace, labels_of_pod):
            counts.existing_anti[(key, labels[key])] += 1
    required = pod.required_affinity
    if required:
        for other, node in placed.selected_by(required[0]):
            if other.uid == pod.uid:
                continue
            if all(t.matches(other.namespace, other.labels) for t in required):
                labels = node_labels(node)
                for term in required:
                    key = term.topology_key
                    if key in labels:
                        counts.affinity[(key, labels[key])] += 1
    for term in pod.required_anti_affinity:
        key = term.topology_key
        for other, node in placed.selected_by(term):
            if other.uid == pod.uid:
                continue
            labels = node_labels(node)
            if key in labels and term.matches(other.namespace, other.labels):
                counts.anti[(key, labels[key])] += 1
    return counts


def inter_pod_affinity_filter(
    pod: PodInfo, counts: InterPodCounts, labels: Mapping[str, str]
) -> FitStatus | None:
    """kube-scheduler's InterPodAffinity filter on a node with ``labels``."""
    pods_exist = True
    for term in pod.required_affinity:
        value = labels.get(term.topology_key)
        if value is None:
            return FitStatus(_UU, REASON_AFFINITY_RULES, INTER_POD_AFFINITY)
        if counts.affinity[(term.topology_key, value)] <= 0:
            pods_exist = False
    # The first pod of a group with affinity to itself may go anywhere the
    # topology labels exist, provided no other pod matches yet.
    if not pods_exist and not (
        not +counts.affinity
        and all(t.matches(pod.namespace, pod.labels) for t in pod.required_affinity)
    ):
        return FitStatus(_UU, REASON_AFFINITY_RULES, INTER_POD_AFFINITY)
    for term in pod.required_anti_affinity:
        value = labels.get(term.topology_key)
        if value is not None and counts.anti[(term.topology_key, value)] > 0:
            return FitStatus(_UNSCHEDULABLE, REASON_ANTI_AFFINITY_RULES, INTER_POD_AFFINITY)
    if +counts.existing_anti and any(
        counts.existing_anti[(k, v)] > 0 for k, v in labels.items()
    ):
        return FitStatus(_UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY_RULES, INTER_POD_AFFINITY)
    return None


def spread_placements(
    nodes: Mapping[str, NodeInfo], view: KubeView, pod: PodInfo
) -> Iterable[tuple[SpreadNode, Iterable[PlacedPod]]]:
    """Every session node with the placed pods topology spread counts on it: all
    but terminating ones (Releasing, or deleted in another phase) and ``pod`` itself."""
    for name, node_view in view.nodes.items():
        node = nodes.get(name)
        if node is None:
            continue
        tasks = node.tasks
        yield node, [
            other for uid, other in node_view.pods.items()
            if uid != pod.uid and not (
                (task := tasks.get(uid)) is not None
                and (task.status == TaskStatus.RELEASING or task.deleting))
        ]


@attrs.define
class _TaskState:
    """A task's pre-filter state for the session (Volcano's cycle state).

    ``provisional`` marks a state computed by ``predicate`` itself, without a
    ``pre_predicate`` call; the next ``pre_predicate`` starts afresh.
    """

    skipped: set[str] = attrs.field(factory=set)
    counts: InterPodCounts | None = None
    #: Why Dynamic Resource Allocation turned the task down for every node.
    dra: DraRejection | None = None
    #: The DoNotSchedule topology spread constraints and their domain counts.
    spread: tuple[SpreadConstraint, ...] = ()
    spread_counts: list[dict[str, int]] = attrs.field(factory=list)
    provisional: bool = False


def _read_rates(arguments: Arguments) -> ProportionalRates:
    rates: dict[str, tuple[float, float]] = {}
    for raw in arguments.get_str("predicate.resources", "", owner="predicates").split(","):
        name = trim_space(raw)
        if not name:
            continue
        cpu = arguments.get_float(f"predicate.resources.{name}.cpu", 1.0, owner=PLUGIN_NAME)
        memory = arguments.get_float(f"predicate.resources.{name}.memory", 1.0, owner=PLUGIN_NAME)
        rates[name] = (cpu if cpu >= 0 else 1.0, memory if memory >= 0 else 1.0)
    return rates


#: Every argument predicates reads or reports (any other is reported as not read).
_READ_ARGUMENTS = (
    "predicate.NodeAffinityEnable", "predicate.NodePortsEnable",
    "predicate.TaintTolerationEnable", "predicate.PodAffinityEnable",
    "predicate.NodeVolumeLimitsEnable", "predicate.VolumeZoneEnable",
    "predicate.PodTopologySpreadEnable", "predicate.VolumeBindingEnable",
    "predicate.DynamicResourceAllocationEnable", "predicate.GPUSharingEnable",
    "predicate.GPUNumberEnable", "predicate.CacheEnable", "predicate.ProportionalEnable",
    "predicate.resources", DRA_FILTER_TIMEOUT, VOLUME_BINDING_WEIGHT, VOLUME_BINDING_TIMEOUT,
)


#: The filters after the stable ones that read their pre-filter's state, in Volcano's
#: order (the volume plugins between them pass a pod without volumes first): the
#: plugin's switch, the kube plugin and kube's error when the state is missing.
_NEED_PRE_FILTER = (
    ("node_ports_enable", NODE_PORTS, 'reading "PreFilterNodePorts" from cycleState: not found'),
    ("pod_affinity_enable", INTER_POD_AFFINITY,
     'error reading "PreFilterInterPodAffinity" from cycleState: not found'),
    ("pod_topology_spread_enable", POD_TOPOLOGY_SPREAD,
     'reading "PreFilterPodTopologySpread" from cycleState: not found'),
    ("volume_binding_enable", "VolumeBinding", "not found"),
    # Last, and always there: Volcano registers it whenever the DynamicResourceAllocation
    # feature gate is on, which it is.
    (None, "DynamicResources", "not found"),
)


class PredicatesPlugin:
    """Volcano's predicates plugin: Kubernetes' node filters (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.node_affinity_enable = arguments.get_bool(
            "predicate.NodeAffinityEnable", True, owner=PLUGIN_NAME)
        self.node_ports_enable = arguments.get_bool(
            "predicate.NodePortsEnable", True, owner=PLUGIN_NAME)
        self.taint_toleration_enable = arguments.get_bool(
            "predicate.TaintTolerationEnable", True, owner=PLUGIN_NAME)
        self.pod_affinity_enable = arguments.get_bool(
            "predicate.PodAffinityEnable", True, owner=PLUGIN_NAME)
        # Accepted for compatibility (but topology spread): nothing in the model has
        # volumes, zones or claims.
        self.node_volume_limits_enable = arguments.get_bool(
            "predicate.NodeVolumeLimitsEnable", True, owner=PLUGIN_NAME)
        self.volume_zone_enable = arguments.get_bool(
            "predicate.VolumeZoneEnable", True, owner=PLUGIN_NAME)
        self.pod_topology_spread_enable = arguments.get_bool(
            "predicate.PodTopologySpreadEnable", True, owner=PLUGIN_NAME)
        self.volume_binding_enable = arguments.get_bool(
            "predicate.VolumeBindingEnable", True, owner=PLUGIN_NAME)
        no_volumes = "the scenario model has no volumes, persistent volume claims or CSI drivers"
        arguments.warn_cannot_turn_off(self.name, {
            # Volcano no longer reads it: its feature gate decides, on since Kubernetes 1.34.
            "predicate.DynamicResourceAllocationEnable":
                "Volcano follows the DynamicResourceAllocation feature gate, which is on"})
        # Read as Volcano reads them (framework.Get[int]: a value that is no number
        # stops Volcano's scheduler, and is an error here), of no consequence: a
        # simulated allocation has no deadline, and the model has no volumes.
        keys = [DRA_FILTER_TIMEOUT]
        if self.volume_binding_enable:
            keys += [VOLUME_BINDING_WEIGHT, VOLUME_BINDING_TIMEOUT]
        for key in keys:
            if arguments.get(key) is not None:
                value = decode_int(arguments.get(key), key)
                if key == VOLUME_BINDING_TIMEOUT and value < 0:
                    # kube's volumebinding.New validates its arguments; Volcano exits.
                    raise ValueError(f"argument {key}: invalid BindTimeoutSeconds, should "
                                     f"not be a negative value, got {value}")
        arguments.warn_inert(self.name, {
            "predicate.NodeVolumeLimitsEnable": no_volumes,
            "predicate.VolumeZoneEnable": no_volumes,
            "predicate.VolumeBindingEnable": no_volumes,
            # Volcano moved them to deviceshare in v1.8.2 and no longer reads them here.
            "predicate.GPUSharingEnable": "read from deviceshare (deviceshare.GPUSharingEnable)",
            "predicate.GPUNumberEnable": "read from deviceshare (deviceshare.GPUNumberEnable)",
        })
        arguments.warn_unknown(self.name, _READ_ARGUMENTS, prefixes=["predicate.resources."])
        self.cache_enable = arguments.get_bool("predicate.CacheEnable", False, owner=PLUGIN_NAME)
        self.proportional_enable = arguments.get_bool(
            "predicate.ProportionalEnable", False, owner=PLUGIN_NAME)
        self.proportional: ProportionalRates = _read_rates(arguments)
        self._view: KubeView | None = None
        self._ssn: Session | None = None
        self._dry_run_recounts = True
        self._states: dict[str, _TaskState] = {}
        self._cache: dict[str, dict[str, bool]] = {}
        self._stable_masks: dict[object, BoolArray | None] = {}
        self._kube: KubeColumns | None = None
        self._dra: DynamicResources | None = None

    # -- session ------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        # Volcano's session calls this plugin's simulate add/remove-task functions (which
        # keep the inter-pod affinity counts of a preemption dry run current) only when
        # its preemptable or allocatable switch is on; otherwise the counts stay those
        # of the pre-filter, victims removed on the node copy included.
        option = ssn.configuration.plugin_option(self.name)
        self._dry_run_recounts = option is None or option.enabled("enablePreemptable") \
            or option.enabled("enabledAllocatable")
        self._view = view = KubeView.of(ssn)
        self._states = {}
        self._cache = {}
        self._dra = dra = DynamicResources(ssn.dra)

        def on_allocate(event: Event) -> None:
            task = event.task
            if task.resource_claims:
                task.claim_allocations = self._reserve(dra, task)
            view.add(task, task.node_name)

        def on_deallocate(event: Event) -> None:
            task = event.task
            view.remove(task)
            if task.resource_claims:
                dra.unreserve(task.uid)
                task.claim_allocations = None

        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate, plugin=self.name))
        ssn.add_pre_predicate_fn(self.name, self.pre_predicate)
        ssn.add_predicate_fn(self.name, self.predicate)
        columnar.add_predicate_fn(ssn, self.name, self.vector_predicate)
        columnar.add_preempt_predicate_fn(ssn, self.name, self.vector_preempt_predicate)
        columnar.add_template_fn(ssn, self.name, self.vector_template)
        ssn.add_simulate_predicate_fn(self.name, self.simulate_predicate)
        if ssn.dra:
            # Kubernetes' DRA score (Volcano's BatchNodeOrder of this plugin): 0 but for
            # claims with alternatives, so only sessions with DRA objects need it.
            ssn.add_batch_node_order_fn(self.name, self.batch_node_order)
            columnar.add_batch_node_order_fn(ssn, self.name, self.vector_batch_node_order)
        self._stable_masks = {}
        self._kube = None

    def _reserve(self, dra: DynamicResources, task: TaskInfo) -> dict[str, AllocationResult]:
        """kube's Reserve for the task's claims (an allocation event); a failure refuses
        the placement (Volcano's event error: the statement undoes it, the action
        moves on)."""
        assert self._ssn is not None
        node = self._ssn.nodes.get(task.node_name)
        try:
            if task.status is TaskStatus.PIPELINED and dra.allocates(task.uid):
                # Volcano reserves a pipelined pod for its spec.nodeName, which the
                # pipeline leaves empty: no allocation is found there, and the pipeline
                # is undone.
                raise AllocationError("claim allocation not found for node")
            return dra.reserve(task.uid, task.node_name, node.labels if node else {},
                               lambda: task.status in _BOUND_STATUSES)
        except AllocationError as exc:
            raise SchedulingError(f"task {task.uid}: Reserve plugin {DYNAMIC_RESOURCES} "
                                  f"failed: {exc}") from None

    def on_session_close(self, ssn: Session) -> None:
        self._states = {}
        self._cache = {}
        self._stable_masks = {}
        self._kube = None
        self._dra = None

    @property
    def view(self) -> KubeView:
        if self._view is None:
            raise RuntimeError("the predicates plugin is not open on a session")
        return self._view

    def _labels(self, node_name: str) -> Mapping[str, str]:
        assert self._ssn is not None
        node = self._ssn.nodes.get(node_name)
        return node.labels if node is not None else {}

    # -- pre-predicate ------------------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> FitError | None:
        """Compute the task's filter state over all nodes (Volcano's ``PrePredicate``)."""
        state = self._states.get(task.uid)
        if state is None or state.provisional:
            state = self._states[task.uid] = _TaskState()
        return self._pre_filter(task, state)

    def _pre_filter(self, task: TaskInfo, state: _TaskState) -> FitError | None:
        view = self.view
        pod = view.pod(task)
        skipped = state.skipped
        if self.node_affinity_enable:
            node_affinity = pod.affinity.node
            if not pod.node_selector and node_affinity.required is None:
                skipped.add(NODE_AFFINITY)
            elif node_affinity.conflicting_node_names():
                return FitError(task.namespace, task.name, "", [FitStatus(
                    _UU, f"plugin {NODE_AFFINITY} pre-predicates failed {REASON_AFFINITY_CONFLICT}",
                    NODE_AFFINITY)])
        if self.node_ports_enable and not pod.host_ports:
            skipped.add(NODE_PORTS)
        if self.pod_affinity_enable:
            own_terms = bool(pod.required_affinity or pod.required_anti_affinity)
            listed = view.anti_affinity_nodes_at_open
            if not own_terms and not listed:
                # Nothing to count: the filter has nothing to check for this task.
                state.counts = None
                skipped.add(INTER_POD_AFFINITY)
            else:
                state.counts = indexed_inter_pod_affinity_counts(
                    pod, view.placed, self._labels, listed)
                if not own_terms and not +state.counts.existing_anti:
                    skipped.add(INTER_POD_AFFINITY)
        if self.pod_topology_spread_enable:
            hard = tuple(c for c in task.topology_spread if c.hard)
            if not hard:
                state.spread, state.spread_counts = (), []
                skipped.add(POD_TOPOLOGY_SPREAD)
            else:
                assert self._ssn is not None
                state.spread = hard
                state.spread_counts = domain_counts(
                    pod, hard, spread_placements(self._ssn.nodes, view, pod))
        if task.resource_claims and self._dra is not None:
            state.dra = self._dra.pre_filter(task.uid, task.namespace, task.name,
                                             task.resource_claims)
            if state.dra is not None:
                return FitError(task.namespace, task.name, "", [FitStatus(
                    FitStatusCode.ERROR,
                    f"plugin {DYNAMIC_RESOURCES} pre-predicates failed {state.dra.message}",
                    DYNAMIC_RESOURCES)])
        return None

    def _placed_pods(self, override: NodeInfo | None, only: Container[str] | None = None
                     ) -> Iterable[tuple[Mapping[str, str], PodInfo]]:
        """Every placed pod with its node's labels (on the nodes ``only`` holds, when
        given); on ``override``'s node (a copy a preemption dry run changed) only the
        pods that copy still holds."""
        for node_view in self.view.nodes.values():
            if only is not None and node_view.name not in only:
                continue
            labels = self._labels(node_view.name)
            if override is not None and node_view.name == override.name:
                labels = override.labels
                for pod in node_view.pods.values():
                    if pod.uid in override.tasks:
                        yield labels, pod
                continue
            for pod in node_view.pods.values():
                yield labels, pod

    def _state(self, task: TaskInfo) -> _TaskState:
        state = self._states.get(task.uid)
        if state is None:
            state = self._states[task.uid] = _TaskState(provisional=True)
            self._pre_filter(task, state)
        return state

    # -- predicate ------------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """Every enabled filter, in Volcano's order (see the module docstring)."""
        node_view = self.view.nodes.get(node.name)
        if node_view is None:
            return FitError(task.namespace, task.name, node.name,
                            [FitStatus(FitStatusCode.ERROR, REASON_NODE_NOT_FOUND, self.name)])
        pod = self.view.pod(task)
        assert self._ssn is not None
        state = self._state(task)
        pre_filtered = not state.provisional
        statuses: list[FitStatus] = []
        if node.max_task_num <= len(node_view.pods):
            statuses.append(FitStatus(_UNSCHEDULABLE, NODE_POD_NUMBER_EXCEEDED, self.name))

        stable, fit = self._stable_filters_cached(task, pod, node, state)
        statuses.extend(stable)
        if not fit:
            return FitError(task.namespace, task.name, node.name, statuses)
        if not pre_filtered and not self._ssn.reporting:
            # Volcano's filters after the stable ones read what the pre-predicate wrote
            # in the task's cycle state: without it, the first of them fails with an
            # Error (a nominated preemptor allocate never reached is eligible to preempt).
            missing = next(((plugin, text) for switch, plugin, text in _NEED_PRE_FILTER
                            if switch is None or getattr(self, switch)), None)
            if missing is not None:
                statuses.append(FitStatus(FitStatusCode.ERROR, missing[1], missing[0]))
                return FitError(task.namespace, task.name, node.name, statuses)

        for status in self._dynamic_filters(task, pod, node, node_view, state):
            statuses.append(status)
            if status.code in _ABORT:
                break
        if statuses:
            return FitError(task.namespace, task.name, node.name, statuses)
        return None

    def _stable_filters_cached(
        self, task: TaskInfo, pod: PodInfo, node: NodeInfo, state: _TaskState
    ) -> tuple[list[FitStatus], bool]:
        if not self.cache_enable:
            return self._stable_filters(pod, node, state)
        template = task.annotations.get(TEMPLATE_UID_ANNOTATION, "")
        if not template or (self._ssn is not None and self._ssn.reporting):
            # A report (scores, explanations) neither reads nor fills the equivalence
            # cache: its verdicts would be the decisions' first, in another order.
            return self._stable_filters(pod, node, state)
        known = self._cache.setdefault(node.name, {})
        if template not in known:
            statuses, fit = self._stable_filters(pod, node, state)
            known[template] = fit
            return statuses, fit
        if known[template]:
            return [], True
        return [FitStatus(FitStatusCode.ERROR, REASON_CACHE_FAILED, "predicate.CacheEnable")], False

    def _stable_filters(
        self, pod: PodInfo, node: NodeInfo, state: _TaskState
    ) -> tuple[list[FitStatus], bool]:
        """Node unschedulable, node affinity, taints: the checks that depend only on the
        node's static fields. All fail UnschedulableAndUnresolvable, which stops."""
        if node.unschedulable and not tolerations_tolerate(
            pod.tolerations, _UNSCHEDULABLE_TAINT
        ):
            return [FitStatus(_UU, REASON_NODE_UNSCHEDULABLE, NODE_UNSCHEDULABLE)], False
        if self.node_affinity_enable and NODE_AFFINITY not in state.skipped and not (
            node_selector_matches(pod.node_selector, node.labels)
            and pod.affinity.node.required_matches(node.labels, node.name)
        ):
            return [FitStatus(_UU, REASON_NODE_AFFINITY, NODE_AFFINITY)], False
        if self.taint_toleration_enable:
            taint = find_untolerated_taint(node.taints, pod.tolerations,
                                           _BLOCKING_EFFECTS)
            if taint is not None:
                return [FitStatus(_UU, REASON_UNTOLERATED_TAINT, TAINT_TOLERATION,
                                  untolerated_taint_detail(taint))], False
        return [], True

    def _dynamic_filters(
        self, task: TaskInfo, pod: PodInfo, node: NodeInfo, node_view: NodeView, state: _TaskState
    ) -> Iterable[FitStatus]:
        if (self.node_ports_enable and NODE_PORTS not in state.skipped
                and any(node_view.port_conflict(port) for port in pod.host_ports)):
            yield FitStatus(_UNSCHEDULABLE, REASON_NODE_PORTS, NODE_PORTS)
        if self.pod_affinity_enable and INTER_POD_AFFINITY not in state.skipped:
            counts = state.counts or InterPodCounts()
            status = inter_pod_affinity_filter(pod, counts, node.labels)
            if status is not None:
                yield status
        if (self.pod_topology_spread_enable and POD_TOPOLOGY_SPREAD not in state.skipped
                and state.spread):
            reason = spread_filter(pod, state.spread, state.spread_counts, node.labels)
            if reason is not None:
                code = _UU if reason == REASON_NODE_LABEL_NOT_MATCH else _UNSCHEDULABLE
                yield FitStatus(code, reason, POD_TOPOLOGY_SPREAD)
        if self.proportional_enable:
            failed = check_proportional(task, node, self.proportional)
            if failed is not None:
                yield FitStatus(_UU, proportional_reason(failed), PROPORTIONAL)
        if task.resource_claims and self._dra is not None:
            rejection = state.dra or self._dra.filter(task.uid, node.name, node.labels)
            if rejection is not None:
                code = _UU if rejection.code == UNSCHEDULABLE_AND_UNRESOLVABLE \
                    else FitStatusCode.ERROR
                yield FitStatus(code, rejection.message, DYNAMIC_RESOURCES)

    # -- all nodes at once ----------------------------------------------------------------------

    def vector_predicate(self, task: TaskInfo, columns: NodeColumns) -> BoolArray:
        """:meth:`predicate` for every node at once: True where it returns None.

        Declines (VectorFallback) the proportional check and the equivalence cache,
        whose answers depend on which nodes earlier tasks happened to visit.
        """
        return self._masks(task, columns)[0]

    def _masks(
        self, task: TaskInfo, columns: NodeColumns
    ) -> tuple[BoolArray, BoolArray | None, BoolArray | None]:
        """(where every filter passes, where the node-static filters pass, where the
        required pod affinity holds); None for "everywhere"."""
        if self.proportional_enable or (
            self.cache_enable and task.annotations.get(TEMPLATE_UID_ANNOTATION, "")
        ):
            raise VectorFallback("predicates: proportional check or equivalence cache")
        if self.pod_topology_spread_enable and any(c.hard for c in task.topology_spread):
            raise VectorFallback("predicates: topology spread constraints")
        if task.resource_claims:
            raise VectorFallback("predicates: resource claims (Dynamic Resource Allocation)")
        assert self._ssn is not None
        kube = self._kube
        if kube is None or kube.columns is not columns:
            kube = self._kube = KubeColumns.of(self._ssn)
        kube.sync()
        pod = self.view.pod(task)
        state = self._state(task)
        # ``kube.room`` is shared: combine into a new array before changing anything.
        passes: BoolArray = kube.room
        stable = self._stable_mask(pod, state, kube)
        if stable is not None:
            passes = passes & stable
        check_ports = (self.node_ports_enable and NODE_PORTS not in state.skipped
                       and bool(pod.host_ports) and bool(kube.port_nodes))
        check_affinity = self.pod_affinity_enable and INTER_POD_AFFINITY not in state.skipped
        if not check_ports and not check_affinity:
            return passes, stable, None
        if passes is kube.room:
            passes = passes.copy()
        if check_ports:
            names = columns.names
            for position in kube.port_nodes:
                node_view = self.view.nodes[names[position]]
                if any(node_view.port_conflict(port) for port in pod.host_ports):
                    passes[position] = False
        required: BoolArray | None = None
        if check_affinity:
            counts = state.counts or InterPodCounts()
            required = self._required_affinity_mask(pod, counts, kube)
            passes &= required
            passes &= self._anti_affinity_mask(pod, counts, kube)
        return passes, stable, required

    def vector_template(self, task: TaskInfo) -> tuple[object, ...] | None:
        """What :meth:`vector_predicate` reads from the task, when each node's verdict
        depends only on that node: not with inter-pod affinity in play (counts over
        all nodes), topology spread, the proportional check or the equivalence cache."""
        if self.proportional_enable or (
            self.cache_enable and task.annotations.get(TEMPLATE_UID_ANNOTATION, "")
        ) or (self.pod_topology_spread_enable and task.topology_spread) or task.resource_claims:
            return None
        state = self._state(task)
        if self.pod_affinity_enable and INTER_POD_AFFINITY not in state.skipped:
            return None
        pod = self.view.pod(task)
        ports = self.node_ports_enable and NODE_PORTS not in state.skipped
        return (self._stable_key(pod, state), pod.host_ports if ports else ())

    def _stable_key(self, pod: PodInfo, state: _TaskState) -> tuple[object, ...]:
        affinity_checked = self.node_affinity_enable and NODE_AFFINITY not in state.skipped
        return (
            # Read by the unschedulable-node check too, which no switch turns off.
            pod.tolerations,
            tuple(sorted(pod.node_selector.items())) if affinity_checked else None,
            pod.affinity.node.required if affinity_checked else None,
            affinity_checked,
        )

    def _stable_mask(self, pod: PodInfo, state: _TaskState, kube: KubeColumns) -> BoolArray | None:
        """Which nodes pass the node-static filters (None: all of them), cached per
        distinct combination of what they read from the pod."""
        affinity_checked = self.node_affinity_enable and NODE_AFFINITY not in state.skipped
        if (not affinity_checked and not pod.tolerations
                and (None,) in self._stable_masks):
            # The common case, answered without building the key.
            return self._stable_masks[(None,)]
        key = self._stable_key(pod, state)
        if key in self._stable_masks:
            return self._stable_masks[key]
        nodes = kube.columns.nodes
        if affinity_checked and (pod.node_selector or pod.affinity.node.required is not None):
            positions: Iterable[int] = range(len(nodes))
        else:
            special = kube.static.get("stable_special")
            if special is None:
                special = kube.static["stable_special"] = [
                    i for i, node in enumerate(nodes)
                    if node.unschedulable or any(t.effect in _BLOCKING_EFFECTS for t in node.taints)
                ]
            positions = special
        mask: BoolArray | None = None
        for position in positions:
            if not self._stable_filters(pod, nodes[position], state)[1]:
                if mask is None:
                    mask = np.ones(len(nodes), dtype=np.bool_)
                mask[position] = False
        self._stable_masks[key] = mask
        if not affinity_checked and not pod.tolerations:
            self._stable_masks[(None,)] = mask
        return mask

    @staticmethod
    def _domains(kube: KubeColumns, pairs: Counter[TopologyPair], key: str) -> list[int]:
        """The label codes of the domains of ``key`` holding a positive count."""
        values = kube.labels(key).values
        return [values[v] for (k, v), n in pairs.items() if k == key and n > 0 and v in values]

    def _required_affinity_mask(
        self, pod: PodInfo, counts: InterPodCounts, kube: KubeColumns
    ) -> BoolArray:
        """Where the pod's required affinity holds (its failures are unresolvable); with
        :meth:`_anti_affinity_mask`, :func:`inter_pod_affinity_filter` on every node at
        once, as column operations over the topology labels: O(nodes x terms) in
        numpy, whatever the number of placed pods (``counts`` holds them per domain)."""
        size = len(kube.columns)
        mask: BoolArray = np.ones(size, dtype=np.bool_)
        required = pod.required_affinity
        if not required:
            return mask
        pods_exist: BoolArray = np.ones(size, dtype=np.bool_)
        for term in required:
            labels = kube.labels(term.topology_key)
            mask &= labels.codes >= 0  # the node must have the topology label
            pods_exist &= labels.among(self._domains(kube, counts.affinity, term.topology_key))
        # The first pod of a group with affinity to itself may go anywhere the
        # topology labels exist, provided no other pod matches yet.
        first_of_group = not +counts.affinity and all(
            t.matches(pod.namespace, pod.labels) for t in required)
        if not first_of_group:
            mask &= pods_exist
        return mask

    def _anti_affinity_mask(
        self, pod: PodInfo, counts: InterPodCounts, kube: KubeColumns
    ) -> BoolArray:
        """Where neither the pod's required anti-affinity nor a placed pod's rules it
        out (failures that evicting pods may resolve)."""
        mask: BoolArray = np.ones(len(kube.columns), dtype=np.bool_)
        for term in pod.required_anti_affinity:
            taken = self._domains(kube, counts.anti, term.topology_key)
            if taken:
                mask &= ~kube.labels(term.topology_key).among(taken)
        for key in dict.fromkeys(k for (k, _), n in counts.existing_anti.items() if n > 0):
            taken = self._domains(kube, counts.existing_anti, key)
            if taken:
                mask &= ~kube.labels(key).among(taken)
        return mask

    def vector_preempt_predicate(
        self, task: TaskInfo, columns: NodeColumns
    ) -> tuple[BoolArray, BoolArray]:
        """:meth:`predicate` as preempt and reclaim read it, for every node at once:
        (no error, an error evicting may resolve). The pod count, host ports and
        anti-affinity are resolvable (Unschedulable); node affinity, taints and
        required pod affinity are not."""
        ok, stable, required = self._masks(task, columns)
        # Where no unresolvable filter fails (None: everywhere).
        settled = stable if required is None else (
            required if stable is None else stable & required)
        resolvable: BoolArray = ~ok if settled is None else ~ok & settled
        return ok, resolvable

    # -- Dynamic Resource Allocation's score ---------------------------------------------

    def batch_node_order(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """Kubernetes' DRA score (weight 1): for each ``firstAvailable`` request of the
        task's claims, 8 less the index of the alternative a node would give it,
        scaled to 0-100; 0 for tasks without claims."""
        if not task.resource_claims or self._dra is None:
            return dict.fromkeys((node.name for node in nodes), 0.0)
        scores = self._dra.scores(task.uid, [(node.name, node.labels) for node in nodes])
        return {name: float(score) for name, score in scores.items()}

    def vector_batch_node_order(
        self, task: TaskInfo, columns: NodeColumns, candidates: Candidates
    ) -> FloatArray:
        """:meth:`batch_node_order` over the candidates: zeros for a task without claims
        (the others take the node-by-node path, as their predicate does)."""
        if task.resource_claims:
            raise VectorFallback("predicates: resource claims (Dynamic Resource Allocation)")
        return np.zeros(len(candidates))

    # -- dry-run preemption -------------------------------------------------------------------

    def _listed_existing_anti(self, pod: PodInfo, override: NodeInfo | None
                              ) -> Counter[TopologyPair]:
        """The placed pods' anti-affinity against ``pod`` in a dry run: counted on the
        nodes listed at session open (as the pre-filter counts it), less the dry run's
        victims wherever they ran (kube's ``RemovePod`` subtracts every removed pod's
        terms, so a victim on an unlisted node takes away what was never counted)."""
        listed = self.view.anti_affinity_nodes_at_open
        existing = inter_pod_affinity_counts(pod, self._placed_pods(override, listed)
                                             ).existing_anti
        if override is not None and override.name not in listed:
            node_view = self.view.nodes.get(override.name)
            if node_view is not None:
                victims = [(override.labels, other) for other in node_view.pods.values()
                           if other.uid not in override.tasks]
                existing.subtract(inter_pod_affinity_counts(pod, victims).existing_anti)
        return existing

    def simulate_predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """Inter-pod affinity on a node copy whose tasks a preemption dry run changed,
        then the devices there (the deviceshare plugin's check, when it runs)."""
        if self.pod_affinity_enable:
            state = self._state(task)
            if INTER_POD_AFFINITY not in state.skipped:
                pod = self.view.pod(task)
                override = node if self._dry_run_recounts else None
                counts = inter_pod_affinity_counts(pod, self._placed_pods(override))
                counts.existing_anti = self._listed_existing_anti(pod, override)
                status = inter_pod_affinity_filter(pod, counts, node.labels)
                if status is not None:
                    return FitError(task.namespace, task.name, node.name, [status])
        assert self._ssn is not None
        devices = self._ssn.extra.get(DEVICE_SIMULATE_KEY)
        return None if devices is None else devices(task, node)
