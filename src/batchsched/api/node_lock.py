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
from collections.abc import Mapping

from batchsched.api import ascend_annotations, gpushare, vgpu

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


class NodeLockError(Exception):
    """The node's lock is held (or cannot be read): the placement fails."""


def lock_time(text: str) -> float:
    """The time (seconds since the epoch) a lock annotation says it was taken, read as
    Go's ``time.Parse(time.RFC3339, ...)`` reads it; ValueError otherwise.

    Go's general layout parser decides, and it is laxer than RFC 3339 in places: the
    hour may have one digit, the year may be 0000 (or signed), a zone offset's
    minutes may be 60, a fraction of any length after the seconds is cut to
    nanoseconds; digits are ASCII only.
    """
    try:
        return _parse_rfc3339(text)
    except _LayoutError as exc:
        raise ValueError(f'parsing time "{text}" as "{_GO_RFC3339}": {exc}') from None


class _LayoutError(Exception):
    pass


def _digits(text: str, at: int, fixed: bool) -> tuple[int, int]:
    """Go's ``getnum``: two digits at ``at`` (one allowed unless ``fixed``)."""
    if not _is_digit(text, at):
        raise _LayoutError("cannot parse a number")
    if not _is_digit(text, at + 1):
        if fixed:
            raise _LayoutError("cannot parse a two-digit number")
        return int(text[at]), at + 1
    return int(text[at:at + 2]), at + 2


def _is_digit(text: str, at: int) -> bool:
    return at < len(text) and "0" <= text[at] <= "9"


def _expect(text: str, at: int, literal: str) -> int:
    if not text.startswith(literal, at):
        raise _LayoutError(f"cannot parse {text[at:]!r} as {literal!r}")
    return at + len(literal)


def _parse_rfc3339(text: str) -> float:
    # The year: four characters read by Go's atoi (a sign, then digits).
    year_text = text[:4]
    body = year_text[1:] if year_text[:1] in "+-" else year_text
    if len(year_text) < 4 or not body or not all("0" <= c <= "9" for c in body):
        raise _LayoutError("cannot parse the year")
    year = int(year_text)
    at = _expect(text, 4, "-")
    month, at = _digits(text, at, True)
    at = _expect(text, at, "-")
    day, at = _digits(text, at, True)
    at = _expect(text, at, "T")
    hour, at = _digits(text, at, False)
    at = _expect(text, at, ":")
    minute, at = _digits(text, at, True)
    at = _expect(text, at, ":")
    second, at = _digits(text, at, True)
    nanos = 0
    if at + 1 < len(text) and text[at] in ".," and _is_digit(text, at + 1):
        end = at + 1
        while _is_digit(text, end):
            end += 1
        nanos = int(text[at + 1:min(end, at + 10)].ljust(9, "0"))
        at = end
    if text[at:at + 1] == "Z":
        offset, at = 0, at + 1
    else:
        zone = text[at:at + 6]
        if len(zone) < 6 or zone[3] != ":":
            raise _LayoutError("cannot parse the time zone")
        hours, _ = _digits(zone, 1, True)
        minutes, _ = _digits(zone, 4, True)
        if zone[0] not in "+-":
            raise _LayoutError("cannot parse the time zone")
        if hours > 24 or minutes > 60:
            raise _LayoutError("time zone offset out of range")
        offset = (hours * 60 + minutes) * 60 * (-1 if zone[0] == "-" else 1)
        at += 6
    if at != len(text):
        raise _LayoutError(f"extra text: {text[at:]!r}")
    if not 1 <= month <= 12 or hour >= 24 or minute >= 60 or second >= 60:
        raise _LayoutError("month, hour, minute or second out of range")
    if not 1 <= day <= _days_in(month, year):
        raise _LayoutError("day out of range")
    days = _days_from_civil(year, month, day)
    return days * 86400 + hour * 3600 + minute * 60 + second - offset + nanos / 1e9


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the date in the proleptic Gregorian calendar (any year,
    year 0 and before included, as Go's calendar has them)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_era_days = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_era_days - 719468


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
    for one it gave GPUs (or Volcano gpushare cards)."""
    released: list[str] = []
    if vgpu.BIND_PHASE_ANNOTATION in annotations:
        released.append(VGPU_LOCK)
    if ascend_annotations.BIND_PHASE_ANNOTATION in annotations:
        released.append(ASCEND_LOCK)
    if gpu_devices or gpushare.GPU_INDEX_ANNOTATION in annotations:
        released.append(GPU_SHARE_LOCK)
    return tuple(released)
