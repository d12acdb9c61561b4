"""Ascend vNPUs shared the HAMi way: the device model of Volcano's
``deviceshare.AscendHAMiVNPUEnable`` (Volcano's ``api/devices/ascend/hami``).

The device configuration's ``vnpus`` section (:mod:`batchsched.api.device_config`)
lists the chip types (:class:`AscendChip`): each has a *common word* (``Ascend310P``),
a count resource (``huawei.com/Ascend310P``), a memory resource
(``huawei.com/Ascend310P-memory``), a core resource (the count resource and
``-core``) and the memory templates a card is cut into. A node's device plugin
registers its cards of a type in the node annotation
``hami.io/node-register-<common word>``, a JSON list of
``{"id", "count", "devmem", "devcore", "customInfo"}`` (``count``: how many pods may
share the card); the node must also advertise the count resource in its allocatable.

A task asks cards with its count resource (how many; a memory request alone asks
one) and, on each, the memory resource (MiB) and the core resource. In *template*
mode (the default) the memory is rounded up to the smallest template that holds it
(above the largest template, a whole card's ``memoryAllocatable``); with the pod
annotation ``huawei.com/vnpu-mode: hami-core`` on a node that supports it (the node
annotation ``hami-vnpu-core: "true"``, or ``hamiVnpuCore: true`` in the
configuration) memory is taken as asked and cores count out of 100.

The memory and core resources are accounted by the devices, not as scalars: Volcano
drops them from every resource list once a node registers cards of the type, which
a session does here before any plugin opens (:meth:`AscendDevices.hidden`).

:class:`AscendDevices` is a node's ledger for one chip type: per card what is used
and by which task. The node keeps it current as tasks come and go; the deviceshare
plugin chooses cards when a statement places a task and writes them in the task's
``hami.io/<common word>-devices-allocated`` annotation (``id,type,memory,cores:`` per
card), which is also what tells a node, in a later snapshot, that the task holds them.

Differences from Volcano: a task is one container (the scenario format has none), so
its requests are one container's and Volcano's decoding slip on a second container's
cards does not arise; cards of equal score are tried in registration order and
network groups of equal size in the order their first card comes (Volcano's order is
Go's map order then, which is random).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from batchsched.api.ascend_annotations import (
    ASSIGNED_NODE_ANNOTATION,
    ASSIGNED_TIME_ANNOTATION,
    BIND_PHASE_ANNOTATION,
    BIND_TIME_ANNOTATION,
    PREDICATE_TIME_ANNOTATION,
    allocated_annotation,
    assigned_vnpus,
    decode_devices,
    drop_vnpu_annotations,
    encode_devices,
    read_register,
    register_annotation,
    release_keys,
    runtime_annotation,
    to_allocate_annotation,
)
from batchsched.api.types import FitStatusCode
from batchsched.api.vgpu import ContainerDevice, request_figure
from batchsched.kube.go_json import marshal
from batchsched.kube.go_strconv import divide, int32

__all__ = [
    "BIND_PHASE_ANNOTATION",
    "DEFAULT_CHIP",
    "HAMI_CORE",
    "NODE_HAMI_CORE_ANNOTATION",
    "VNPU_MODE_ANNOTATION",
    "AscendChip",
    "AscendDevice",
    "AscendDevices",
    "SelectionError",
    "VnpuConfig",
    "VnpuRequest",
    "VnpuTemplate",
    "allocated_annotation",
    "assigned_vnpus",
    "calc_score",
    "decode_devices",
    "drop_vnpu_annotations",
    "encode_devices",
    "fit",
    "read_register",
    "register_annotation",
    "release_keys",
    "to_allocate_annotation",
]

VNPU_MODE_ANNOTATION = "huawei.com/vnpu-mode"
HAMI_CORE = "hami-core"
#: A node annotation saying whether its cards can be shared in hami-core mode.
NODE_HAMI_CORE_ANNOTATION = "hami-vnpu-core"
BINPACK = "binpack"
SPREAD = "spread"
#: Chip types whose cards are grouped by network (``customInfo.NetworkID``).
NETWORK_PREFIX = "Ascend910"
NETWORK_WEIGHT = 10
#: No memory-percentage request (HAMi's ``DefaultMemPercentage``; Ascend has none).
_NO_PERCENTAGE = 101
_MULTIPLIER = 100.0
#: Volcano's message for both kinds of refusal (only the status code differs).
NO_DEVICE = "no ascend device available"
_NOT_ENOUGH = "no enough ascend device available"
_PARTIAL = "vNPU does not support partial memory allocation when requesting multiple devices"


# -- configuration -------------------------------------------------------------------


@attrs.frozen
class VnpuTemplate:
    """A cut of a card: its name and memory (MiB)."""

    name: str
    memory: int


def _by_memory(templates: Iterable[VnpuTemplate]) -> tuple[VnpuTemplate, ...]:
    return tuple(sorted(templates, key=lambda template: template.memory))


@attrs.frozen
class AscendChip:
    """One chip type of the device configuration (``vnpus.configs[]``)."""

    common_word: str
    resource_name: str
    resource_memory_name: str
    memory_allocatable: int
    memory_capacity: int
    #: Smallest memory first (Volcano sorts them when it reads a node).
    templates: tuple[VnpuTemplate, ...] = attrs.field(default=(), converter=_by_memory)
    chip_name: str = ""

    @property
    def core_name(self) -> str:
        """The core resource: always the count resource and ``-core``."""
        return f"{self.resource_name}-core"

    @property
    def hidden_names(self) -> tuple[str, str]:
        """What Volcano drops from resource lists once a node registers the type."""
        return (self.resource_memory_name, self.core_name)

    def trim_memory(self, memory: int) -> tuple[int, str]:
        """The memory a request of ``memory`` MiB gets and the template's name: the
        smallest template holding it, else a whole card (no name) up to the card's
        capacity, else 0."""
        for template in self.templates:
            if memory <= template.memory:
                return template.memory, template.name
        if memory <= self.memory_capacity:
            return self.memory_allocatable, ""
        return 0, ""


@attrs.frozen
class VnpuConfig:
    """The ``vnpus`` section: the chip types, and whether cards are shared in
    hami-core mode unless a node says otherwise."""

    chips: tuple[AscendChip, ...] = ()
    hami_core: bool = False


DEFAULT_CHIP = AscendChip(
    common_word="Ascend310P", chip_name="310P3", resource_name="huawei.com/Ascend310P",
    resource_memory_name="huawei.com/Ascend310P-memory", memory_allocatable=21527,
    memory_capacity=24576, templates=(VnpuTemplate("vir01", 3072),
                                      VnpuTemplate("vir02", 6144),
                                      VnpuTemplate("vir04", 12288)))
#: Volcano's default configuration (``GetDefaultDevicesConfig``).
DEFAULT_VNPU_CONFIG = VnpuConfig((DEFAULT_CHIP,))


# -- requests ------------------------------------------------------------------------


@attrs.frozen
class VnpuRequest:
    """What one container asks of a chip type: ``count`` cards, ``memory`` MiB (or
    ``memory_percentage`` of a card's memory unless it is 101) and ``cores`` on each."""

    type: str
    count: int
    memory: int
    memory_percentage: int
    cores: int


def asks(requests: Mapping[str, float], chip: AscendChip) -> bool:
    """Whether a task with these requests asks cards of the type (Volcano's
    ``HasDeviceRequest``: the count or the memory resource; cores alone do not)."""
    return chip.resource_name in requests or chip.resource_memory_name in requests


def vnpu_request(requests: Mapping[str, float], chip: AscendChip) -> VnpuRequest | None:
    """The task's request of the type (Volcano's ``ExtractResourceRequest`` for one
    container), or None."""
    if chip.resource_name not in requests and chip.resource_memory_name not in requests:
        return None
    # Volcano keeps them as 32-bit integers: 4Gi (MiB meant, bytes written) wraps to 0.
    memory = request_figure(requests, chip.resource_memory_name)
    percentage = _NO_PERCENTAGE
    if not memory:
        percentage = 100
    count = request_figure(requests, chip.resource_name) if chip.resource_name in requests else 1
    return VnpuRequest(type=chip.common_word, count=count, memory=memory,
                       memory_percentage=percentage, cores=request_figure(requests, chip.core_name))


def hami_core_mode(annotations: Mapping[str, str]) -> bool:
    """Whether the task asks hami-core (soft) sharing."""
    return annotations.get(VNPU_MODE_ANNOTATION) == HAMI_CORE


# -- cards ---------------------------------------------------------------------------


@attrs.define(eq=False)
class AscendDevice:
    """One card: what it offers and what is used of it, by task."""

    id: str
    #: How many pods may share it.
    count: int
    memory: int
    cores: int
    #: Its ``customInfo`` (``NetworkID`` groups 910 cards); shared by copies.
    custom_info: Mapping[str, object] | None = None
    used: int = 0
    used_memory: int = 0
    used_cores: int = 0
    #: Per task: (memory, cores) it takes of the card.
    pods: dict[str, tuple[int, int]] = attrs.field(factory=dict)

    def clone(self) -> AscendDevice:
        twin = attrs.evolve(self)
        twin.pods = dict(self.pods)
        return twin

    @property
    def has_network_id(self) -> bool:
        return self.custom_info is not None and "NetworkID" in self.custom_info

    @property
    def network_id(self) -> int | None:
        """The card's network group (None: none, or not a JSON number)."""
        value = self.custom_info.get("NetworkID") if self.custom_info else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return int(value)


def calc_score(policy: str, device: AscendDevice) -> float:
    """Volcano's ``CalScore``: binpack rewards a fuller card, spread an unused one."""
    if device.memory == 0:
        return 0.0
    if policy == BINPACK:
        # Go's float operations: the ratio first (100 * u / m may round differently).
        return _MULTIPLIER * (device.used_memory / device.memory)
    if policy == SPREAD:
        return _MULTIPLIER if device.used == 0 else 0.0
    return 0.0


def fit(request: VnpuRequest, device: AscendDevice, chip: AscendChip, *,
        hami_core: bool, device_hami_core: bool) -> bool:
    """Whether the card serves one card of the request (Volcano's ``fit``, in its
    order of checks)."""
    if request.type != chip.common_word:
        return False
    if hami_core and not device_hami_core:
        return False
    if device.count <= device.used:
        return False
    # Every figure is an int32 in Go, and so are the differences (they wrap).
    if int32(device.memory - device.used_memory) < request.memory:
        return False
    total_cores = 100 if hami_core else device.cores
    if int32(total_cores - device.used_cores) < request.cores:
        return False
    if total_cores == 100 and request.cores == 100 and device.used > 0:
        return False  # a whole card's cores need a card no one uses
    return not (total_cores != 0 and device.used_cores == total_cores and request.cores == 0)


class SelectionError(Exception):
    """No cards for the task: ``code`` says whether waiting may help (Unschedulable)
    or not (Error, as Volcano classifies it)."""

    def __init__(self, message: str, code: FitStatusCode) -> None:
        super().__init__(message)
        self.code = code


@attrs.define(eq=False)
class AscendDevices:
    """A node's cards of one chip type, by id, in registration order (see the module
    docstring)."""

    node: str
    chip: AscendChip
    #: Whether the node's cards may be shared in hami-core mode.
    hami_core: bool
    devices: dict[str, AscendDevice]

    @classmethod
    def from_node(cls, name: str, annotations: Mapping[str, str],
                  allocatable: Mapping[str, float], chip: AscendChip,
                  config_hami_core: bool = False) -> AscendDevices | None:
        """The node's cards of the type, or None (no count resource in its allocatable,
        no or an unreadable register annotation, or no card in it; :meth:`why_none`)."""
        if cls.why_none(annotations, allocatable, chip) is not None:
            return None
        hami_core = config_hami_core
        if NODE_HAMI_CORE_ANNOTATION in annotations:
            hami_core = annotations[NODE_HAMI_CORE_ANNOTATION] == "true"
        devices: dict[str, AscendDevice] = {}
        for info in read_register(annotations[register_annotation(chip.common_word)]):
            custom = info.get("custominfo")
            device = AscendDevice(
                id=str(info.get("id") or ""), count=_int_field(info, "count"),
                memory=_int_field(info, "devmem"), cores=_int_field(info, "devcore"),
                custom_info=custom if isinstance(custom, Mapping) else None)
            devices[device.id] = device
        return cls(name, chip, hami_core, devices)

    @staticmethod
    def why_none(annotations: Mapping[str, str], allocatable: Mapping[str, float],
                 chip: AscendChip) -> str | None:
        """Why a node has no cards of the type as Volcano reads it (None: it has)."""
        if not allocatable.get(chip.resource_name):
            return f"its allocatable has no {chip.resource_name}"
        key = register_annotation(chip.common_word)
        text = annotations.get(key)
        if text is None:
            return f"annos not found {key}"
        try:
            entries = read_register(text)
        except ValueError as exc:
            return f"{key}: {exc}"
        if not entries:
            return "no device found on node"
        return None

    def clone(self) -> AscendDevices:
        return AscendDevices(self.node, self.chip, self.hami_core,
                             {key: device.clone() for key, device in self.devices.items()})

    # -- the ledger --------------------------------------------------------------------

    def add_task(self, uid: str, annotations: Mapping[str, str]) -> None:
        """Count the cards the task's annotation names (once per card; a card the node
        does not have, or an unreadable annotation, counts nothing)."""
        text = annotations.get(allocated_annotation(self.chip.common_word))
        if text is None:
            return
        try:
            held = decode_devices(text)
        except ValueError:
            return
        for used in held:
            self._take(uid, used.uuid, used.memory, used.cores)

    def remove_task(self, uid: str) -> None:
        """Give back what the task holds, as counted."""
        for device in self.devices.values():
            usage = device.pods.pop(uid, None)
            if usage is not None:
                device.used -= 1
                device.used_memory = int32(device.used_memory - usage[0])
                device.used_cores = int32(device.used_cores - usage[1])

    def holds(self, uid: str) -> bool:
        return any(uid in device.pods for device in self.devices.values())

    def _take(self, uid: str, device_id: str, memory: int, cores: int) -> None:
        device = self.devices.get(device_id)
        if device is None or uid in device.pods:
            return
        device.pods[uid] = (memory, cores)
        device.used += 1
        device.used_memory = int32(device.used_memory + memory)  # int32 sums, as Go's
        device.used_cores = int32(device.used_cores + cores)

    # -- choosing cards ----------------------------------------------------------------

    def resolved_request(self, request: VnpuRequest, device: AscendDevice,
                         hami_core: bool) -> VnpuRequest:
        """The request as the best card reads it (Volcano's ``ResourceReqs``): a count
        alone takes the card's memory; template mode rounds memory to a template."""
        memory = request.memory
        if memory == 0 and request.memory_percentage != 0:
            memory = divide(int32(device.memory * request.memory_percentage), 100)
        if memory > 0 and not hami_core:
            # Go keeps the template's memory in an int32 (it wraps past 2^31 MiB).
            memory = int32(self.chip.trim_memory(memory)[0])
        return attrs.evolve(request, memory=memory)

    def select(self, request: VnpuRequest, policy: str, *, hami_core: bool
               ) -> tuple[tuple[AscendDevice, ...], VnpuRequest]:
        """The cards for the request and the request as served (Volcano's
        ``selectDevices`` for one container); raises SelectionError."""
        ranked = sorted(self.devices.values(), key=lambda d: -calc_score(policy, d))
        if not ranked:
            raise SelectionError(NO_DEVICE, FitStatusCode.ERROR)
        needs_topology = (self.chip.common_word.startswith(NETWORK_PREFIX)
                          and all(d.has_network_id for d in ranked))
        served = self.resolved_request(request, ranked[0], hami_core)
        if not hami_core:
            trimmed = self.chip.trim_memory(served.memory)[0]
            if served.count > 1 and trimmed != self.chip.memory_allocatable:
                raise SelectionError(_PARTIAL, FitStatusCode.ERROR)
        left = served.count
        chosen: list[AscendDevice] = []
        for device in ranked:
            if not fit(served, device, self.chip, hami_core=hami_core,
                       device_hami_core=self.hami_core):
                continue
            chosen.append(device)
            left -= 1
            if left <= 0 and not needs_topology:
                break
        if left > 0:
            raise SelectionError(_NOT_ENOUGH, FitStatusCode.UNSCHEDULABLE)
        if needs_topology:
            chosen = _by_network(served.count, chosen)
        return tuple(chosen), served

    def filter(self, request: VnpuRequest, policy: str, *, hami_core: bool
               ) -> tuple[FitStatusCode, str]:
        """Volcano's ``FilterNode``: the status and Volcano's message, and why."""
        try:
            self.select(request, policy, hami_core=hami_core)
        except SelectionError as exc:
            return exc.code, str(exc)
        return FitStatusCode.SUCCESS, ""

    def score(self, request: VnpuRequest, policy: str, *, hami_core: bool) -> float:
        """Volcano's ``ScoreNode``: the policy's score of the first card chosen, plus
        for 910 cards grouped by network the share of the largest group, out of 10."""
        try:
            chosen, _ = self.select(request, policy, hami_core=hami_core)
        except SelectionError:
            return 0.0
        if not chosen:
            return 0.0  # Volcano indexes the empty list (and panics)
        score = calc_score(policy, chosen[0])
        if self.chip.common_word.startswith(NETWORK_PREFIX) and chosen[0].has_network_id:
            groups: dict[int, int] = {}
            for device in chosen[:1]:
                network = device.network_id
                if network is not None:
                    groups[network] = groups.get(network, 0) + 1
            total = sum(groups.values())
            if total == 0:
                return 0.0
            score += max(groups.values()) / total * NETWORK_WEIGHT
        return score

    def allocate(self, uid: str, request: VnpuRequest, policy: str, *, hami_core: bool,
                 node: str, now: int) -> dict[str, str]:
        """Choose the task's cards, count them for it and return the annotations the
        bind carries (Volcano's ``Allocate``); raises SelectionError."""
        chosen, served = self.select(request, policy, hami_core=hami_core)
        held = [ContainerDevice(device.id, self.chip.common_word, served.memory, served.cores)
                for device in chosen]
        for device in held:
            self._take(uid, device.uuid, device.memory, device.cores)
        common = self.chip.common_word
        encoded = encode_devices([held])
        if hami_core:
            runtime: list[dict[str, object]] | None = [
                {**({"UUID": d.uuid} if d.uuid else {}),
                 **({"memory": d.memory} if d.memory else {}),
                 **({"core": d.cores} if d.cores else {})} for d in held]
        else:
            runtime = [{**({"UUID": d.uuid} if d.uuid else {}), **({"temp": name} if (
                name := self.chip.trim_memory(d.memory)[1]) else {})} for d in held]
        stamp = str(now)
        return {
            to_allocate_annotation(common): encoded,
            allocated_annotation(common): encoded,
            PREDICATE_TIME_ANNOTATION: stamp,
            # RuntimeInfo's fields are all omitempty.
            runtime_annotation(common): marshal(runtime or None),
            ASSIGNED_NODE_ANNOTATION: node,
            ASSIGNED_TIME_ANNOTATION: stamp,
            BIND_PHASE_ANNOTATION: "allocating",
            BIND_TIME_ANNOTATION: stamp,
        }

    def check(self, tasks: Iterable[str]) -> None:
        """Raise AssertionError unless every counter adds up from the tasks counted and
        each of them is on the node."""
        on_node = set(tasks)
        for device in self.devices.values():
            assert set(device.pods) <= on_node, f"{self.node}: card {device.id} counts " \
                f"tasks not on the node: {sorted(set(device.pods) - on_node)}"
            assert device.used == len(device.pods), f"{self.node}: card {device.id} users"
            assert device.used_memory == sum(m for m, _ in device.pods.values())
            assert device.used_cores == sum(c for _, c in device.pods.values())


def _by_network(count: int, chosen: list[AscendDevice]) -> list[AscendDevice]:
    """Volcano's ``selectDevicesWithTopology``: the cards of the largest network groups
    first (score order within a group) until ``count``; cards without a numeric
    network are dropped; fewer than asked when the groups run out."""
    groups: dict[int, list[AscendDevice]] = {}
    for device in chosen:
        network = device.network_id
        if network is not None:
            groups.setdefault(network, []).append(device)
    picked: list[AscendDevice] = []
    for members in sorted(groups.values(), key=len, reverse=True):
        for device in members:
            picked.append(device)
            if len(picked) == count:
                return picked
    return picked


def _int_field(info: Mapping[str, object], key: str) -> int:
    value = info.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)
