"""Arguments: a plugin's or action's ``arguments`` mapping with typed getters.

Volcano's ``framework.Arguments`` holds the YAML values as ``yaml.v2`` decodes them
(integers, floats, booleans, strings); the getters read them as its getters do and
fall back to the default when a value is missing or cannot be read as the type asked
for: ``get_int`` takes an integer only (``"10"`` and ``10.0`` are not, as
``GetInt``), ``get_float`` a number (``GetFloat64``), ``get_bool`` a boolean or a
string Go's ``ParseBool`` reads.
A value that is present but cannot be read (a key written without a value, YAML's
null, included: Volcano warns about it too) is not an error (Volcano's fallback is
kept) but is logged as a warning on the ``batchsched`` logger, naming the owner
(the plugin or action, when the caller passes ``owner=``), the argument and the
value, once per process for each value (a plugin is built for every session);
:func:`warn_unreadable` words it for checks a getter cannot make.
:meth:`Arguments.warn_unknown` reports arguments a plugin does not read at all.

>>> args = Arguments({"binpack.weight": 10, "enabled": "true", "ratio": 1.5})
>>> args.get_int("binpack.weight", 1), args.get_bool("enabled", False), args.get_float("ratio", 1)
(10, True, 1.5)
>>> args.get_int("missing", 7)
7
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from batchsched.kube.go_strconv import in_int64, int64

__all__ = [
    "Arguments",
    "collect_warnings",
    "decode_int",
    "parse_duration",
    "parse_duration_ns",
    "warn_unreadable",
    "warned_once",
]

log = logging.getLogger("batchsched")

#: Go's ``time.ParseDuration`` units, in nanoseconds (``µs`` as U+00B5 and U+03BC).
_UNIT_NANOSECONDS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DIGITS = "0123456789"
#: A key absent from the arguments (a YAML null is present: Volcano warns about it).
_MISSING: Any = object()
_LIMIT = 1 << 63


def parse_duration_ns(text: str) -> int:
    """Go's ``time.ParseDuration``, in integer nanoseconds, with Go's own rules: ASCII
    digits only, an int64 that must not overflow, and fractions that add what
    ``float64(f) * (float64(unit) / scale)`` truncates to (``"0.5ns"`` is 0).

    Raises ``ValueError`` for anything Go rejects (surrounding spaces too).

    >>> parse_duration_ns("1h2m3s4ms"), parse_duration_ns("-1.5us")
    (3723004000000, -1500)
    """
    def invalid(why: str = "") -> ValueError:
        return ValueError(f"invalid duration {text!r}{why}")

    rest, negative = text, False
    if rest[:1] in ("-", "+") and rest:
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid()
    total = 0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise invalid()
        # The integer part: past 2**63 is an error.
        i, whole = 0, 0
        while i < len(rest) and rest[i] in _DIGITS:
            if whole > _LIMIT // 10:
                raise invalid(" (overflows int64 nanoseconds)")
            whole = whole * 10 + ord(rest[i]) - 48
            if whole > _LIMIT:
                raise invalid(" (overflows int64 nanoseconds)")
            i += 1
        has_whole, rest = i > 0, rest[i:]
        # The fraction: digits past what an int64 holds are read and ignored.
        fraction, scale, has_fraction = 0, 1.0, False
        if rest[:1] == ".":
            i, rest, overflowed = 0, rest[1:], False
            while i < len(rest) and rest[i] in _DIGITS:
                if not overflowed:
                    if fraction > (_LIMIT - 1) // 10:
                        overflowed = True
                    else:
                        widened = fraction * 10 + ord(rest[i]) - 48
                        if widened > _LIMIT:
                            overflowed = True
                        else:
                            fraction, scale = widened, scale * 10
                i += 1
            has_fraction, rest = i > 0, rest[i:]
        if not has_whole and not has_fraction:
            raise invalid()
        i = 0
        while i < len(rest) and rest[i] != "." and rest[i] not in _DIGITS:
            i += 1
        if i == 0:
            raise invalid(" (missing unit)")
        unit = _UNIT_NANOSECONDS.get(rest[:i])
        if unit is None:
            raise invalid(f" (unknown unit {rest[:i]!r})")
        rest = rest[i:]
        if whole > _LIMIT // unit:
            raise invalid(" (overflows int64 nanoseconds)")
        part = whole * unit
        if fraction > 0:
            part += int(float(fraction) * (float(unit) / scale))
            if part > _LIMIT:
                raise invalid(" (overflows int64 nanoseconds)")
        total += part
        if total > _LIMIT:
            raise invalid(" (overflows int64 nanoseconds)")
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise invalid(" (overflows int64 nanoseconds)")
    return total


def format_duration_ns(nanoseconds: int) -> str:
    """Go's ``time.Duration.String``: ``1h2m3.5s``; under a second in the largest
    unit that keeps an integer part (``1.5ms``, ``250ns``; ``0s`` for zero).

    >>> format_duration_ns(10_000_000_000), format_duration_ns(90_500_000_000)
    ('10s', '1m30.5s')
    >>> format_duration_ns(1_500_000), format_duration_ns(0)
    ('1.5ms', '0s')
    """
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    left = abs(nanoseconds)

    def fraction(value: int, digits: int) -> str:
        whole, part = divmod(value, 10 ** digits)
        tail = f"{part:0{digits}d}".rstrip("0") if part else ""
        return f"{whole}.{tail}" if tail else str(whole)

    if left < 1_000_000_000:
        if left < 1_000:
            return f"{sign}{left}ns"
        if left < 1_000_000:
            return f"{sign}{fraction(left, 3)}\u00b5s"
        return f"{sign}{fraction(left, 6)}ms"
    seconds, part = divmod(left, 1_000_000_000)
    text = fraction(seconds % 60 * 1_000_000_000 + part, 9) + "s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` in seconds: ``"1h2m3s4ms"``, ``"-90s"``, ``"0"``
    (:func:`parse_duration_ns`, divided).

    Raises ``ValueError`` for anything Go would reject (surrounding spaces too).

    >>> parse_duration("1h2m3s")
    3723.0
    """
    return parse_duration_ns(text) / 1e9


def parse_seconds(text: str) -> float:
    """A number of seconds (``"90"``, ``"1.5"``) or a Go duration (``"1h30m"``).

    Raises ``ValueError`` for anything else, a negative amount, or an infinite one.

    >>> parse_seconds("90"), parse_seconds("1h30m")
    (90.0, 5400.0)
    """
    try:
        seconds = float(text)
    except ValueError:
        seconds = parse_duration(text.strip())
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{text!r} is not a finite, non-negative number of seconds")
    return seconds


def warn_unreadable(owner: str, key: str, value: object, expected: str, fallback: object,
                    *, kind: str = "plugin") -> None:
    """Log that argument ``key`` of ``owner`` (a ``kind``: plugin or action) holds
    ``value``, which is not ``expected`` (``"an integer"``, ``"a Go duration such as
    1h30m"``...), and that ``fallback`` is used instead, as a WARNING on the
    ``batchsched`` logger: ``plugin 'capacity': argument 'ancestorReclaimLevel' =
    'two' is not an integer; using 0 instead``.
    """
    who = f"{kind} {owner!r}" if owner else "arguments"
    said = (who, key, repr(value), expected)
    if said in _WARNED_UNREADABLE:
        return  # a plugin is built for every session: once per process is enough
    _WARNED_UNREADABLE.add(said)
    shown = "no value" if fallback is None else repr(fallback)
    if value is None:  # the key written without a value (YAML null)
        log.warning("%s: argument %r has no value (%s expected); using %s instead", who,
                    key, expected, shown)
        return
    log.warning("%s: argument %r = %r is not %s; using %s instead", who, key, value,
                expected, shown)


def decode_int(value: Any, path: str) -> int:
    """Volcano's ``framework.Get[int]`` (mapstructure's decodeInt into a Go int): an
    integer (wrapped to int64, as a uint64 is), a float truncated (one that is not
    finite or past int64 is Go's int64 of it on amd64: -2^63). Anything else raises
    ``ValueError`` naming ``path``: Volcano exits there (``klog.Fatalf``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"argument {path}: expected an integer, got {value!r}")
    if isinstance(value, float):
        if not (math.isfinite(value) and -(2.0**63) <= value < 2.0**63):
            return -(2**63)
        return int(value)
    return int64(value)


#: The strings Go's ``strconv.ParseBool`` reads.
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

#: Every set made by :func:`warned_once`: what collect_warnings empties for its blocks.
_ONCE_SETS: list[set[Any]] = []


def warned_once() -> set[Any]:
    """A new set of what was already warned about once per process (a plugin that
    reads the same bad value every session says so once). :func:`collect_warnings`
    empties every such set for its blocks and restores them after, so that a block
    collects each warning whatever was logged before it."""
    said: set[Any] = set()
    _ONCE_SETS.append(said)
    return said


#: What was already warned about once per process: (plugin, argument) pairs of
#: :meth:`Arguments.warn_inert`, and each plugin's unread arguments
#: (:meth:`Arguments.warn_unknown`).
_WARNED_INERT: set[tuple[str, str]] = warned_once()
#: The unreadable values already said (:func:`warn_unreadable`), once per process.
_WARNED_UNREADABLE: set[tuple[str, str, str, str]] = warned_once()


class _Collecting(logging.Filter):
    """Diverts the warnings of threads inside :func:`collect_warnings` into their
    innermost list (a filter on the logger itself: the records are neither handled
    nor propagated); other threads' records pass."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        lists: list[list[str]] | None = getattr(self.local, "lists", None)
        if lists and record.levelno >= logging.WARNING:
            lists[-1].append(record.getMessage())
            return False
        return True


_COLLECTING = _Collecting()
log.addFilter(_COLLECTING)
_COLLECT_LOCK = threading.Lock()


@contextlib.contextmanager
def collect_warnings() -> Iterator[list[str]]:
    """Collect, instead of logging, the warnings batchsched logs in this thread in the
    block: what plugins and actions say, as they are built, they will not honour
    (switches with no effect here, arguments they do not read, unreadable values
    replaced by a default). Warnings logged once per process are collected even if
    already logged, and are logged again afterwards as if the block had not run.
    Blocks nest (the innermost collects); other threads log as usual.

    >>> with collect_warnings() as said:
    ...     _ = Arguments({"weight": "heavy"}).get_int("weight", 1, owner="demo")
    >>> said
    ["plugin 'demo': argument 'weight' = 'heavy' is not an integer; using 1 instead"]
    """
    collected: list[str] = []
    lists: list[list[str]] = _COLLECTING.local.__dict__.setdefault("lists", [])
    with _COLLECT_LOCK:
        if not _SAVED:  # the first block in the process saves what the last restores
            _SAVED.append(([set(said) for said in _ONCE_SETS], log.level))
            for said in _ONCE_SETS:
                said.clear()
            if not log.isEnabledFor(logging.WARNING):
                log.setLevel(logging.WARNING)  # a quieter logger would drop what we collect
        _SAVED.append(None)
    lists.append(collected)
    try:
        yield collected
    finally:
        lists.pop()
        with _COLLECT_LOCK:
            _SAVED.pop()
            if len(_SAVED) == 1:
                saved = _SAVED.pop()
                assert saved is not None
                # A set made inside the blocks (a plugin module imported there) was
                # empty before them.
                before = saved[0] + [set()] * (len(_ONCE_SETS) - len(saved[0]))
                for said, held in zip(_ONCE_SETS, before, strict=True):
                    said.clear()
                    said.update(held)
                log.setLevel(saved[1])


#: What the open collect_warnings blocks saved: the first entry (the warned-once sets'
#: contents and the logger's level before any block), then one None per open block.
_SAVED: list[tuple[list[set[Any]], int] | None] = []


class Arguments(Mapping[str, Any]):
    """A read-only mapping of argument names to YAML values, with typed getters.

    Each getter takes ``owner`` (the plugin's or action's name) to name in the
    warning logged when a value is present but cannot be read; ``kind`` says what
    the owner is (an action's arguments, the ``configurations`` of a configuration,
    are made with ``kind="action"``).
    """

    __slots__ = ("_before", "_read", "_values", "kind")

    def __init__(self, values: Mapping[str, Any] | None = None, *,
                 kind: str = "plugin", previous: Arguments | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})
        self.kind = kind
        #: What the getters gave for each key present (a fallback included).
        self._read: dict[str, Any] = {}
        #: What the getters of ``previous`` gave: the arguments this object replaces (an
        #: action's, across a configuration reload). A value present here that a getter
        #: cannot read leaves that reading in place, as Volcano's getters leave the
        #: field of an action that lives for the whole process; without it, the
        #: default. (Only what they gave is kept: no chain of earlier arguments.)
        self._before: Mapping[str, Any] = previous._read if previous is not None else {}

    def _readable(self, key: str, value: Any) -> Any:
        self._read[key] = value
        return value

    def _unreadable(self, key: str, value: object, expected: str, *, default: Any,
                    owner: str) -> Any:
        """What a getter gives for a value it cannot read, said once: the previous
        arguments' reading of ``key`` when they have it, else ``default``."""
        if key in self._before:
            default = self._before[key]
        warn_unreadable(owner, key, value, expected, default, kind=self.kind)
        self._read[key] = default
        return default

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Arguments({self._values!r})"

    def get_int(self, key: str, default: int, *, owner: str = "") -> int:
        """A YAML integer (Volcano's ``GetInt``: ``"10"`` or ``10.0`` is not one)."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            return default
        # yaml.v2 reads an integer past int64 as a uint64 (or a float64 below it), which
        # GetInt's assertion to int refuses.
        if isinstance(value, int) and not isinstance(value, bool) and in_int64(value):
            return int(self._readable(key, value))
        result: int = self._unreadable(key, value, "an integer", default=default,
                                       owner=owner)
        return result

    def get_float(self, key: str, default: float, *, owner: str = "") -> float:
        """A YAML number (Volcano's ``GetFloat64``: a float or an integer, not a
        string)."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            return default
        # An integer of 2**63 or more is yaml.v2's uint64, neither float64 nor int.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                isinstance(value, int) and value >= 2**63):
            return float(self._readable(key, float(value)))
        result: float = self._unreadable(key, value, "a number", default=default,
                                         owner=owner)
        return result

    def get_bool(self, key: str, default: bool, *, owner: str = "") -> bool:
        """A YAML boolean or a string Go's ``strconv.ParseBool`` reads, as Volcano's
        ``Arguments.GetBool`` reads it (``1``, ``t``, ``T``, ``TRUE``, ``true``,
        ``True`` and their false forms; anything else keeps the default, logged)."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            return default
        if isinstance(value, bool):
            return bool(self._readable(key, value))
        if isinstance(value, str) and (value in _GO_TRUE or value in _GO_FALSE):
            return bool(self._readable(key, value in _GO_TRUE))
        result: bool = self._unreadable(key, value, "true or false", default=default,
                                        owner=owner)
        return result

    def get_str(self, key: str, default: str = "", *, owner: str = "") -> str:
        """A string; ``default`` when missing or not a string (a number or a boolean
        written without quotes is logged), as Volcano's ``GetString``."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            return default
        if isinstance(value, str):
            return str(self._readable(key, value))
        result: str = self._unreadable(key, value, "a string", default=default,
                                       owner=owner)
        return result

    @overload
    def get_duration(self, key: str, default: float, *, owner: str = "") -> float: ...

    @overload
    def get_duration(self, key: str, default: None = None, *,
                     owner: str = "") -> float | None: ...

    def get_duration(
        self, key: str, default: float | None = None, *, owner: str = ""
    ) -> float | None:
        """A Go duration string in seconds; ``default`` when missing or unreadable (a
        value that is not a Go duration string is logged)."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            return default
        if isinstance(value, str):
            try:
                return float(self._readable(key, parse_duration(value)))
            except ValueError:
                pass
        result: float | None = self._unreadable(
            key, value, "a Go duration such as \"1h30m\"", default=default, owner=owner)
        return result

    def warn_inert(self, owner: str, switches: Mapping[str, str]) -> list[str]:
        """Log, once per process and switch, each of ``switches`` (argument -> why it
        does nothing here) that the configuration turns on: true for an enable flag,
        a non-zero weight. Volcano users set them; batchsched must not ignore them
        silently. Returns those turned on."""
        return self._warn_switches(owner, switches, turned_on=True)

    def warn_cannot_turn_off(self, owner: str, switches: Mapping[str, str]) -> list[str]:
        """As :meth:`warn_inert`, for switches the configuration turns off (false) where
        what they switch stays on (argument -> why). Returns those turned off."""
        return self._warn_switches(owner, switches, turned_on=False)

    def _warn_switches(self, owner: str, switches: Mapping[str, str], *,
                       turned_on: bool) -> list[str]:
        said = []
        for key, why in switches.items():
            if key not in self._values:
                continue
            value = self._values[key]
            # Off as Volcano reads a switch: false, 0, or text Go's ParseBool reads false.
            off = value is False or (value == 0 and not isinstance(value, bool)) or (
                isinstance(value, str) and value in _GO_FALSE)
            if off == turned_on:
                continue
            said.append(key)
            if (owner, key) not in _WARNED_INERT:
                _WARNED_INERT.add((owner, key))
                log.warning("%s %r: %s=%r has no effect: %s", self.kind, owner, key, value,
                            why)
        return said

    def warn_unknown(self, owner: str, known: Iterable[str] = (), *,
                     prefixes: Iterable[str] = (), kind: str = "") -> list[str]:
        """Log the arguments ``owner`` does not read (neither in ``known`` nor
        starting with one of ``prefixes``), which Volcano ignores silently, once per
        process (a plugin is built for every session); returns them, sorted. ``kind``
        (plugin or action) defaults to the arguments' own."""
        kind = kind or self.kind
        names, starts = set(known), tuple(prefixes)
        unknown = sorted(k for k in self._values if k not in names and not k.startswith(starts))
        said = (f"{kind} {owner}", "unread: " + ", ".join(unknown))
        if unknown and said not in _WARNED_INERT:
            _WARNED_INERT.add(said)
            reads = ", ".join(sorted(names) + [f"{p}*" for p in starts]) or "no arguments"
            log.warning("%s %r: ignoring argument(s) %s (it reads: %s)", kind, owner,
                        ", ".join(repr(k) for k in unknown), reads)
        return unknown
