"""Arguments: a plugin's or action's ``arguments`` mapping with typed getters.

Volcano's ``framework.Arguments`` reads YAML values that may be numbers, booleans
or strings; the getters accept all of these the way Volcano does and fall back
to the default when a value is missing or cannot be read as the type asked for.

>>> args = Arguments({"binpack.weight": "10", "enabled": "true", "ratio": 1.5})
>>> args.get_int("binpack.weight", 1), args.get_bool("enabled", False), args.get_float("ratio", 1)
(10, True, 1.5)
>>> args.get_int("missing", 7)
7
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["Arguments", "parse_duration"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` in seconds: ``"1h2m3s4ms"``, ``"-90s"``, ``"0"``.

    Raises ``ValueError`` for anything Go would reject.

    >>> parse_duration("1h2m3s")
    3723.0
    """
    raw = text.strip()
    if raw in ("0", "+0", "-0"):
        return 0.0
    sign = 1.0
    if raw[:1] in "+-" and raw:
        sign = -1.0 if raw[0] == "-" else 1.0
        raw = raw[1:]
    if not raw:
        raise ValueError(f"invalid duration {text!r}")
    pos, total = 0, 0.0
    while pos < len(raw):
        match = _DURATION_PART.match(raw, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match[1]) * _UNIT_SECONDS[match[2]]
        pos = match.end()
    return sign * total


class Arguments(Mapping[str, Any]):
    """A read-only mapping of argument names to YAML values, with typed getters."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Arguments({self._values!r})"

    def get_int(self, key: str, default: int) -> int:
        value = self._values.get(key)
        if isinstance(value, bool) or value is None:
            return default
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                return default
        return default

    def get_float(self, key: str, default: float) -> float:
        value = self._values.get(key)
        if isinstance(value, bool) or value is None:
            return default
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                return default
        return default

    def get_bool(self, key: str, default: bool) -> bool:
        value = self._values.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "1", "t", "yes"):
                return True
            if lowered in ("false", "0", "f", "no"):
                return False
        return default

    def get_str(self, key: str, default: str = "") -> str:
        value = self._values.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def get_duration(self, key: str) -> float | None:
        """A Go duration string in seconds, or None when missing or not a string."""
        value = self._values.get(key)
        if not isinstance(value, str):
            return None
        try:
            return parse_duration(value)
        except ValueError:
            return None
