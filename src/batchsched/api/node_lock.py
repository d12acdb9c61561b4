"""HAMi's node lock, as Volcano's device plugins take it (``deviceshare.NodeLockEnable``).

When a session places a pod that asks shared devices, Volcano's ``Allocate`` writes a
lock annotation on the node (on the API server, at once, whatever becomes of the
placement): the lock's name is the annotation's key, the time it was taken (RFC 3339,
seconds) its value. Until the node's device plugin has given the pod its devices and
released the lock, no other pod asking the same kind of device may be placed there:
``Allocate`` fails with "has been locked within 5 minutes". A lock older than five
minutes is taken over. So, with the lock on, a node takes at most one such pod per
session, and a placement the session undoes (a gang that could not be completed) leaves
its lock behind until it expires.

The names are Volcano's: ``hamivgpu`` for vGPUs, ``hami.io/mutex.lock`` for HAMi's
Ascend vNPUs, ``gpu`` for GPU sharing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

from batchsched.api import ascend_annotations, vgpu

__all__ = ["ASCEND_LOCK", "GPU_SHARE_LOCK", "LOCK_EXPIRY_SECONDS", "VGPU_LOCK",
           "NodeLockError", "format_lock_time", "lock_time", "locks_released_by",
           "take_node_lock"]

#: The lock vGPU pods take (Volcano's vGPU ``DeviceName``).
VGPU_LOCK = "hamivgpu"
#: The lock HAMi's Ascend vNPU pods take.
ASCEND_LOCK = "hami.io/mutex.lock"
#: The lock pods sharing a GPU take (Volcano's GPU sharing mode; not its number mode).
GPU_SHARE_LOCK = "gpu"
#: How long a lock holds before another pod may take it over (Volcano's five minutes).
LOCK_EXPIRY_SECONDS = 300.0

_GO_RFC3339 = "2006-01-02T15:04:05Z07:00"
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
                      r"(Z|[+-]\d{2}:\d{2})")


class NodeLockError(Exception):
    """The node's lock is held (or cannot be read): the placement fails."""


def lock_time(text: str) -> float:
    """The time (seconds since the epoch) a lock annotation says it was taken, read as
    Go's ``time.Parse(time.RFC3339, ...)`` reads it; ValueError otherwise."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f'parsing time "{text}" as "{_GO_RFC3339}": not an RFC 3339 time')
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    offset = 0
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 24 or minutes > 59:
            raise ValueError(f'parsing time "{text}": time zone offset out of range')
        offset = (hours * 60 + minutes) * 60 * (-1 if zone[0] == "-" else 1)
    try:
        moment = dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.timezone.utc)
    except ValueError as exc:
        raise ValueError(f'parsing time "{text}": {exc}') from None
    seconds = moment.timestamp() - offset
    if fraction:
        seconds += int(fraction) / 10 ** len(fraction)
    return seconds


def format_lock_time(now: float) -> str:
    """``now`` as a lock's value: RFC 3339 in UTC, whole seconds (Go's ``Format``
    truncates)."""
    moment = dt.datetime.fromtimestamp(int(now // 1), tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def take_node_lock(node: str, annotations: Mapping[str, str], name: str, now: float) -> str:
    """The value to write under ``name`` on the node to take its lock at ``now``
    (Volcano's ``LockNode``); NodeLockError when a lock under that name was taken
    within the last five minutes, or its time cannot be read."""
    held = annotations.get(name)
    if held is not None:
        try:
            taken = lock_time(held)
        except ValueError as exc:
            raise NodeLockError(str(exc)) from None
        if now - taken <= LOCK_EXPIRY_SECONDS:
            raise NodeLockError(f"node {node} has been locked within 5 minutes")
    return format_lock_time(now)


def locks_released_by(annotations: Mapping[str, str], gpu_devices: tuple[int, ...]
                      ) -> tuple[str, ...]:
    """The locks the node's device plugins release when they give a pod bound there its
    devices: the vGPU plugin for a pod the scheduler gave vGPUs (its bind phase
    annotation), HAMi's Ascend plugin for one it gave vNPUs, the GPU sharing plugin
    for one it gave GPUs."""
    released: list[str] = []
    if vgpu.BIND_PHASE_ANNOTATION in annotations:
        released.append(VGPU_LOCK)
    if ascend_annotations.BIND_PHASE_ANNOTATION in annotations:
        released.append(ASCEND_LOCK)
    if gpu_devices:
        released.append(GPU_SHARE_LOCK)
    return tuple(released)
