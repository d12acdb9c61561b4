"""The annotations HAMi's Ascend vNPUs are told by (:mod:`batchsched.api.ascend`): the
cards a node registers (read as Go's ``encoding/json`` reads them), the cards a task
holds (``id,type,memory,cores:`` per card, ``;`` after each container) and what a
placement writes for the bind and a placement undone takes off again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from batchsched.api.task import TaskInfo
from batchsched.api.vgpu import ContainerDevice
from batchsched.kube.go_json import ANY, Int, MapOf, Ptr, SliceOf, Struct, decode
from batchsched.kube.go_strconv import parse_int

__all__ = [
    "ALLOCATED_SUFFIX",
    "ASSIGNED_NODE_ANNOTATION",
    "ASSIGNED_TIME_ANNOTATION",
    "BIND_PHASE_ANNOTATION",
    "BIND_TIME_ANNOTATION",
    "PREDICATE_TIME_ANNOTATION",
    "REGISTER_PREFIX",
    "allocated_annotation",
    "assigned_vnpus",
    "decode_devices",
    "drop_vnpu_annotations",
    "encode_devices",
    "read_register",
    "register_annotation",
    "release_keys",
    "runtime_annotation",
    "to_allocate_annotation",
]

ASSIGNED_NODE_ANNOTATION = "hami.io/vgpu-node"
ASSIGNED_TIME_ANNOTATION = "hami.io/vgpu-time"
BIND_TIME_ANNOTATION = "hami.io/bind-time"
BIND_PHASE_ANNOTATION = "hami.io/bind-phase"
PREDICATE_TIME_ANNOTATION = "predicate-time"


#: What the annotations of :func:`register_annotation` and :func:`allocated_annotation`
#: start and end with, around the card type.
REGISTER_PREFIX = "hami.io/node-register-"
ALLOCATED_SUFFIX = "-devices-allocated"


def register_annotation(common_word: str) -> str:
    """The node annotation a device plugin registers its cards of a type in."""
    return f"{REGISTER_PREFIX}{common_word}"


def to_allocate_annotation(common_word: str) -> str:
    return f"hami.io/{common_word}-devices-to-allocate"


def allocated_annotation(common_word: str) -> str:
    """The task annotation naming the cards it holds (``id,type,memory,cores:``)."""
    return f"hami.io/{common_word}{ALLOCATED_SUFFIX}"


def runtime_annotation(common_word: str) -> str:
    return f"huawei.com/{common_word}"


def encode_devices(containers: Iterable[Iterable[ContainerDevice]]) -> str:
    """``id,type,memory,cores:`` per card, ``;`` after each container."""
    return "".join("".join(f"{d.uuid},{d.type},{d.memory},{d.cores}:" for d in devices) + ";"
                   for devices in containers)


def decode_devices(text: str) -> tuple[ContainerDevice, ...]:
    """The cards an annotation names (Volcano's ``DecodeContainerDevices`` on the whole
    value): entries without a comma are skipped, a number reads as Go's
    ``ParseInt(.., 10, 32)`` reads it with its error ignored (0 when it is no number,
    the 32-bit bound when out of range); an entry with fewer than four fields makes
    the value unreadable (ValueError)."""
    devices = []
    for entry in text.split(":"):
        if "," not in entry:
            continue
        fields = entry.split(",")
        if len(fields) < 4:
            raise ValueError("pod annotation format error; information missing, please do "
                             "not use nodeName field in task")
        devices.append(ContainerDevice(fields[0], fields[1], parse_int(fields[2], 32)[0],
                                       parse_int(fields[3], 32)[0]))
    return tuple(devices)


def assigned_vnpus(annotations: Mapping[str, str]) -> list[dict[str, object]] | None:
    """The cards a task's annotations say it holds, of every type (None: none)."""
    held: list[dict[str, object]] = []
    for key, value in annotations.items():
        if key.startswith("hami.io/") and key.endswith("-devices-allocated") and value:
            try:
                held.extend(device.to_json() for device in decode_devices(value))
            except ValueError:
                continue
    return held or None


def release_keys(common_words: Iterable[str]) -> tuple[str, ...]:
    """The annotations a placement undone takes off the task (Volcano's ``Release``:
    those of every configured chip type, by common word)."""
    keys = [ASSIGNED_NODE_ANNOTATION, ASSIGNED_TIME_ANNOTATION, BIND_PHASE_ANNOTATION,
            BIND_TIME_ANNOTATION, PREDICATE_TIME_ANNOTATION]
    for common_word in common_words:
        keys += [to_allocate_annotation(common_word), allocated_annotation(common_word),
                 runtime_annotation(common_word)]
    return tuple(keys)


def drop_vnpu_annotations(task: TaskInfo) -> None:
    """Take off a task the cards a placement wrote on it, of any chip type (a new
    mapping: the old one may be shared with the task's copies)."""
    annotations = task.annotations
    chips = {key[len("hami.io/"):-len("-devices-allocated")] for key in annotations
             if key.startswith("hami.io/") and key.endswith("-devices-allocated")}
    if not chips:
        return
    keys = set(release_keys(chips))
    task.annotations = {key: value for key, value in annotations.items() if key not in keys}


#: HAMi's ``DeviceInfo``, as Go decodes a register annotation into it.
DEVICE_INFO = Struct({
    "id": "string", "index": Int(64, unsigned=True), "count": Int(32), "devmem": Int(32),
    "devcore": Int(32), "type": "string", "numa": Int(64), "mode": "string",
    "health": "bool", "devicevendor": "string", "custominfo": MapOf(ANY),
    "devicepairscore": Struct({"uuid": "string", "score": MapOf(Int(64))}),
}, name="DeviceInfo")


def read_register(text: str) -> list[dict[str, Any]]:
    """A register annotation as Go's ``encoding/json`` reads it into HAMi's device list
    (:mod:`batchsched.kube.go_json`: field names matched exactly or else
    case-insensitively, a later key last, ``null`` leaving a number or string as it
    was); a value Go refuses (a string count, ``21527.5`` or ``1e3`` for an integer,
    ``NaN``) makes the whole annotation unreadable (ValueError). A ``null`` device is
    refused too (Volcano's scheduler fails on it)."""
    devices = decode(text, SliceOf(Ptr(DEVICE_INFO)), what="devices")
    if devices is None:
        return []
    for position, device in enumerate(devices):
        if device is None:
            raise ValueError(f"device {position} is null")
    return list(devices)


