"""TaskInfo: one pod as the scheduler sees it (seed 000 §4.5)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from batchsched.api._copying import field_copier
from batchsched.api.resource import PODS, Resource
from batchsched.api.types import NO_LABELS, TaskStatus
from batchsched.kube.dra.objects import AllocationResult, PodClaim
from batchsched.kube.go_strconv import parse_int
from batchsched.kube.host_ports import HostPort
from batchsched.kube.taints import Taint, Toleration
from batchsched.kube.topology_spread import SpreadConstraint

__all__ = [
    "PREEMPTABLE_ANNOTATION",
    "QUEUE_ALLOCATION_GATE",
    "REVOCABLE_ZONE_ANNOTATION",
    "TASK_PRIORITY_ANNOTATION",
    "TASK_SPEC_KEY",
    "Taint",
    "TaskInfo",
    "Toleration",
    "TransactionContext",
    "parse_bool",
    "revocable_zone_of",
    "same_creation_time",
    "same_pod",
    "task_spec_of",
]

PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
REVOCABLE_ZONE_ANNOTATION = "volcano.sh/revocable-zone"
#: Overrides the pod's priority (Volcano's ``TaskPriorityAnnotation``).
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
#: Volcano's own scheduling gate, held until the pod's queue has room (its
#: ``SchedulingGatesQueueAdmission`` feature, off by default).
QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"
#: The annotation (or, failing it, label) naming a pod's task spec: its role in the
#: job (Volcano's ``batch.TaskSpecKey``).
TASK_SPEC_KEY = "volcano.sh/task-spec"
PREEMPTION_POLICY_NEVER = "Never"


def parse_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``: None for anything it would reject."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


@attrs.frozen
class TransactionContext:
    """Where a task was and in which status, before a statement changed it, and
    whether it was pipelined there after evictions (Volcano keeps it with the
    transaction, and nominates the node from it)."""

    node_name: str
    status: TaskStatus
    eviction_occurred: bool = False


@attrs.define(eq=False, repr=False)
class TaskInfo:
    """A task (pod) in a snapshot or a session.

    ``uid`` is ``namespace/name`` and keys every index. ``order_uid`` is the id
    Volcano's last-resort orderings compare (``namespace-name``, the pod uid of
    Volcano's tests). ``resreq`` is what the task holds on a node; ``init_resreq``
    is what it needs to start (the larger of its requests and init requests), and
    is what fit checks use. Both include the implicit ``pods: 1``.

    ``revocable_zone`` is ``"*"`` when the task may run on revocable nodes and
    ``""`` otherwise (:func:`revocable_zone_of`, derived once by :meth:`create`).
    ``eviction_occurred`` is set when the task is pipelined onto a node where
    evictions were made for it (Volcano keeps it for the nominated node of a
    preemptor); nothing in batchsched reads it yet, and a discard does not reset it.
    """

    uid: str
    name: str
    namespace: str
    job: str
    resreq: Resource
    init_resreq: Resource
    status: TaskStatus = TaskStatus.PENDING
    node_name: str = ""
    priority: int = 1
    preemptable: bool = True
    best_effort: bool = False
    role: str = ""
    order_uid: str = ""
    labels: Mapping[str, str] = NO_LABELS
    annotations: Mapping[str, str] = NO_LABELS
    node_selector: Mapping[str, str] = NO_LABELS
    #: What the pod's app containers ask, without the implicit ``pods``, when init
    #: containers ask more than they do (``resreq`` is then the init containers'
    #: figure); None when ``resreq`` says it. Read by what looks at the containers
    #: themselves (numa-aware's exclusive CPUs).
    container_requests: Resource | None = None
    #: What kube-scheduler's LeastAllocated and MostAllocated scores count for the pod
    #: (milli-cpu, bytes of memory), when known from its containers: each app or init
    #: container that asks no cpu (memory) counts 100m (200Mi) before the app
    #: containers are summed and the init containers' largest figure taken. None:
    #: worked out from ``resreq`` (a pod asking no cpu counts 100m, and so on).
    nonzero_request: tuple[int, int] | None = None
    #: The pod carries Kubernetes' ``DisruptionTarget`` condition with reason
    #: ``PreemptionByScheduler``, which Volcano's evictor writes on every pod it
    #: evicts: a terminating one keeps a nominated preemptor from preempting again.
    preempted_by_scheduler: bool = False
    #: The pod has a deletion timestamp (a scenario's ``deleting``). A Running or
    #: Pending one is Releasing; one of another phase (Unknown) keeps its status, as
    #: in Volcano, but topology spread leaves it out and preempt sees it terminating.
    deleting: bool = False
    affinity: Mapping[str, Any] | None = None
    #: ``(affinity, labels, what kube read from them)``: the parsed affinity
    #: (:func:`batchsched.kube.pod_view.task_affinity`), kept while the task holds the
    #: same document and labels objects (a copy shares them). None: not read yet.
    affinity_read: tuple[Any, Mapping[str, str], Any] | None = attrs.field(
        default=None, init=False)
    #: The pod's ``topologySpreadConstraints``, parsed
    #: (:mod:`batchsched.kube.topology_spread`); () for none.
    topology_spread: tuple[SpreadConstraint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    #: Host ports its containers take: a number is TCP on every address, a
    #: :class:`~batchsched.kube.host_ports.HostPort` names protocol and address.
    host_ports: tuple[int | HostPort, ...] = ()
    images: tuple[str, ...] = ()
    #: The pod's ``spec.schedulingGates`` by name: while it has any, no action places
    #: it (Volcano's ``SchGated``).
    scheduling_gates: tuple[str, ...] = ()
    priority_class_name: str = ""
    #: The pod's own priority (``spec.priority``) when a ``volcano.sh/task-priority``
    #: annotation overrode it in ``priority``; None: ``priority`` is the pod's. Only
    #: Volcano's task orders read the annotation: see :attr:`pod_priority`.
    spec_priority: int | None = None
    preemption_policy: str = "PreemptLowerPriority"
    creation_time: float = 0.0
    revocable_zone: str = ""
    last_transaction: TransactionContext | None = None
    eviction_occurred: bool = False
    #: The hypernode the task's job lies within as the allocate action places this
    #: task (Volcano's ``JobAllocatedHyperNode``, read by network-topology-aware's
    #: node scores); reset when the placement is undone.
    job_allocated_hyper_node: str = ""
    #: When the task's pod started running (seconds since the epoch; None: not known).
    start_time: float | None = None
    #: The indexes of the node's GPUs the task holds (:mod:`batchsched.api.devices`).
    gpu_devices: tuple[int, ...] = ()
    #: The node a preemption evicted victims on for this pending task (kube's
    #: ``status.nominatedNodeName``): its freed room is kept for it (and for tasks of
    #: equal or higher priority) while it is pending.
    nominated_node: str = ""
    #: The pod's ``PodScheduled: False`` condition as the last session wrote it, as
    #: (reason, message); None: none written. A session records a ``FailedScheduling``
    #: event only when it writes a different one (Volcano's ``taskUnschedulable``).
    scheduling_condition: tuple[str, str] | None = None
    #: The pod's ``spec.schedulerName`` ("" reads as ``default-scheduler``): which
    #: kube-style profile schedules it (:mod:`batchsched.kubesched`).
    scheduler_name: str = ""
    #: The pod's ``spec.resourceClaims``, the devices it asks for through Dynamic
    #: Resource Allocation (:mod:`batchsched.kube.dra`); () for none.
    resource_claims: tuple[PodClaim, ...] = ()
    #: The claims a session allocated for the task (by ``namespace/name``), until the
    #: bind writes them to the cluster (the DRA plugin's Reserve and PreBind); None
    #: when it allocated none.
    claim_allocations: Mapping[str, AllocationResult] | None = None

    @classmethod
    def create(
        cls,
        namespace: str,
        name: str,
        job: str,
        requests: Resource | None = None,
        *,
        init_requests: Resource | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> TaskInfo:
        """Build a task as Volcano's ``NewTaskInfo`` does from a pod.

        ``requests`` are the containers' requests; ``init_requests`` those of the
        init containers. The implicit ``pods: 1`` is added, ``best_effort`` and
        ``preemptable`` (from the ``volcano.sh/preemptable`` annotation, then label,
        default true) and ``revocable_zone`` are derived unless given; a
        ``volcano.sh/task-priority`` annotation holding an integer overrides
        ``priority``, as in Volcano.
        """
        for field, given in (("requests", requests), ("init_requests", init_requests)):
            if given is not None and not isinstance(given, Resource):
                raise TypeError(f"TaskInfo.create({namespace!r}, {name!r}): {field} must be a "
                                f"Resource (Resource.from_mapping({given!r})), not "
                                f"{type(given).__name__}")
        req = requests.clone() if requests is not None else Resource()
        if init_requests is not None:
            app = req.clone()
            req.set_max(init_requests)
            if req != app:  # the init containers ask more somewhere
                fields.setdefault("container_requests", app)
        req.scalars[PODS] = 1.0
        own_labels = dict(labels) if labels else NO_LABELS
        own_annotations = dict(annotations) if annotations else NO_LABELS
        if "best_effort" not in fields:
            fields["best_effort"] = req.is_empty()
        # Without labels and annotations, the derived values are the fields' defaults
        # (preemptable, no revocable zone): most tasks of a large cluster skip this.
        if own_labels or own_annotations:
            if "preemptable" not in fields:
                fields["preemptable"] = _preemptable(own_annotations, own_labels)
            if "revocable_zone" not in fields:
                fields["revocable_zone"] = revocable_zone_of(own_annotations)
            written = own_annotations.get(TASK_PRIORITY_ANNOTATION)
            if written is not None:
                # It overrides the pod's priority, when Go's ParseInt(.., 10, 32) reads it.
                priority, ok = parse_int(written, 32)
                if ok:
                    fields.setdefault("spec_priority", fields.get("priority", 1))
                    fields["priority"] = priority
        if "order_uid" not in fields:
            fields["order_uid"] = f"{namespace}-{name}"
        return cls(
            uid=f"{namespace}/{name}",
            name=name,
            namespace=namespace,
            job=job,
            resreq=req,
            # Both are the same vector here, and requests are read-only once built
            # (see clone): one object serves both.
            init_resreq=req,
            labels=own_labels,
            annotations=own_annotations,
            **fields,
        )

    def clone(self) -> TaskInfo:
        """A copy that owns its status and node; the rest is shared.

        A task's requests (``resreq``, ``init_resreq``) are read-only once the task
        is built (nothing in batchsched changes them in place), so the copy shares
        them: snapshots copy every task, and the requests were most of that cost.
        """
        # Nodes copy every task they take, so this is hot: a generated field-by-field
        # copy is an order of magnitude faster than attrs.evolve (same result).
        return _copy_fields(self) if type(self) is TaskInfo else attrs.evolve(self)

    @property
    def transaction(self) -> TransactionContext:
        return TransactionContext(self.node_name, self.status, self.eviction_occurred)

    def generate_last_transaction(self) -> None:
        self.last_transaction = self.transaction

    def clear_last_transaction(self) -> None:
        self.last_transaction = None

    @property
    def app_requests(self) -> Resource:
        """What the pod's app containers ask (``container_requests`` when the init
        containers ask more, else ``resreq``): what Volcano's device plugins read off
        ``pod.Spec.Containers``."""
        return self.container_requests if self.container_requests is not None else self.resreq

    @property
    def pod_priority(self) -> int:
        """The pod's priority as Kubernetes knows it (``spec.priority``), where
        ``priority`` is Volcano's task priority, which a ``volcano.sh/task-priority``
        annotation overrides. kube-scheduler's queue and Volcano's rescheduling
        (which sorts the pods of a node) read this one."""
        return self.priority if self.spec_priority is None else self.spec_priority

    @property
    def never_preempts(self) -> bool:
        """``preemptionPolicy: Never``: the task may not evict anyone."""
        return self.preemption_policy == PREEMPTION_POLICY_NEVER

    @property
    def scheduling_gated(self) -> bool:
        """Whether the pod has scheduling gates (Volcano's ``SchGated``)."""
        return bool(self.scheduling_gates)

    @property
    def externally_gated(self) -> bool:
        """Gated by some gate besides Volcano's queue allocation gate: allocate leaves
        the task out of its job's worksheet, where one gated only by Volcano's gate is
        taken on and passed over (Volcano's ``HasOnlyVolcanoSchedulingGate``)."""
        return bool(self.scheduling_gates) and self.scheduling_gates != (QUEUE_ALLOCATION_GATE,)

    def __repr__(self) -> str:
        node = f" on {self.node_name}" if self.node_name else ""
        return f"<Task {self.uid} {self.status}{node}>"


def same_creation_time(one: float, other: float) -> bool:
    """Whether two creation times are one: a pod of a name deleted and created again
    has another. NaN (an unknown creation time) is no other time than NaN."""
    return one == other or (math.isnan(one) and math.isnan(other))


def same_pod(one: TaskInfo, other: TaskInfo) -> bool:
    """Whether two objects of one pod name are the same pod, not one deleted and created
    again: the same creation time (an unknown one, NaN, is no other) and pod uid."""
    return one.order_uid == other.order_uid and same_creation_time(one.creation_time,
                                                                   other.creation_time)


def revocable_zone_of(annotations: Mapping[str, str]) -> str:
    """``"*"`` when a pod with these annotations may use revocable nodes, else ``""``
    (Volcano's ``GetPodRevocableZone``): the ``volcano.sh/revocable-zone``
    annotation when present (only ``"*"`` counts; a zone name means no), else
    ``volcano.sh/preemptable`` true.

    >>> revocable_zone_of({"volcano.sh/preemptable": "true"}), revocable_zone_of({})
    ('*', '')
    """
    if REVOCABLE_ZONE_ANNOTATION in annotations:
        return "*" if annotations[REVOCABLE_ZONE_ANNOTATION] == "*" else ""
    if parse_bool(annotations.get(PREEMPTABLE_ANNOTATION, "")):
        return "*"
    return ""


def task_spec_of(annotations: Mapping[str, str], labels: Mapping[str, str]) -> str:
    """A pod's task spec name, its role (Volcano's ``getTaskRole``): the
    ``volcano.sh/task-spec`` annotation unless missing or empty, else the label of
    that name (Volcano's job controller writes both), else ``""``.

    >>> task_spec_of({}, {"volcano.sh/task-spec": "worker"})
    'worker'
    >>> task_spec_of({"volcano.sh/task-spec": ""}, {"volcano.sh/task-spec": "ps"})
    'ps'
    """
    return annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY) or ""


_copy_fields = field_copier(TaskInfo)


def _preemptable(annotations: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    for source in (annotations, labels):
        if PREEMPTABLE_ANNOTATION in source:
            parsed = parse_bool(source[PREEMPTABLE_ANNOTATION])
            return bool(parsed)
    return True
