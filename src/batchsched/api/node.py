"""NodeInfo: a node's resources and the tasks on it (seed 000 §4.4).

The figures move with each task as Volcano's ``NodeInfo`` moves them:

================  =================================================
task status        effect of adding it to the node
================  =================================================
Releasing          idle -= req, used += req, releasing += req
Pipelined          pipelined += req (idle and used untouched)
anything else      idle -= req, used += req
================  =================================================

and :meth:`NodeInfo.future_idle` is ``idle + releasing - pipelined``. So
``idle + used == allocatable`` always holds, which
:meth:`NodeInfo.check_invariants` verifies.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from batchsched.api._copying import field_copier
from batchsched.api.ascend import AscendDevices
from batchsched.api.devices import GPU_MILLI, best_fit_devices, device_count, gpu_ask, serves
from batchsched.api.gpushare import GpuShareDevices, memory_asked, number_asked
from batchsched.api.numa import NumaTopology
from batchsched.api.resource import PODS, Resource
from batchsched.api.task import REVOCABLE_ZONE_ANNOTATION, TaskInfo
from batchsched.api.types import NodePhase, TaskStatus
from batchsched.api.vgpu import ASSIGNED_IDS_ANNOTATION, VgpuDevices, group_key
from batchsched.errors import SchedulingError
from batchsched.kube.taints import Taint

__all__ = ["NodeInfo", "NodeUsage", "node_changes"]

#: How many times any node anywhere changed (every NodeInfo mutation counts).
_CHANGES = [0]


def node_changes() -> int:
    """A count that grows whenever any node's tasks or figures change (in any session
    or cache): an answer worked out from nodes stays exact while it has not moved."""
    return _CHANGES[0]


@attrs.frozen
class NodeUsage:
    """A node's measured load (Volcano's ``NodeUsage``, filled from a metrics source).

    ``cpu_avg`` and ``memory_avg`` map a period (``"5m"``, ``"10m"``...) to the average
    use over it, in percent of the node's capacity; ``metrics_time`` is when the
    figures were taken, on the session's clock (None: never). The usage and
    rescheduling plugins read it.
    """

    cpu_avg: dict[str, float] = attrs.field(factory=dict)
    memory_avg: dict[str, float] = attrs.field(factory=dict)
    metrics_time: float | None = None

_RELEASING = TaskStatus.RELEASING
_PIPELINED = TaskStatus.PIPELINED
#: Statuses counted in a figure of their own (besides idle and used, or instead).
_OWN_FIGURE = frozenset({_PIPELINED, _RELEASING})


@attrs.define(eq=False, repr=False)
class NodeInfo:
    """A node in a snapshot or a session.

    The node keeps its own copy of each task (as Volcano does), so that later
    status changes of the caller's task cannot silently change the node's sums:
    a task moves on a node only through :meth:`add_task`, :meth:`remove_task`
    and :meth:`update_task`.
    """

    name: str
    allocatable: Resource
    capacity: Resource
    idle: Resource
    used: Resource = attrs.field(factory=Resource)
    releasing: Resource = attrs.field(factory=Resource)
    pipelined: Resource = attrs.field(factory=Resource)
    labels: dict[str, str] = attrs.field(factory=dict)
    annotations: dict[str, str] = attrs.field(factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    phase: NodePhase = NodePhase.READY
    images: dict[str, int] = attrs.field(factory=dict)
    tasks: dict[str, TaskInfo] = attrs.field(factory=dict)
    on_change: Callable[[NodeInfo], None] | None = None
    #: How many times a task was added, removed or re-accounted here: an object whose
    #: count has not moved holds the same tasks in the same states.
    mutations: int = 0
    #: The free milli of each GPU (:mod:`batchsched.api.devices`); None on a node
    #: without GPUs.
    gpu_free: list[int] | None = None
    #: Measured load (None: no metrics for this node); shared by clones, never changed.
    usage: NodeUsage | None = None
    #: The NUMA topology its exporter reports (:mod:`batchsched.api.numa`; None: not
    #: reported); immutable, so shared by clones.
    numa_topology: NumaTopology | None = None
    #: The vGPUs its device plugin registers (:mod:`batchsched.api.vgpu`) and what
    #: the tasks here hold of them; None on a node without.
    vgpu: VgpuDevices | None = None
    #: Its Ascend cards by chip type (:mod:`batchsched.api.ascend`) and what the tasks
    #: here hold of them; set by a session whose deviceshare plugin schedules vNPUs
    #: (which chip types there are is in its device configuration); None otherwise.
    ascend: dict[str, AscendDevices] | None = None
    #: Its cards of Volcano's GPU sharing (``volcano.sh/gpu-memory`` and
    #: ``volcano.sh/gpu-number`` in its capacity, :mod:`batchsched.api.gpushare`) and
    #: the pods on them; None on a node without.
    gpu_share: GpuShareDevices | None = None

    def __attrs_post_init__(self) -> None:
        if self.gpu_free is None:
            count = device_count(self.allocatable)
            if count:
                self.gpu_free = [GPU_MILLI] * count
        if self.vgpu is None and self.annotations:
            self.vgpu = VgpuDevices.from_node(self.name, self.annotations, self.allocatable)
        if self.gpu_share is None and self.capacity.scalars:
            self.gpu_share = GpuShareDevices.from_node(self.capacity, self.annotations)

    @classmethod
    def create(
        cls,
        name: str,
        allocatable: Resource,
        *,
        capacity: Resource | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        taints: tuple[Taint, ...] = (),
        unschedulable: bool = False,
        ready: bool = True,
        images: dict[str, int] | None = None,
        usage: NodeUsage | None = None,
        numa_topology: NumaTopology | None = None,
    ) -> NodeInfo:
        for field, given in (("allocatable", allocatable), ("capacity", capacity)):
            if given is not None and not isinstance(given, Resource):
                raise TypeError(f"NodeInfo.create({name!r}): {field} must be a Resource "
                                f"(Resource.from_mapping({given!r})), not "
                                f"{type(given).__name__}")
        return cls(
            name=name,
            allocatable=allocatable.clone(),
            capacity=(capacity or allocatable).clone(),
            idle=allocatable.clone(),
            labels=dict(labels or {}),
            annotations=dict(annotations or {}),
            taints=taints,
            unschedulable=unschedulable,
            phase=NodePhase.READY if ready else NodePhase.NOT_READY,
            images=dict(images or {}),
            usage=usage,
            numa_topology=numa_topology,
        )

    @property
    def ready(self) -> bool:
        return self.phase == NodePhase.READY

    @property
    def revocable_zone(self) -> str:
        return self.labels.get(REVOCABLE_ZONE_ANNOTATION, "")

    @property
    def max_task_num(self) -> int:
        """The node's ``pods`` allocatable: how many tasks it may hold."""
        return int(self.allocatable.scalars.get(PODS, 0))

    def future_idle(self) -> Resource:
        """``idle + releasing - pipelined``: what the node will have once releases finish."""
        return self.idle.clone().add(self.releasing).sub_unchecked(self.pipelined)

    # -- tasks ------------------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        """Place a copy of ``task`` here and set ``task.node_name``.

        Raises :class:`~batchsched.errors.SchedulingError` if the task is already
        here or bound to another node; the node is then unchanged.
        """
        if task.node_name and task.node_name != self.name:
            raise SchedulingError(
                f"task {task.uid} is already on node {task.node_name}, not {self.name}"
            )
        if task.uid in self.tasks:
            raise SchedulingError(f"task {task.uid} is already on node {self.name}")
        held = task.clone()
        req = held.resreq
        # As on Volcano's node, a pipelined or releasing task holds no device here (a
        # releasing one keeps the indexes of those its pod still uses).
        if self.gpu_free is not None and held.status not in _OWN_FIGURE:
            task.gpu_devices = held.gpu_devices = self._take_devices(held)
        vgpu = self.vgpu
        # As Volcano's node: a pipelined or releasing task holds no vGPU here.
        if (vgpu is not None and held.status not in _OWN_FIGURE
                and ASSIGNED_IDS_ANNOTATION in held.annotations):
            vgpu.add_task(held.uid, held.annotations,
                          group_key(held.annotations, held.namespace, held.job))
        if self.ascend is not None and held.status not in _OWN_FIGURE:
            for cards in self.ascend.values():
                cards.add_task(held.uid, held.annotations)
        if self.gpu_share is not None and held.status not in _OWN_FIGURE and req.scalars:
            self.gpu_share.add_task(held.uid, req, held.annotations)
        self.mutations += 1
        _CHANGES[0] += 1
        if held.status == _PIPELINED:
            self.pipelined.add(req)
        else:
            self.idle.sub_unchecked(req)
            self.used.add(req)
            if held.status == _RELEASING:
                self.releasing.add(req)
        task.node_name = self.name
        held.node_name = self.name
        self.tasks[task.uid] = held
        if self.on_change is not None:
            self.on_change(self)

    def remove_task(self, task: TaskInfo) -> None:
        """Take the task off the node; a task that is not here is ignored."""
        held = self.tasks.pop(task.uid, None)
        if held is None:
            return
        self.mutations += 1
        _CHANGES[0] += 1
        free = self.gpu_free
        if free is not None and held.gpu_devices and held.status not in _OWN_FIGURE:
            ask = gpu_ask(held.resreq, strict=False)
            if ask is not None:
                for index in held.gpu_devices:
                    free[index] += ask.milli
        vgpu = self.vgpu
        if (vgpu is not None and held.status not in _OWN_FIGURE
                and ASSIGNED_IDS_ANNOTATION in held.annotations):
            vgpu.remove_task(held.uid, held.annotations)
        if self.ascend is not None and held.status not in _OWN_FIGURE:
            for cards in self.ascend.values():
                cards.remove_task(held.uid)
        if (self.gpu_share is not None and held.status not in _OWN_FIGURE
                and held.resreq.scalars and (memory_asked(held.resreq) > 0
                                             or number_asked(held.resreq) > 0)):
            self.gpu_share.remove_task(held.uid, held.annotations)
        req = held.resreq
        if held.status == _PIPELINED:
            self.pipelined.sub_unchecked(req)
        else:
            self.idle.add(req)
            self.used.sub_unchecked(req)
            if held.status == _RELEASING:
                self.releasing.sub_unchecked(req)
        if self.on_change is not None:
            self.on_change(self)

    def update_task(self, task: TaskInfo) -> None:
        """Re-account a task whose status changed (Volcano's remove, then add).

        ``on_change`` is called only if a figure moved: a change that keeps the
        task's accounting (Allocated to Binding, say) usually leaves every figure
        as it was, and watchers need not re-read the node.
        """
        self.mutations += 1
        _CHANGES[0] += 1
        held = self.tasks.get(task.uid)
        if held is not None and held.gpu_devices and not task.gpu_devices:
            task.gpu_devices = held.gpu_devices  # the same devices, whichever copy is given
        if (held is not None and held.status not in _OWN_FIGURE
                and task.status not in _OWN_FIGURE
                and (not task.node_name or task.node_name == self.name)):
            self._reaccount_in_idle_and_used(held, task)
            return
        watcher = self.on_change
        if watcher is None:
            self.remove_task(task)
            self.add_task(task)
            return
        before = self._figures()
        self.on_change = None
        try:
            self.remove_task(task)
            self.add_task(task)
        finally:
            self.on_change = watcher
            if self._figures() != before:
                watcher(self)

    def _reaccount_in_idle_and_used(self, held: TaskInfo, task: TaskInfo) -> None:
        """:meth:`update_task` for a task that stays here, counted in idle and used
        only before and after (Allocated to Binding, say): remove then add, in one step.

        Idle and used get the very float operations of :meth:`remove_task` then
        :meth:`add_task` (``(idle + old) - new`` and ``(used - old) + new``); nothing
        else moves (releasing, pipelined, the number of tasks), so comparing idle and
        used tells the watcher exactly what the general path's comparison would.
        """
        twin = task.clone()
        twin.gpu_devices = task.gpu_devices = held.gpu_devices
        old, new = held.resreq, twin.resreq
        idle, used = self.idle, self.used
        watcher = self.on_change
        before = None if watcher is None else (
            idle.milli_cpu, idle.memory, dict(idle.scalars),
            used.milli_cpu, used.memory, dict(used.scalars))
        idle.add_then_sub(old, new)
        used.sub_then_add(old, new)
        # Taken off and put back: the task goes to the end of the node's tasks.
        uid = task.uid
        del self.tasks[uid]
        task.node_name = twin.node_name = self.name
        self.tasks[uid] = twin
        if watcher is not None and before != (
                idle.milli_cpu, idle.memory, idle.scalars,
                used.milli_cpu, used.memory, used.scalars):
            watcher(self)

    def _figures(self) -> tuple[object, ...]:
        idle, used, releasing, pipelined = self.idle, self.used, self.releasing, self.pipelined
        return (len(self.tasks), idle.milli_cpu, idle.memory, dict(idle.scalars),
                used.milli_cpu, used.memory, dict(used.scalars),
                releasing.milli_cpu, releasing.memory, dict(releasing.scalars),
                pipelined.milli_cpu, pipelined.memory, dict(pipelined.scalars))

    def clone(self) -> NodeInfo:
        # Snapshots copy every changed node: a field-by-field copy, not attrs.evolve
        # (a subclass, whose fields the copier does not know, still gets evolve).
        twin: NodeInfo = (_copy_node_fields(self) if type(self) is NodeInfo
                          else attrs.evolve(self))
        twin.allocatable = self.allocatable.clone()
        twin.capacity = self.capacity.clone()
        twin.idle = self.idle.clone()
        twin.used = self.used.clone()
        twin.releasing = self.releasing.clone()
        twin.pipelined = self.pipelined.clone()
        twin.labels = dict(self.labels)
        twin.annotations = dict(self.annotations)
        twin.images = dict(self.images)
        twin.tasks = {uid: t.clone() for uid, t in self.tasks.items()}
        twin.on_change = None
        twin.gpu_free = None if self.gpu_free is None else list(self.gpu_free)
        twin.vgpu = None if self.vgpu is None else self.vgpu.clone()
        twin.gpu_share = None if self.gpu_share is None else self.gpu_share.clone()
        if self.ascend is not None:
            twin.ascend = {chip: cards.clone() for chip, cards in self.ascend.items()}
        return twin

    def check_invariants(self) -> None:
        """Raise AssertionError unless the figures add up from the tasks."""
        used, releasing, pipelined = Resource(), Resource(), Resource()
        for task in self.tasks.values():
            if task.status == _PIPELINED:
                pipelined.add(task.resreq)
                continue
            used.add(task.resreq)
            if task.status == _RELEASING:
                releasing.add(task.resreq)
        assert used.equal(self.used), f"{self.name}: used {self.used} != {used}"
        assert releasing.equal(self.releasing), f"{self.name}: releasing out of step"
        assert pipelined.equal(self.pipelined), f"{self.name}: pipelined out of step"
        assert (self.idle + self.used).equal(self.allocatable), f"{self.name}: idle+used"
        if self.gpu_free is not None:
            free = [GPU_MILLI] * len(self.gpu_free)
            holders = [task for task in self.tasks.values() if task.status not in _OWN_FIGURE]
            for task in holders:
                ask = gpu_ask(task.resreq, strict=False)
                if ask is not None:
                    assert not ask.whole or all(
                        other is task or index not in other.gpu_devices
                        for index in task.gpu_devices for other in holders
                    ), f"{self.name}: whole GPU of {task.uid} shared"
                    for index in task.gpu_devices:
                        free[index] -= ask.milli
            assert free == self.gpu_free, f"{self.name}: GPU devices {self.gpu_free} != {free}"
            assert all(left >= 0 for left in free), f"{self.name}: a GPU over 1000 milli"
        if self.vgpu is not None:
            self.vgpu.check(self.tasks)
        if self.gpu_share is not None:
            self.gpu_share.check(self.tasks)
        for cards in (self.ascend or {}).values():
            # A pipelined task holds the cards its placement chose, as on Volcano's node.
            cards.check(self.tasks)

    def _take_devices(self, held: TaskInfo) -> tuple[int, ...]:
        """Charge the devices of a task being added (those it names when they serve
        it, else the default choice); none when it asks no GPU or none serves it
        (a running pod the devices cannot account for keeps only the aggregate)."""
        free = self.gpu_free
        ask = gpu_ask(held.resreq, strict=False)
        if free is None or ask is None:
            return ()
        chosen: tuple[int, ...] | None = held.gpu_devices
        if not chosen or not serves(free, chosen, ask):
            chosen = best_fit_devices(free, ask)
        if chosen is None:
            return ()
        for index in chosen:
            free[index] -= ask.milli
        return chosen

    def __repr__(self) -> str:
        return f"<Node {self.name} idle={self.idle} tasks={len(self.tasks)}>"


_copy_node_fields = field_copier(NodeInfo)
