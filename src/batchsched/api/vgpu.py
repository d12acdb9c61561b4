"""vGPUs: NVIDIA GPUs split by HAMi-core, the device model of Volcano's
``deviceshare.VGPUEnable`` (Volcano's ``api/devices/nvidia/vgpu``).

A node's vGPU device plugin registers its GPUs in the node annotation
``volcano.sh/node-vgpu-register``: one ``UUID,count,memory,type,health,mode`` entry per
GPU, entries separated by ``:`` (``count``: how many tasks may share the GPU; ``memory``:
its memory in MiB). The node must also advertise ``volcano.sh/vgpu-number``,
``volcano.sh/vgpu-cores`` and ``volcano.sh/vgpu-memory`` in its allocatable, else it
has no vGPUs (as in Volcano).

A task asks vGPUs with the requests ``volcano.sh/vgpu-number`` (how many GPUs, default
1 when only memory is asked), ``volcano.sh/vgpu-memory`` (MiB on each) and
``volcano.sh/vgpu-cores`` (percent of each GPU's cores). The devices it gets are written
in its ``volcano.sh/vgpu-ids-new`` annotation (``UUID,type,memory,cores:`` per device),
which is also what tells a node, in a later snapshot, that the task holds them.

:class:`VgpuDevices` is a node's ledger: per GPU what is used and by which task. The
node keeps it current as tasks come and go (a task with the annotation counts, once);
the deviceshare plugin reserves devices when a statement places a task and gives them
back when the placement is undone.

Differences from Volcano (the scenario format has no containers): a task is one
container, so its requests are one container's; a GPU registered in ``mig`` mode is
shared in HAMi-core mode (Volcano's fallback when the device configuration names no
MIG geometry for it; batchsched does not model MIG instances). The request names come
from the device configuration (:mod:`batchsched.api.device_config`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import attrs

from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo, parse_bool
from batchsched.kube.go_strconv import atoi, int32
from batchsched.kube.go_strconv import quote as go_quote
from batchsched.kube.quantity import as_int64_of_milli

__all__ = [
    "ASSIGNED_IDS_ANNOTATION",
    "BIND_PHASE_ANNOTATION",
    "DEFAULT_NAMES",
    "DEVICE_ANNOTATIONS",
    "NODE_REGISTER_ANNOTATION",
    "VGPU_CORES",
    "VGPU_MEMORY",
    "VGPU_NUMBER",
    "ContainerDevice",
    "DeviceRequest",
    "UuidFilter",
    "VgpuDevice",
    "VgpuDevices",
    "VgpuFit",
    "VgpuResourceNames",
    "assigned_devices",
    "container_requests",
    "decode_container_devices",
    "decode_pod_devices",
    "drop_device_annotations",
    "encode_pod_devices",
    "gpu_score",
    "gpu_type_allowed",
    "group_key",
    "request_figure",
    "requests_vgpu",
    "unreadable_devices",
    "why_no_vgpus",
]

VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
NODE_REGISTER_ANNOTATION = "volcano.sh/node-vgpu-register"
ASSIGNED_IDS_ANNOTATION = "volcano.sh/vgpu-ids-new"
ASSIGNED_IDS_TO_ALLOCATE_ANNOTATION = "volcano.sh/devices-to-allocate"
ASSIGNED_NODE_ANNOTATION = "volcano.sh/vgpu-node"
ASSIGNED_TIME_ANNOTATION = "volcano.sh/vgpu-time"
BIND_TIME_ANNOTATION = "volcano.sh/bind-time"
BIND_PHASE_ANNOTATION = "volcano.sh/bind-phase"
#: What a placement writes on the task, and what undoing it takes off again.
DEVICE_ANNOTATIONS = (ASSIGNED_NODE_ANNOTATION, ASSIGNED_IDS_ANNOTATION,
                      ASSIGNED_IDS_TO_ALLOCATE_ANNOTATION, ASSIGNED_TIME_ANNOTATION,
                      BIND_TIME_ANNOTATION, BIND_PHASE_ANNOTATION)
MODE_ANNOTATION = "volcano.sh/vgpu-mode"
PODGROUP_POLICY_ANNOTATION = "volcano.sh/vgpu-podgroup-policy"
USE_TYPE_ANNOTATION = "nvidia.com/use-gputype"
NO_USE_TYPE_ANNOTATION = "nvidia.com/nouse-gputype"
USE_UUID_ANNOTATION = "volcano.sh/vgpu-use-gpuuuid"
NO_USE_UUID_ANNOTATION = "volcano.sh/vgpu-nouse-gpuuuid"
KUBE_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.volcano.sh/group-name"

HAMI_CORE = "hami-core"
MIG = "mig"
BINPACK = "binpack"
SPREAD = "spread"
NVIDIA = "NVIDIA"
#: "No memory-percentage request" (Volcano's ``DefaultMemPercentage``).
NO_PERCENTAGE = 101
_MULTIPLIER = 100.0


# -- requests -----------------------------------------------------------------------


@attrs.frozen
class DeviceRequest:
    """What one container asks: ``count`` GPUs, on each ``memory`` MiB (or
    ``memory_percentage`` of the GPU's memory unless it is 101) and ``cores`` percent."""

    count: int
    memory: int
    memory_percentage: int
    cores: int
    type: str = NVIDIA


@attrs.frozen
class VgpuResourceNames:
    """The request names a task asks vGPUs with (the device configuration's
    ``nvidia`` section; these defaults are Volcano's default configuration, which names
    no memory-percentage request)."""

    count: str = VGPU_NUMBER
    memory: str = VGPU_MEMORY
    memory_percentage: str = ""
    cores: str = VGPU_CORES


DEFAULT_NAMES = VgpuResourceNames()


def requests_vgpu(resreq: Resource, names: VgpuResourceNames = DEFAULT_NAMES) -> bool:
    """Whether a task with these requests asks vGPUs (a count or a memory)."""
    scalars = resreq.scalars
    return names.memory in scalars or names.count in scalars


def container_requests(resreq: Resource, names: VgpuResourceNames = DEFAULT_NAMES
                       ) -> tuple[DeviceRequest, ...]:
    """The task's vGPU requests, one per container (a task is one container)."""
    scalars = resreq.scalars
    count_milli = scalars.get(names.count)
    memory_milli = scalars.get(names.memory)
    if count_milli is None and memory_milli is None:
        return ()
    # Volcano's ExtractResourceRequest: each figure read with Quantity.AsInt64 (a
    # figure that does not read keeps its default) and kept as a 32-bit integer.
    count = 1 if count_milli is None else request_figure(scalars, names.count)
    memory = request_figure(scalars, names.memory, 0)
    percentage = NO_PERCENTAGE
    if names.memory_percentage:
        percentage = request_figure(scalars, names.memory_percentage, NO_PERCENTAGE)
    if percentage == NO_PERCENTAGE and memory == 0:
        percentage = 100  # no memory asked: all of each GPU's memory
    return (DeviceRequest(count=count, memory=memory, memory_percentage=percentage,
                          cores=request_figure(scalars, names.cores, 0)),)


def request_figure(scalars: Mapping[str, float], name: str, default: int = 0) -> int:
    """A device request figure as Volcano's ``ExtractResourceRequest`` keeps it: read
    with Kubernetes' ``Quantity.AsInt64`` (``default`` when absent or when it does not
    read) as a 32-bit integer. ``scalars`` are in milli, as every scalar."""
    milli = scalars.get(name)
    if milli is None:
        return default
    number, whole = as_int64_of_milli(milli)
    return int32(number) if whole else default


def group_key(annotations: Mapping[str, str], namespace: str, job: str) -> str:
    """The task's pod group as ``namespace/name``: from the pod's group-name annotation
    (Kubernetes' first, then Volcano's), else its job (every Volcano pod in a group
    carries the annotation; batchsched's tasks name their job instead)."""
    name = (annotations.get(KUBE_GROUP_NAME_ANNOTATION)
            or annotations.get(VOLCANO_GROUP_NAME_ANNOTATION))
    return f"{namespace}/{name}" if name else job


def gpu_type_allowed(annotations: Mapping[str, str] | None, card_type: str) -> bool:
    """The task's ``nvidia.com/use-gputype`` / ``nouse-gputype`` lists (case-insensitive
    substrings of the GPU's type)."""
    annotations = annotations or {}
    upper = card_type.upper()
    use = annotations.get(USE_TYPE_ANNOTATION)
    if use is not None:
        return any(part.upper() in upper for part in use.split(","))
    no_use = annotations.get(NO_USE_TYPE_ANNOTATION)
    if no_use is not None:
        return not any(part.upper() in upper for part in no_use.split(","))
    return True


@attrs.frozen
class UuidFilter:
    """The task's allow and deny lists of GPU UUIDs (exact, blanks ignored)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def of(cls, annotations: Mapping[str, str] | None) -> UuidFilter:
        annotations = annotations or {}
        return cls(_uuid_list(annotations.get(USE_UUID_ANNOTATION, "")),
                   _uuid_list(annotations.get(NO_USE_UUID_ANNOTATION, "")))

    @property
    def enabled(self) -> bool:
        return bool(self.allow or self.deny)

    def matches(self, uuid: str) -> bool:
        if not uuid and self.enabled:
            return False
        if self.allow and uuid not in self.allow:
            return False
        return uuid not in self.deny


def _uuid_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


# -- the annotations' encodings -------------------------------------------------------


@attrs.frozen
class ContainerDevice:
    """One GPU a container holds: its UUID and type, the MiB and cores it takes."""

    uuid: str
    type: str
    memory: int
    cores: int

    def to_json(self) -> dict[str, object]:
        return {"uuid": self.uuid, "type": self.type, "memory": self.memory,
                "cores": self.cores}


def encode_pod_devices(containers: Sequence[Sequence[ContainerDevice]]) -> str:
    """``UUID,type,memory,cores:`` per device, containers separated by ``;``."""
    return ";".join("".join(f"{d.uuid},{d.type},{d.memory},{d.cores}:" for d in devices)
                    for devices in containers)


def decode_container_devices(text: str) -> tuple[ContainerDevice, ...]:
    """One container's devices; an entry with missing fields or a usage that is not a
    non-negative integer is skipped, as Volcano skips it."""
    out = []
    for entry in text.split(":"):
        if "," not in entry:
            continue
        fields = entry.split(",")
        if len(fields) < 4 or not (_is_uint(fields[2]) and _is_uint(fields[3])):
            continue
        out.append(ContainerDevice(fields[0], fields[1], int(fields[2]), int(fields[3])))
    return tuple(out)


def unreadable_devices(text: str) -> list[str]:
    """The entries of a ``volcano.sh/vgpu-ids-new`` value that name no device (skipped,
    as Volcano skips them)."""
    return [entry for part in text.split(";") for entry in part.split(":")
            if "," in entry and not decode_container_devices(entry + ":")]


def decode_pod_devices(text: str) -> tuple[tuple[ContainerDevice, ...], ...]:
    if not text:
        return ()
    return tuple(decode_container_devices(part) for part in text.split(";"))


def _is_uint(text: str) -> bool:
    return text.isascii() and text.isdigit() and int(text) < 2**32


def drop_device_annotations(task: TaskInfo) -> None:
    """Take off a task the vGPUs a placement wrote on it (a new mapping: the old one
    may be shared with the task's copies)."""
    if any(key in task.annotations for key in DEVICE_ANNOTATIONS):
        task.annotations = {key: value for key, value in task.annotations.items()
                            if key not in DEVICE_ANNOTATIONS}


def assigned_devices(annotations: Mapping[str, str]) -> list[list[dict[str, object]]] | None:
    """The devices a task's annotation says it holds, per container (None: none)."""
    text = annotations.get(ASSIGNED_IDS_ANNOTATION)
    if not text:
        return None
    return [[device.to_json() for device in devices] for devices in decode_pod_devices(text)]


# -- a node's GPUs --------------------------------------------------------------------


@attrs.define(eq=False)
class PodUsage:
    """What one task takes of one GPU."""

    memory: int = 0
    cores: int = 0
    group: str = ""


@attrs.define(eq=False)
class VgpuDevice:
    """One GPU: what it offers (``number`` tasks sharing it, ``memory`` MiB, 100 cores)
    and what is used of it, by task."""

    index: int
    uuid: str
    number: int
    memory: int
    type: str
    health: bool = True
    used_num: int = 0
    used_memory: int = 0
    used_cores: int = 0
    pods: dict[str, PodUsage] = attrs.field(factory=dict)

    def clone(self) -> VgpuDevice:
        twin = attrs.evolve(self)
        twin.pods = {uid: attrs.evolve(usage) for uid, usage in self.pods.items()}
        return twin

    def holds_group(self, group: str) -> bool:
        """Whether a task of ``group`` uses this GPU (with some memory or cores)."""
        return bool(group) and any(
            usage.group == group and (usage.memory > 0 or usage.cores > 0)
            for usage in self.pods.values())


@attrs.frozen
class VgpuFit:
    """Whether a node's GPUs serve a task: the devices per container, the policy's
    score, and the reason when they do not."""

    fits: bool
    devices: tuple[tuple[ContainerDevice, ...], ...] = ()
    score: float = 0.0
    reason: str = ""


def gpu_score(policy: str, device: VgpuDevice) -> float:
    """Volcano's ``GPUScore``: binpack rewards a fuller GPU, spread an idle one."""
    if policy == BINPACK:
        if not device.memory:  # Go's float division: 0/0 is NaN, more is +Inf
            return math.nan if device.used_memory == 0 else math.inf
        return _MULTIPLIER * (device.used_memory / device.memory)
    if policy == SPREAD:
        return _MULTIPLIER if device.used_num == 0 else 0.0
    return 0.0


@attrs.define(eq=False)
class VgpuDevices:
    """A node's vGPUs, by index (see the module docstring)."""

    node: str
    mode: str
    devices: dict[int, VgpuDevice]

    @classmethod
    def from_node(cls, name: str, annotations: Mapping[str, str],
                  allocatable: Resource) -> VgpuDevices | None:
        """The GPUs a node registers, or None (no register annotation, a malformed one,
        or no vGPU number, cores or memory in its allocatable: :func:`why_no_vgpus`)."""
        text = annotations.get(NODE_REGISTER_ANNOTATION)
        if text is None or why_no_vgpus(annotations, allocatable) is not None:
            return None
        devices: dict[int, VgpuDevice] = {}
        # GPUs are numbered in the order of their entries. (Volcano numbers them by
        # position, empty entries included, and panics when such a gap meets its
        # default order; the policies' orders are the same either way.)
        for entry in text.split(":"):
            if "," not in entry:
                continue
            fields = entry.split(",")
            index = len(devices)
            devices[index] = VgpuDevice(
                index=index, uuid=fields[0], number=atoi(fields[1]),
                memory=atoi(fields[2]), type=fields[3],
                health=parse_bool(fields[4]) is True)
        # A GPU registered in mig mode is shared as hami-core: Volcano's fallback when
        # the device configuration names no MIG geometry for it.
        return cls(name, HAMI_CORE, devices)

    def clone(self) -> VgpuDevices:
        return VgpuDevices(self.node, self.mode,
                           {index: d.clone() for index, d in self.devices.items()})

    # -- the ledger --------------------------------------------------------------------

    def add_task(self, uid: str, annotations: Mapping[str, str], group: str) -> None:
        """Count the devices the task's annotation names (once: a task already counted
        is left as it is); a UUID the node does not have is ignored."""
        for containers in decode_pod_devices(annotations.get(ASSIGNED_IDS_ANNOTATION, "")):
            for used in containers:
                device = self._device_of(used.uuid)
                if device is None or uid in device.pods:
                    continue
                device.pods[uid] = PodUsage(used.memory, used.cores, group)
                device.used_num += 1
                device.used_memory += used.memory
                device.used_cores += used.cores

    def remove_task(self, uid: str, annotations: Mapping[str, str]) -> None:
        """Give back the devices the task's annotation names, where the task is counted."""
        for containers in decode_pod_devices(annotations.get(ASSIGNED_IDS_ANNOTATION, "")):
            for used in containers:
                device = self._device_of(used.uuid)
                if device is None or device.pods.pop(uid, None) is None:
                    continue
                device.used_num -= 1
                device.used_memory -= used.memory
                device.used_cores -= used.cores

    def holds(self, uid: str) -> bool:
        return any(uid in device.pods for device in self.devices.values())

    def _device_of(self, uuid: str) -> VgpuDevice | None:
        """The GPU a task's annotation names: by UUID, else (as Volcano matches) the
        first whose UUID is part of the name."""
        for device in self.devices.values():
            if device.uuid == uuid:
                return device
        return next((d for d in self.devices.values() if d.uuid in uuid), None)

    # -- choosing devices ----------------------------------------------------------------

    def fit(self, uid: str, annotations: Mapping[str, str],
            requests: Sequence[DeviceRequest], group: str, policy: str, *,
            reserve: bool = False, exclude: Iterable[int] = ()) -> VgpuFit:
        """Whether the GPUs serve the requests, and which (Volcano's
        ``checkNodeGPUSharingPredicateAndScore``). With ``reserve`` the devices
        chosen are taken in this ledger for task ``uid``; otherwise nothing changes.
        The GPUs of ``exclude`` are passed over (deviceshare's exclusivity rules cap
        them as full)."""
        if not requests:
            return VgpuFit(True)
        wanted_mode = annotations.get(MODE_ANNOTATION)
        if wanted_mode is not None and wanted_mode != self.mode:
            return VgpuFit(False, reason=f"pod required sharing mode {wanted_mode} is not "
                                         f"the same as the node mode {self.mode}")
        devices = self.devices if reserve else {i: d.clone() for i, d in self.devices.items()}
        spread_group = group if annotations.get(PODGROUP_POLICY_ANNOTATION) == SPREAD else ""
        uuids = UuidFilter.of(annotations)
        excluded = frozenset(exclude)
        taken: list[tuple[VgpuDevice, int, int]] = []
        chosen_devices: list[VgpuDevice] = []
        chosen_per_container: list[tuple[ContainerDevice, ...]] = []
        score = 0.0
        for request in requests:
            left = request.count
            if left <= 0:
                # Volcano bumps the first fitting GPU's counters and records no device
                # (a leak); a request of no GPU takes nothing here.
                chosen_per_container.append(())
                continue
            if left > len(devices):
                _give_back(taken)
                return VgpuFit(False, reason=f"no enough gpu cards on node {self.node}")
            chosen: list[ContainerDevice] = []
            uuid_matched = False
            for index in _order(devices, policy):
                device = devices[index]
                if not uuids.matches(device.uuid):
                    continue
                uuid_matched = True
                memory = _memory_for(device, request)
                if (device.number <= device.used_num or index in excluded
                        or (spread_group and device.holds_group(spread_group))
                        or device.memory - device.used_memory < memory
                        or device.used_cores + request.cores > 100
                        or (request.cores == 100 and device.used_num > 0)
                        or (device.used_cores == 100 and request.cores == 0)
                        or request.type not in device.type
                        or not gpu_type_allowed(annotations, device.type)):
                    continue
                device.used_num += 1
                device.used_memory += memory
                device.used_cores += request.cores
                taken.append((device, memory, request.cores))
                chosen_devices.append(device)
                left -= 1
                chosen.append(ContainerDevice(device.uuid, request.type, memory,
                                              request.cores))
                score += gpu_score(policy, device)
                if left == 0:
                    break
            if left > 0:
                _give_back(taken)
                if uuids.enabled and not uuid_matched:
                    return VgpuFit(False, reason=(
                        f"no GPU matches UUID constraints {USE_UUID_ANNOTATION}="
                        f"{go_quote(annotations.get(USE_UUID_ANNOTATION, ''))}, "
                        f"{NO_USE_UUID_ANNOTATION}="
                        f"{go_quote(annotations.get(NO_USE_UUID_ANNOTATION, ''))} "
                        f"on node {self.node}"))
                return VgpuFit(False, reason="not enough gpu fitted on this node")
            chosen_per_container.append(tuple(chosen))
        result = VgpuFit(True, tuple(chosen_per_container), score)
        if reserve:
            # The task's usage of each GPU chosen, whose counters are taken already.
            used = [d for devices in result.devices for d in devices]
            for device, share in zip(chosen_devices, used, strict=True):
                usage = device.pods.setdefault(uid, PodUsage(group=group))
                usage.memory += share.memory
                usage.cores += share.cores
                usage.group = group
        return result

    def check(self, tasks: Iterable[str]) -> None:
        """Raise AssertionError unless every counter adds up from the tasks counted and
        each of them is on the node."""
        on_node = set(tasks)
        for device in self.devices.values():
            assert set(device.pods) <= on_node, f"{self.node}: GPU {device.uuid} counts " \
                f"tasks not on the node: {sorted(set(device.pods) - on_node)}"
            assert device.used_num == len(device.pods), f"{self.node}: GPU {device.uuid} users"
            assert device.used_memory == sum(u.memory for u in device.pods.values()), \
                f"{self.node}: GPU {device.uuid} memory"
            assert device.used_cores == sum(u.cores for u in device.pods.values()), \
                f"{self.node}: GPU {device.uuid} cores"


def why_no_vgpus(annotations: Mapping[str, str], allocatable: Resource) -> str | None:
    """Why a node with the register annotation has no vGPUs (as Volcano reads it), or
    None when it has some or registers none."""
    text = annotations.get(NODE_REGISTER_ANNOTATION)
    if text is None:
        return None
    missing = [kind for kind in (VGPU_NUMBER, VGPU_CORES, VGPU_MEMORY)
               if allocatable.scalars.get(kind, 0.0) <= 0]
    if missing:
        return f"its allocatable has no {', '.join(missing)}"
    entries = [entry for entry in text.split(":") if "," in entry]
    if not entries or ":" not in text:
        return "it registers no GPU (entries UUID,count,memory,type,health,mode separated by ':')"
    for entry in entries:
        fields = entry.split(",")
        if len(fields) < 6:
            return (f"entry {entry!r} has fewer than 6 fields "
                    "(UUID,count,memory,type,health,mode)")
        if atoi(fields[1]) < 0 or atoi(fields[2]) < 0:
            return f"entry {entry!r} has a negative count or memory"
    return None


def _memory_for(device: VgpuDevice, request: DeviceRequest) -> int:
    if request.memory_percentage != NO_PERCENTAGE:
        # Volcano: uint(float64(memory) * float64(percentage) / 100.0).
        return int(float(device.memory) * float(request.memory_percentage) / 100.0)
    return request.memory


def _order(devices: Mapping[int, VgpuDevice], policy: str) -> list[int]:
    """The order GPUs are tried in: binpack fullest memory first, spread least shared
    first (lowest index among equals), otherwise the highest index first."""
    if policy == BINPACK:
        return sorted(devices, key=lambda i: (-devices[i].used_memory, i))
    if policy == SPREAD:
        return sorted(devices, key=lambda i: (devices[i].used_num, i))
    return [i for i in range(len(devices) - 1, -1, -1) if i in devices]


def _give_back(taken: list[tuple[VgpuDevice, int, int]]) -> None:
    for device, memory, cores in taken:
        device.used_num = max(device.used_num - 1, 0)
        device.used_memory = max(device.used_memory - memory, 0)
        device.used_cores = max(device.used_cores - cores, 0)
    taken.clear()


