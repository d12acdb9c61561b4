"""deviceshare: GPUs shared device by device (Volcano's ``plugins/deviceshare``).

With ``deviceshare.GPUSharingEnable: true`` (or ``deviceshare.GPUNumberEnable:
true``, Volcano's whole-GPU mode, deprecated there since v1.9) a task asking
``volcano.sh/gpu-memory`` (or ``volcano.sh/gpu-number``) is served by the node's cards
as Volcano's gpushare device serves it (:mod:`.gpushare`); then, batchsched's model on
top of it, a task's ``nvidia.com/gpu`` request is served by the node's GPUs one by one
(:mod:`batchsched.api.devices`): whole GPUs (a multiple of ``1``) need that many
entirely free devices; a share (less than ``1``, e.g. ``460m``) needs one device
with that much free. The
predicate refuses a node that cannot serve the task, with the reason; a request
no device can serve (``1500m``) is refused on every node, naming the task and
field. Which devices a placed task gets is the device-select point: a GPU
placement policy (``gpu-*``, ``fgd``) names them, else the node's best fit.

Volcano leaves ``nvidia.com/gpu`` to the resource check; batchsched also shares it
in milli, as the Alibaba GPU trace and the FGD paper do (both switches turn on the
same device-by-device accounting of it).

With ``deviceshare.VGPUEnable: true`` the plugin schedules Volcano's vGPUs
(``volcano.sh/vgpu-*``, :mod:`batchsched.api.vgpu`) as Volcano does: the predicate
asks the node's GPUs for the task's devices, ``deviceshare.SchedulePolicy``
(``binpack`` or ``spread``) orders the GPUs and scores the node, weighted by
``deviceshare.ScheduleWeight``; a statement placing the task reserves the devices
and writes them in its ``volcano.sh/vgpu-ids-new`` annotation, and undoing the
placement gives them back. The request names come from the device configuration in
the ConfigMap ``deviceshare.KnownGeometriesCMName`` / ``KnownGeometriesCMNamespace``
name (:mod:`batchsched.api.device_config`), and ``deviceshare.GPUExclusiveRules``
keeps the pods of a rule on GPUs of their own.

With ``deviceshare.AscendHAMiVNPUEnable: true`` it schedules HAMi's Ascend vNPUs
(:mod:`batchsched.api.ascend`, :mod:`.ascend`) the same way, with the chip types of
the device configuration's ``vnpus`` section, the policy and the weight.

With ``deviceshare.NodeLockEnable: true`` placing a pod that asks vGPUs, vNPUs or (in
GPU sharing mode) a GPU takes the node's lock of that kind, as Volcano's ``Allocate``
does (:mod:`.locking`, :mod:`batchsched.api.node_lock`): a node whose lock was taken
within five minutes refuses the placement.

MindCluster's vNPUs (``deviceshare.AscendMindClusterVNPUEnable``) and, without vGPUs
or vNPUs, the policy, weight and ConfigMap (and without vGPUs the exclusivity rules)
are accepted and reported as having no effect; other arguments are reported as not
read.

The predicate has a column form over every node (:class:`GpuColumns`), equal
node for node. It also answers the **simulate predicate** of topology-aware
preemption, on the node copy from which the dry run removed its victims (whose
devices are then free), as Volcano's predicates plugin checks devices there: the
predicates plugin's simulate predicate runs it, so only with predicates configured
and its predicates enabled (without it, Volcano's dry run checks no device).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping

import attrs
import numpy as np

from batchsched import columnar
from batchsched.api.device_config import (
    DEFAULT_CONFIG_MAP_NAME,
    DEFAULT_CONFIG_MAP_NAMESPACE,
    DeviceConfig,
    read_device_config,
)
from batchsched.api.devices import DEVICE_SIMULATE_KEY, GpuAsk, fits_devices, gpu_ask
from batchsched.api.fit import FitError
from batchsched.api.gpushare import memory_asked
from batchsched.api.node import NodeInfo
from batchsched.api.node_lock import GPU_SHARE_LOCK, VGPU_LOCK
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus
from batchsched.api.vgpu import (
    ASSIGNED_IDS_ANNOTATION,
    ASSIGNED_IDS_TO_ALLOCATE_ANNOTATION,
    ASSIGNED_NODE_ANNOTATION,
    ASSIGNED_TIME_ANNOTATION,
    BIND_PHASE_ANNOTATION,
    BIND_TIME_ANNOTATION,
    BINPACK,
    DEFAULT_NAMES,
    SPREAD,
    DeviceRequest,
    VgpuFit,
    VgpuResourceNames,
    container_requests,
    decode_pod_devices,
    drop_device_annotations,
    encode_pod_devices,
    group_key,
    requests_vgpu,
)
from batchsched.columnar import VectorFallback
from batchsched.columnar.gpu_columns import GpuColumns
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray, NodeColumns
from batchsched.columnar.vgpu_columns import VgpuColumns, vector_answerable, vgpu_fit_rows
from batchsched.errors import ConfigError, SchedulingError
from batchsched.framework.arguments import Arguments, log, warn_unreadable, warned_once
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.plugins.deviceshare.ascend import AscendSession
from batchsched.plugins.deviceshare.gpushare import GpuShareSession
from batchsched.plugins.deviceshare.locking import PLACED_NOW, lock_node

__all__ = ["DeviceSharePlugin", "device_fit_error", "exclusive_gpus", "matching_rules",
           "parse_exclusive_rules", "vgpu_fit"]

PLUGIN_NAME = "deviceshare"
SHARING_KEY = "deviceshare.GPUSharingEnable"
NUMBER_KEY = "deviceshare.GPUNumberEnable"
VGPU_KEY = "deviceshare.VGPUEnable"
ASCEND_KEY = "deviceshare.AscendHAMiVNPUEnable"
POLICY_KEY = "deviceshare.SchedulePolicy"
WEIGHT_KEY = "deviceshare.ScheduleWeight"
EXCLUSIVE_RULES_KEY = "deviceshare.GPUExclusiveRules"
CM_NAME_KEY = "deviceshare.KnownGeometriesCMName"
CM_NAMESPACE_KEY = "deviceshare.KnownGeometriesCMNamespace"
NODE_LOCK_KEY = "deviceshare.NodeLockEnable"
_DEVICE_CONFIG_MAP = ("the device configuration it names is read for vGPUs "
                      "(deviceshare.VGPUEnable) only")
#: Volcano's reason for a node whose vGPUs cannot serve the task.
VGPU_REASON = "hami-vgpuDeviceSharing error"
_INERT = {
    "deviceshare.AscendMindClusterVNPUEnable": "MindCluster's Ascend vNPUs are not modelled "
                                               "(HAMi's are: deviceshare.AscendHAMiVNPUEnable)",
}
#: Without vGPUs, the policy, the weight and the device configuration act on nothing.
_INERT_WITHOUT_VGPU = {
    EXCLUSIVE_RULES_KEY: "it keeps vGPUs (deviceshare.VGPUEnable) apart",
    CM_NAME_KEY: _DEVICE_CONFIG_MAP,
    CM_NAMESPACE_KEY: _DEVICE_CONFIG_MAP,
    POLICY_KEY: "it orders vGPUs (deviceshare.VGPUEnable); for nvidia.com/gpu use a GPU "
                "placement policy plugin (gpu-*, fgd)",
    WEIGHT_KEY: "it weighs the vGPU score (deviceshare.VGPUEnable); for nvidia.com/gpu use "
                "a GPU placement policy plugin (gpu-*, fgd)",
}


def device_fit_error(task: TaskInfo, node: NodeInfo) -> FitError | None:
    """Why the node's GPUs cannot serve the task, or None when they can (or the
    task asks no GPU, or the node counts its GPUs in aggregate only)."""
    try:
        ask = gpu_ask(task.resreq, owner=task.uid)
    except SchedulingError as exc:
        return FitError.of(task.namespace, task.name, node.name, str(exc),
                           code=FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE, plugin=PLUGIN_NAME)
    free = node.gpu_free
    if ask is None or free is None or fits_devices(free, ask):
        return None
    return FitError.of(task.namespace, task.name, node.name, _shortage(ask),
                       code=FitStatusCode.UNSCHEDULABLE, plugin=PLUGIN_NAME)


def vgpu_fit(task: TaskInfo, node: NodeInfo, policy: str, *, reserve: bool = False,
             names: VgpuResourceNames = DEFAULT_NAMES,
             exclude: frozenset[int] = frozenset()) -> VgpuFit:
    """Whether the node's vGPUs serve the task, which and with what score (fits with
    no devices when the task asks none or the node has no vGPUs, as in Volcano);
    the GPUs of ``exclude`` are passed over."""
    devices = node.vgpu
    # Volcano reads vGPU requests off the app containers only (checkVGPUResourcesInPod).
    if devices is None or not requests_vgpu(task.app_requests, names):
        return VgpuFit(True)
    return devices.fit(task.uid, task.annotations, container_requests(task.app_requests, names),
                       group_key(task.annotations, task.namespace, task.job), policy,
                       reserve=reserve, exclude=exclude)


def parse_exclusive_rules(raw: object) -> tuple[Mapping[str, str], ...]:
    """``deviceshare.GPUExclusiveRules`` as Volcano reads it: a list of label maps
    (values that are not strings dropped, empty maps skipped); anything else is no
    rule."""
    if not isinstance(raw, list):
        return ()
    rules = []
    for item in raw:
        if isinstance(item, Mapping):
            labels = {key: value for key, value in item.items()
                      if isinstance(key, str) and isinstance(value, str)}
            if labels:
                rules.append(labels)
    return tuple(rules)


def matching_rules(labels: Mapping[str, str], rules: tuple[Mapping[str, str], ...]
                   ) -> frozenset[int]:
    """The rules whose every label the task carries with the same value."""
    return frozenset(index for index, rule in enumerate(rules)
                     if all(labels.get(key) == value for key, value in rule.items()))


def exclusive_gpus(task: TaskInfo, node: NodeInfo, rules: tuple[Mapping[str, str], ...],
                   releasing_at_open: Container[str] | None = None,
                   untracked: Container[int] = ()) -> frozenset[int]:
    """The node's GPUs a task matching exclusivity rules may not use: those that other
    pods matching one of the same rules hold (by the ledger, or by their device
    annotation, as a pod being deleted still does). Pods matching different rules,
    or none, still share GPUs.

    With ``releasing_at_open`` (the tasks releasing when the session opened), a pod
    the session itself evicted reserves nothing any more: Volcano's eviction takes it
    off the ledger and out of the rule's reservations, and only reads the annotations
    of pods that were releasing at session open. ``untracked`` names the rules a pod
    of which left the node in the session: Volcano's ``untrackPod`` then drops from
    the rule every GPU no pod on the ledger holds, so a releasing pod's annotation
    no longer reserves for that rule."""
    mine = matching_rules(task.labels, rules)
    devices = node.vgpu
    if not mine or devices is None:
        return frozenset()
    index_of = {device.uuid: index for index, device in devices.devices.items()}
    taken: set[int] = set()
    for uid, other in node.tasks.items():
        if uid == task.uid or not matching_rules(other.labels, rules) & mine:
            continue
        if releasing_at_open is not None and other.status is TaskStatus.RELEASING:
            if uid not in releasing_at_open:
                continue
            if untracked and not any(rule not in untracked for rule in
                                     matching_rules(other.labels, rules) & mine):
                continue  # its annotation reserved only for rules untracked since
        taken.update(index for index, device in devices.devices.items() if uid in device.pods)
        for containers in decode_pod_devices(other.annotations.get(ASSIGNED_IDS_ANNOTATION, "")):
            taken.update(index_of[used.uuid] for used in containers if used.uuid in index_of)
    return frozenset(taken)


def _shortage(ask: GpuAsk) -> str:
    if ask.whole:
        return f"fewer than {ask.count} entirely free GPU(s)"
    return f"no GPU with {ask.milli}m free"


class DeviceSharePlugin:
    """Volcano's deviceshare plugin: GPU sharing and vGPUs (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        sharing = arguments.get_bool(SHARING_KEY, False, owner=PLUGIN_NAME)
        number = arguments.get_bool(NUMBER_KEY, False, owner=PLUGIN_NAME)
        self.vgpu = arguments.get_bool(VGPU_KEY, False, owner=PLUGIN_NAME)
        self.ascend = arguments.get_bool(ASCEND_KEY, False, owner=PLUGIN_NAME)
        # Volcano's scheduler refuses to start on either pair.
        if sharing and number:
            raise ConfigError(f"{SHARING_KEY} and {NUMBER_KEY} cannot both be true",
                              key=f"{PLUGIN_NAME}.arguments")
        if (sharing or number) and self.vgpu:
            raise ConfigError(f"GPU sharing ({SHARING_KEY}, {NUMBER_KEY}) and {VGPU_KEY} "
                              "cannot be used together", key=f"{PLUGIN_NAME}.arguments")
        self.sharing = sharing or number
        self.number_mode = number
        # Volcano's GPU sharing mode locks the node for a pod it places; its number
        # mode only for a pod that asks volcano.sh/gpu-memory too (gpushare's Allocate).
        self.sharing_locks = sharing
        self.node_lock = arguments.get_bool(NODE_LOCK_KEY, False, owner=PLUGIN_NAME)
        self.policy = arguments.get_str(POLICY_KEY, "", owner=PLUGIN_NAME)
        if (self.vgpu or self.ascend) and self.policy not in (BINPACK, SPREAD, ""):
            # Volcano takes any other value as no policy (highest index first, no score).
            warn_unreadable(PLUGIN_NAME, POLICY_KEY, self.policy, "binpack or spread", "")
            self.policy = ""
        self.weight = arguments.get_int(WEIGHT_KEY, 0, owner=PLUGIN_NAME)
        self.config_map_name = arguments.get_str(CM_NAME_KEY, DEFAULT_CONFIG_MAP_NAME,
                                                 owner=PLUGIN_NAME)
        self.config_map_namespace = arguments.get_str(
            CM_NAMESPACE_KEY, DEFAULT_CONFIG_MAP_NAMESPACE, owner=PLUGIN_NAME)
        inert = dict(_INERT)
        if not (self.vgpu or self.ascend or self.sharing):
            inert[NODE_LOCK_KEY] = ("it locks nodes for vGPUs, Ascend vNPUs or GPU sharing "
                                    f"({SHARING_KEY}, or {NUMBER_KEY} for a pod asking "
                                    "volcano.sh/gpu-memory too)")
        if not self.vgpu:
            inert.update(_INERT_WITHOUT_VGPU if not self.ascend
                         else {EXCLUSIVE_RULES_KEY: _INERT_WITHOUT_VGPU[EXCLUSIVE_RULES_KEY]})
        arguments.warn_inert(PLUGIN_NAME, inert)
        self.exclusive_rules = parse_exclusive_rules(arguments.get(EXCLUSIVE_RULES_KEY))
        arguments.warn_unknown(PLUGIN_NAME, [SHARING_KEY, NUMBER_KEY, VGPU_KEY, POLICY_KEY,
                                             WEIGHT_KEY, CM_NAME_KEY, CM_NAMESPACE_KEY,
                                             EXCLUSIVE_RULES_KEY, ASCEND_KEY, NODE_LOCK_KEY,
                                             *_INERT])
        self._ascend: AscendSession | None = None

    def hidden_resources(self, ssn: Session) -> frozenset[str]:
        """With vNPUs, the memory and core resources of the chip types some node
        registers: their cards account for them (see :mod:`.ascend`)."""
        if not self.ascend:
            return frozenset()
        config = self._device_config(ssn)
        self._ascend = AscendSession(self.name, config.vnpus.chips, config.vnpus.hami_core,
                                     self.policy, self.weight, node_lock=self.node_lock)
        return self._ascend.prepare(ssn)

    def on_session_open(self, ssn: Session) -> None:
        # Volcano's one predicate asks every device kind in turn (GPU sharing, vGPUs,
        # each Ascend chip type), and its node score sums theirs.
        kinds: list[_DeviceKind] = []
        # Each kind's Allocate and Release, in Volcano's order of the kinds.
        events: list[EventHandler] = []
        if self.sharing:
            if any(node.gpu_share is not None for node in ssn.node_list):
                kinds.append(self._open_gpushare(ssn, events))
            kinds.append(_DeviceKind(
                device_fit_error,
                # The dry run of topology-aware preemption asks it on a node copy its
                # victims left, whose freed devices count (Volcano's predicates checks
                # devices there).
                device_fit_error,
                lambda task, columns: self.fits_all(ssn, task, columns),
                lambda task, columns: self.preempt_fits_all(ssn, task, columns)))
            if self.node_lock and self.sharing_locks and _takes_devices(ssn):
                events.append(EventHandler(
                    allocate=lambda event: self.lock_for_shared_gpu(ssn, event),
                    plugin=self.name))
        if self.vgpu:
            kinds.append(self._open_vgpu(ssn, events))
        if self.ascend:
            kinds.append(self._open_ascend(ssn, events))
        if kinds:
            _register_kinds(ssn, self.name, kinds, self.weight)
        if events:
            ssn.add_event_handler(_one_handler(self.name, events))

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to write back; for ``batchsched explain``, why no node's Ascend cards
        served a watched task."""
        if self._ascend is not None and self._ascend.ssn is ssn:
            self._ascend.note_pending(ssn)

    def fits_all(self, ssn: Session, task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        """:func:`device_fit_error` is None, over every node of the session."""
        try:
            ask = gpu_ask(task.resreq, owner=task.uid)
        except SchedulingError:
            return np.zeros(len(ssn.node_list), dtype=np.bool_)
        if ask is None:
            return None
        gpus = GpuColumns.of(ssn)
        fits: BoolArray = np.asarray(gpus.whole_free() >= ask.count if ask.whole
                                     else (gpus.free >= ask.milli).any(axis=1))
        # A node counting its GPUs in aggregate only passes, as in the scalar form.
        passes: BoolArray = fits | (gpus.device_count == 0)
        return passes

    def lock_for_shared_gpu(self, ssn: Session, event: Event) -> None:
        """A statement placed a task asking a share of a GPU in sharing mode (or undid
        its eviction): take the node's lock (Volcano's GPU sharing ``Allocate``)."""
        task = event.task
        node = ssn.nodes.get(task.node_name)
        if node is None or node.gpu_free is None or task.uid not in node.tasks:
            return
        if node.gpu_share is not None and memory_asked(task.resreq) > 0:
            return  # Volcano's gpushare Allocate takes the node's lock for this pod

        try:
            ask = gpu_ask(task.resreq, owner=task.uid)
        except SchedulingError:
            return  # no device can serve it: the predicate refused it already
        if ask is None or ask.whole:
            # Whole GPUs are Volcano's resource check alone (its gpushare reads only
            # volcano.sh/gpu-memory and gpu-number): no device Allocate, no lock.
            return
        lock_node(ssn, task, node, GPU_SHARE_LOCK,
                  refusal=f"node {node.name} locked for lockname gpushare")

    def preempt_fits_all(self, ssn: Session, task: TaskInfo, columns: NodeColumns
                         ) -> tuple[BoolArray, BoolArray] | None:
        """:meth:`fits_all` as preempt reads it: (fits, evicting may make it fit); a
        request no device can serve fails everywhere, unresolvably."""
        try:
            gpu_ask(task.resreq, owner=task.uid)
        except SchedulingError:
            nowhere = np.zeros(len(ssn.node_list), dtype=np.bool_)
            return nowhere, nowhere
        passes = self.fits_all(ssn, task, columns)
        return None if passes is None else (passes, ~passes)

    def _open_gpushare(self, ssn: Session, events: list[EventHandler]) -> _DeviceKind:
        """Volcano's GPU sharing of ``volcano.sh/gpu-memory`` and ``volcano.sh/gpu-number``
        (:mod:`.gpushare`); batchsched's ``nvidia.com/gpu`` shares come after it."""
        cards = GpuShareSession(ssn, self.name, sharing=not self.number_mode,
                                number=self.number_mode, node_lock=self.node_lock)
        if _takes_devices(ssn):
            events.append(EventHandler(allocate=cards.reserve, deallocate=cards.release,
                                       plugin=self.name))
        # Topology-aware preemption asks the predicate on the node copy its victims left.
        return _DeviceKind(cards.predicate, cards.predicate, cards.column,
                           cards.preempt_column)

    # -- vGPUs ---------------------------------------------------------------------------

    def _device_config(self, ssn: Session) -> DeviceConfig:
        config, problem = read_device_config(ssn.config_maps, self.config_map_namespace,
                                             self.config_map_name)
        if problem is not None and problem not in _REPORTED:
            _REPORTED.add(problem)
            log.warning("plugin %r: %s; using Volcano's default device configuration",
                        PLUGIN_NAME, problem)
        return config

    def _open_ascend(self, ssn: Session, events: list[EventHandler]) -> _DeviceKind:
        vnpus = self._ascend
        if vnpus is None or vnpus.ssn is not ssn:
            # Opened without the session asking what to hide first (a host building a
            # session by hand): the ledgers are still made, nothing is hidden.
            self.hidden_resources(ssn)
            vnpus = self._ascend
        assert vnpus is not None
        if _takes_devices(ssn):
            events.append(EventHandler(allocate=vnpus.reserve, deallocate=vnpus.release,
                                       plugin=self.name))
        return _DeviceKind(vnpus.predicate, vnpus.simulate_predicate, vnpus.column,
                           vnpus.preempt_column, vnpus.score, vnpus.column_score)

    def _open_vgpu(self, ssn: Session, events: list[EventHandler]) -> _DeviceKind:
        config = self._device_config(ssn)
        vgpus = _VgpuSession(ssn, self.policy, config.vgpu_names, self.weight,
                             self.exclusive_rules, node_lock=self.node_lock)
        if _takes_devices(ssn):
            events.append(EventHandler(allocate=vgpus.reserve, deallocate=vgpus.release,
                                       plugin=self.name))
        if self.exclusive_rules:
            # The node's device wrapper tracks the rules' pods whatever plugin
            # takes devices (Volcano's NodeInfo adds and removes every placed pod).
            events.append(EventHandler(allocate=vgpus.track, deallocate=vgpus.untrack,
                                       plugin=self.name))
        ssn.add_queue_resource_fn(self.name, vgpus.queue_usage)
        # Volcano's vGPU score is the one its filter saved on the node: with the
        # plugin's predicate off, no filter runs and every node scores 0.
        option = ssn.configuration.plugin_option(self.name)
        if option is not None and not option.enabled("enablePredicate"):
            return _DeviceKind(vgpus.predicate, vgpus.predicate, vgpus.column,
                               vgpus.preempt_column, _no_score, _no_column_score)
        # Topology-aware preemption asks the predicate on the node copy its victims left.
        return _DeviceKind(vgpus.predicate, vgpus.predicate, vgpus.column,
                           vgpus.preempt_column, vgpus.score, vgpus.column_score)


def _no_score(task: TaskInfo, node: NodeInfo) -> float:
    return 0.0


def _no_column_score(task: TaskInfo, columns: NodeColumns, candidates: Candidates) -> float:
    return 0.0


def _one_handler(plugin: str, kinds: list[EventHandler]) -> EventHandler:
    """The kinds' handlers as one, as Volcano's predicates handler calls every device
    kind's Allocate: the first kind that refuses (SchedulingError) ends the event, and
    the kinds after it never take anything (nor their node's lock). Every kind's
    Release runs on a deallocation (releasing what a kind does not hold is a no-op)."""
    reserves = [handler.allocate for handler in kinds if handler.allocate is not None]
    releases = [handler.deallocate for handler in kinds if handler.deallocate is not None]

    def allocate(event: Event) -> None:
        for reserve in reserves:
            reserve(event)

    def deallocate(event: Event) -> None:
        for release in releases:
            release(event)

    return EventHandler(allocate=allocate, deallocate=deallocate if releases else None,
                        plugin=plugin)


def _takes_devices(ssn: Session) -> bool:
    """Whether placements take devices this session: Volcano's device ``Allocate`` and
    ``Release`` run from the predicates plugin's event handlers, so without predicates
    devices are filtered and scored but never taken (nor node locks)."""
    return ssn.configuration.plugin_option("predicates") is not None


@attrs.frozen
class _DeviceKind:
    """One device kind's functions in a session (GPU sharing, vGPUs, Ascend vNPUs)."""

    predicate: Callable[[TaskInfo, NodeInfo], FitError | None]
    simulate_predicate: Callable[[TaskInfo, NodeInfo], FitError | None]
    column: Callable[[TaskInfo, NodeColumns], BoolArray | None]
    preempt_column: Callable[[TaskInfo, NodeColumns], tuple[BoolArray, BoolArray] | None]
    #: The kind's score of a node, before rounding and weighing (None: it scores none).
    score: Callable[[TaskInfo, NodeInfo], float] | None = None
    column_score: Callable[[TaskInfo, NodeColumns, Candidates], FloatArray | float] | None = None


def _register_kinds(ssn: Session, plugin: str, kinds: list[_DeviceKind], weight: int) -> None:
    """The plugin's functions over every device kind enabled, as Volcano's deviceshare
    has them: the predicate reports the first kind's error (in GPU sharing, vGPU,
    chip type order), the node score is the sum of the kinds' scores, rounded, times
    the weight (none when the weight is not positive)."""

    def first_error(checks: list[Callable[[TaskInfo, NodeInfo], FitError | None]]
                    ) -> Callable[[TaskInfo, NodeInfo], FitError | None]:
        if len(checks) == 1:
            return checks[0]

        def check(task: TaskInfo, node: NodeInfo) -> FitError | None:
            for one in checks:
                error = one(task, node)
                if error is not None:
                    return error
            return None
        return check

    def column(task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        passes: BoolArray | None = None
        for kind in kinds:
            mine = kind.column(task, columns)
            if isinstance(mine, tuple):
                raise VectorFallback  # a form with its own reading: the scalar form decides
            if mine is not None:
                passes = mine if passes is None else passes & mine
        return passes

    def preempt_column(task: TaskInfo, columns: NodeColumns
                       ) -> tuple[BoolArray, BoolArray] | None:
        # The first kind that fails a node decides whether evicting may help there.
        fits: BoolArray | None = None
        resolvable: BoolArray | None = None
        for kind in kinds:
            answer = kind.preempt_column(task, columns)
            if answer is None:
                continue
            ok, may = answer
            if fits is None or resolvable is None:
                fits, resolvable = ok, ~ok & may
            else:
                resolvable = resolvable | (fits & ~ok & may)
                fits = fits & ok
        return None if fits is None or resolvable is None else (fits, resolvable)

    ssn.add_predicate_fn(plugin, first_error([kind.predicate for kind in kinds]))
    # The dry run's device check belongs to the predicates plugin's simulate predicate
    # in Volcano (its FilterNode of every device kind): predicates asks it from here,
    # so without predicates, or with its predicates off, no device is checked.
    ssn.extra[DEVICE_SIMULATE_KEY] = first_error(
        [kind.simulate_predicate for kind in kinds])
    columnar.add_predicate_fn(ssn, plugin, kinds[0].column if len(kinds) == 1 else column)
    columnar.add_preempt_predicate_fn(
        ssn, plugin, kinds[0].preempt_column if len(kinds) == 1 else preempt_column)
    raw_scores = [kind.score for kind in kinds if kind.score is not None]
    raw_columns = [kind.column_score for kind in kinds if kind.column_score is not None]
    if weight <= 0 or not raw_scores:
        return

    def node_order(task: TaskInfo, node: NodeInfo) -> float:
        return _go_rounded(sum(score(task, node) for score in raw_scores)) * weight

    def column_score(task: TaskInfo, columns: NodeColumns,
                     candidates: Candidates) -> FloatArray | float:
        total: FloatArray | float = 0.0
        for score in raw_columns:
            total = total + score(task, columns, candidates)
        if isinstance(total, float):
            return _go_rounded(total) * weight
        rounded = np.floor(total + 0.5)
        # Go's int64() of NaN, an infinity or a value past int64 is int64's least.
        rounded = np.where(np.isfinite(rounded) & (np.abs(rounded) < _INT64_LIMIT),
                           rounded, -_INT64_LIMIT)
        weighted: FloatArray = rounded * weight
        return weighted

    ssn.add_node_order_fn(plugin, node_order)
    columnar.add_node_order_fn(ssn, plugin, column_score)


_INT64_LIMIT = float(2**63)


def _go_rounded(score: float) -> float:
    """Volcano's ``float64(int64(math.Floor(score + 0.5)))``: on the machines it runs on,
    Go's int64() of NaN, an infinity or a value past int64 is int64's least (a GPU
    registering no memory scores NaN under binpack, and its node never wins)."""
    if not math.isfinite(score):
        return -_INT64_LIMIT
    rounded = math.floor(score + 0.5)
    return float(rounded) if abs(rounded) < _INT64_LIMIT else -_INT64_LIMIT


#: Device-configuration problems already logged (once per process).
_REPORTED: set[str] = warned_once()


class _VgpuSession:
    """deviceshare's vGPU functions in one session, with the request names of the
    device configuration."""

    def __init__(self, ssn: Session, policy: str, names: VgpuResourceNames,
                 weight: int, exclusive_rules: tuple[Mapping[str, str], ...] = (), *,
                 node_lock: bool = False) -> None:
        self.ssn = ssn
        self.node_lock = node_lock
        self.policy = policy
        self.names = names
        self.weight = weight
        self.exclusive_rules = exclusive_rules
        #: Tasks given devices in this session: Volcano writes them on the binding,
        #: not on the pod object its queue status reads.
        self.assigned_now: set[str] = set()
        #: The tasks releasing when the session opened: their device annotations still
        #: reserve GPUs under the exclusivity rules (those the session evicts do not).
        self.releasing_at_open: frozenset[str] = frozenset(
            uid for node in ssn.node_list for uid, held in node.tasks.items()
            if held.status is TaskStatus.RELEASING) if exclusive_rules else frozenset()
        #: Per node, the exclusivity rules a pod of which left the node in this
        #: session (Volcano's ``untrackPod``, see :func:`exclusive_gpus`).
        self.untracked: dict[str, set[int]] = {}
        #: The pods a statement pipelined in this session (untracked by nobody).
        self.pipelined: set[str] = set()

    def asks(self, task: TaskInfo) -> bool:
        return requests_vgpu(task.app_requests, self.names)

    def fit(self, task: TaskInfo, node: NodeInfo, *, reserve: bool = False) -> VgpuFit:
        exclude = (exclusive_gpus(task, node, self.exclusive_rules, self.releasing_at_open,
                                  self._untracked_on(node))
                   if self.exclusive_rules else frozenset())
        return vgpu_fit(task, node, self.policy, reserve=reserve, names=self.names,
                        exclude=exclude)

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The policy's score of the GPUs the task would get (Volcano rounds the sum of
        every device kind's, then weighs it: :func:`_register_kinds`). The same
        question asked again on the unchanged node gives the same score."""
        return self.fit(task, node).score

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        fit = self.fit(task, node)
        if fit.fits:
            return None
        # Volcano's reason, which events carry; what failed, for batchsched explain.
        return FitError.of(task.namespace, task.name, node.name, VGPU_REASON,
                           code=FitStatusCode.UNSCHEDULABLE, plugin=PLUGIN_NAME,
                           detail=fit.reason)

    def _vector_request(self, task: TaskInfo) -> DeviceRequest:
        """The request the column forms answer for, or VectorFallback (annotations or
        requests only the scalar form reads)."""
        requests = container_requests(task.app_requests, self.names)
        if not vector_answerable(task.annotations, requests) or (
                self.exclusive_rules and matching_rules(task.labels, self.exclusive_rules)):
            raise VectorFallback
        return requests[0]

    def column(self, task: TaskInfo, columns: NodeColumns) -> BoolArray | None:
        """The predicate over every node (a task asking no vGPU passes everywhere)."""
        if not self.asks(task):
            return None
        fits, _ = vgpu_fit_rows(VgpuColumns.of(self.ssn), self._vector_request(task),
                                self.policy, slice(None))
        return fits

    def preempt_column(self, task: TaskInfo, columns: NodeColumns
                       ) -> tuple[BoolArray, BoolArray] | None:
        """The predicate as preempt reads it: where it fails, evicting may resolve it
        (Volcano's status is Unschedulable)."""
        fits = self.column(task, columns)
        return None if fits is None else (fits, ~fits)

    def column_score(self, task: TaskInfo, columns: NodeColumns,
                     candidates: Candidates) -> FloatArray | float:
        """:meth:`score` over the candidates."""
        if not self.asks(task):
            return 0.0
        _, scores = vgpu_fit_rows(VgpuColumns.of(self.ssn), self._vector_request(task),
                                  self.policy, candidates.indices)
        return scores

    def reserve(self, event: Event) -> None:
        """A statement placed the task: take its devices on the node (Volcano's
        ``Allocate``) and write them on the task, for the bind to carry."""
        task = event.task
        node = self.ssn.nodes.get(task.node_name)
        if (node is None or node.vgpu is None or task.uid not in node.tasks
                or not self.asks(task)):
            return
        if node.vgpu.holds(task.uid):
            if task.status not in PLACED_NOW:
                # An eviction undone: the pod keeps the devices it holds. Volcano's
                # Allocate runs again and takes the lock (its refusal is ignored there).
                if self.node_lock:
                    self._lock(task, node)
                return
            # Devices a stale annotation named when the task came to the node: they
            # are chosen again, as Volcano's Allocate chooses them.
            node.vgpu.remove_task(task.uid, task.annotations)
        fit = self.fit(task, node, reserve=True)
        if not fit.fits:
            raise SchedulingError(f"task {task.uid}: the vGPUs of node {node.name} cannot "
                                  f"serve it: {fit.reason}")
        ids = encode_pod_devices(fit.devices)
        if self.node_lock:
            # Volcano locks once the devices fit, and a refusal leaves them counted on
            # its ledger for the session; here they go back (docs/conformance.md).
            try:
                self._lock(task, node)
            except SchedulingError:
                node.vgpu.remove_task(task.uid, {ASSIGNED_IDS_ANNOTATION: ids})
                raise
        now = str(int(self.ssn.now))
        self.assigned_now.add(task.uid)
        # A new mapping: the task's annotations may be shared with the cache's copy.
        task.annotations = {
            **task.annotations,
            ASSIGNED_NODE_ANNOTATION: node.name,
            ASSIGNED_TIME_ANNOTATION: now,
            ASSIGNED_IDS_ANNOTATION: ids,
            ASSIGNED_IDS_TO_ALLOCATE_ANNOTATION: ids,
            BIND_PHASE_ANNOTATION: "allocating",
            BIND_TIME_ANNOTATION: now,
        }

    def _lock(self, task: TaskInfo, node: NodeInfo) -> None:
        lock_node(self.ssn, task, node, VGPU_LOCK,
                  refusal=f"node {node.name} locked for {task.name} hamivgpu lockname")

    def release(self, event: Event) -> None:
        """The task leaves the node (evicted, or its placement undone): give its
        devices back; an undone placement also loses the annotations it wrote."""
        task = event.task
        node = self.ssn.nodes.get(task.node_name)
        if node is None or node.vgpu is None or not self.asks(task):
            return
        node.vgpu.remove_task(task.uid, task.annotations)
        if task.status is TaskStatus.RELEASING or \
                task.annotations.get(BIND_PHASE_ANNOTATION) == "success":
            return  # a pod that holds its devices until it is gone
        drop_device_annotations(task)

    def track(self, event: Event) -> None:
        """A statement placed a pod of an exclusivity rule. A pipelined one is not on
        the node's devices (Volcano's NodeInfo adds it without its resources), so its
        undoing untracks nothing."""
        task = event.task
        if task.status is TaskStatus.PIPELINED:
            self.pipelined.add(task.uid)
        else:
            self.pipelined.discard(task.uid)

    def untrack(self, event: Event) -> None:
        """A pod leaves the node (evicted, or its allocation undone): Volcano's
        ``SubResource`` untracks it, whether it asks vGPUs or not, and the rules it
        matches keep only the GPUs the ledger holds (:func:`exclusive_gpus`)."""
        task = event.task
        if task.uid in self.pipelined:
            self.pipelined.discard(task.uid)
            return
        rules = matching_rules(task.labels, self.exclusive_rules)
        if rules:
            self.untracked.setdefault(task.node_name, set()).update(rules)

    def _untracked_on(self, node: NodeInfo) -> Container[int]:
        """The rules untracked on the node; on a copy a dry run took its victims off
        (topology-aware preemption), those of the victims too (Volcano's copy of the
        node untracks them)."""
        rules = self.untracked.get(node.name, set())
        own = self.ssn.nodes.get(node.name)
        if own is None or own is node:
            return rules
        gone = [held for uid, held in own.tasks.items()
                if uid not in node.tasks and held.status is not TaskStatus.PIPELINED
                and uid not in self.pipelined]
        more = set().union(*(matching_rules(held.labels, self.exclusive_rules)
                             for held in gone))
        return rules | more if more else rules

    def queue_usage(self, task: TaskInfo, node: NodeInfo) -> dict[str, float]:
        """What a placed task's vGPUs count in its queue's status (Volcano's
        ``AddQueueResource``): the memory and cores of every vGPU it holds on the node,
        in milli, instead of its request (which names one GPU's share). A task given
        its devices in this session counts its request: Volcano reads the devices off
        the pod object, which the binding has not reached yet."""
        devices = node.vgpu
        if devices is None or not self.asks(task) or task.uid in self.assigned_now:
            return {}
        memory_name, cores_name = self.names.memory, self.names.cores
        counted: dict[str, float] = {}
        held = decode_pod_devices(task.annotations.get(ASSIGNED_IDS_ANNOTATION, ""))
        for containers in held:
            for device in containers:
                for own in devices.devices.values():
                    if own.uuid in device.uuid:  # Volcano's match, device by device
                        counted[memory_name] = counted.get(memory_name, 0.0) \
                            + device.memory * 1000.0
                        counted[cores_name] = counted.get(cores_name, 0.0) \
                            + device.cores * 1000.0
        return counted
