"""Resource vectors with Volcano's units and comparison rules.

CPU is held in millicores, memory in bytes, every other resource ("scalar") in
milli-units (2 GPUs are ``2000``), except ``pods``, which is a plain count.
Every task requests one ``pods`` implicitly.

Comparisons follow Volcano's ``api.Resource`` exactly, and they are subtle:

* two amounts are "less or equal" when ``l < r`` or ``|l - r| < 0.1`` (the
  minimum-resource epsilon, :data:`MIN_RESOURCE`);
* a scalar present on the left and absent on the right is compared with 0 under
  :attr:`DimensionDefault.ZERO` and skipped under
  :attr:`DimensionDefault.INFINITY`; with ``INFINITY``, a scalar present only on
  the right makes ``less_equal`` false (Volcano's rule, kept as is);
* :meth:`Resource.is_empty` ignores ``pods``; ``*_with_dimension`` comparisons
  look only at the dimensions a request asks for (> 0), ignoring ``pods``.

>>> r = Resource.from_mapping({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2})
>>> r.milli_cpu, r.memory, r.get("nvidia.com/gpu")
(500.0, 1073741824.0, 2000.0)
>>> r.less_equal(Resource.from_mapping({"cpu": 1, "memory": "2Gi", "nvidia.com/gpu": 2}))
True
"""

from __future__ import annotations

import enum
import functools
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping

from batchsched.errors import QuantityError
from batchsched.kube.quantity import canonical_quantity, parse_quantity

__all__ = [
    "CPU",
    "MEMORY",
    "MIN_RESOURCE",
    "PODS",
    "DimensionDefault",
    "Resource",
    "format_quantity",
]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
#: Two amounts closer than this are equal (Volcano's ``minResource``).
MIN_RESOURCE = 0.1


class DimensionDefault(enum.Enum):
    """How a scalar dimension missing on one side of a comparison is read."""

    ZERO = 0
    INFINITY = -1


_ZERO = DimensionDefault.ZERO
_INFINITY = DimensionDefault.INFINITY


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


class Resource:
    """A mutable resource vector (Volcano's ``api.Resource``).

    In-place operations (:meth:`add`, :meth:`sub`, :meth:`multi`, ...) return
    ``self`` so they chain like Volcano's; the operators ``+`` and ``-`` return
    new vectors.
    """

    __slots__ = ("memory", "milli_cpu", "scalars")

    def __init__(
        self,
        milli_cpu: float = 0.0,
        memory: float = 0.0,
        scalars: Mapping[str, float] | None = None,
    ) -> None:
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = (
            {k: float(v) for k, v in scalars.items()} if scalars else {}
        )

    # -- construction -------------------------------------------------------------

    @classmethod
    def from_mapping(cls, quantities: Mapping[str, object]) -> Resource:
        """Build from Kubernetes quantities: ``{"cpu": "500m", "memory": "1Gi"}``.

        Raises :class:`~batchsched.errors.QuantityError` naming the resource when a
        quantity is malformed or negative.
        """
        res = cls()
        for name, raw in quantities.items():
            whole = name in (MEMORY, PODS)
            try:
                amount = _amount(raw, whole) if isinstance(raw, (str, int, float)) else (
                    _amount_uncached(raw, whole))
            except QuantityError as exc:
                why = f": {exc.reason}" if exc.reason else ""
                raise QuantityError(raw, f"resource {name}{why}") from exc
            res.set(name, amount)
        return res

    @classmethod
    def sum(cls, resources: Iterable[Resource]) -> Resource:
        """The resources added up one after the other: what ``Resource()`` and
        :meth:`add` of each give, bit for bit, without a call per resource (sessions
        sum every node's figures)."""
        cpu = memory = 0.0
        scalars: dict[str, float] = {}
        for res in resources:
            cpu += res.milli_cpu
            memory += res.memory
            if res.scalars:
                for name, amount in res.scalars.items():
                    scalars[name] = scalars.get(name, 0.0) + amount
        total = cls.__new__(cls)
        total.milli_cpu, total.memory, total.scalars = cpu, memory, scalars
        return total

    @classmethod
    def infinite(cls) -> Resource:
        """Volcano's ``InfiniteResource``: cpu and memory at the largest float (Go's
        ``math.MaxFloat64``: it compares equal to itself, and less it is 0), no
        scalars."""
        return cls(sys.float_info.max, sys.float_info.max)

    def clone(self) -> Resource:
        res = Resource.__new__(Resource)
        res.milli_cpu = self.milli_cpu
        res.memory = self.memory
        scalars = self.scalars
        res.scalars = dict(scalars) if scalars else {}
        return res

    def without(self, names: Iterable[str]) -> Resource:
        """A copy without the named scalars (the same object when it has none of them)."""
        scalars = self.scalars
        if not scalars or not any(name in scalars for name in names):
            return self
        res = self.clone()
        for name in names:
            res.scalars.pop(name, None)
        return res

    # -- access ---------------------------------------------------------------------

    def get(self, name: str) -> float:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0.0)

    def set(self, name: str, amount: float) -> None:
        if name == CPU:
            self.milli_cpu = float(amount)
        elif name == MEMORY:
            self.memory = float(amount)
        else:
            self.scalars[name] = float(amount)

    def has(self, name: str) -> bool:
        """Whether the dimension is set (cpu and memory always are)."""
        return name in (CPU, MEMORY) or name in self.scalars

    def names(self) -> Iterator[str]:
        """cpu, memory, then every scalar set, in insertion order."""
        yield CPU
        yield MEMORY
        yield from self.scalars

    def unmeasurable(self) -> tuple[str, float] | None:
        """The first dimension holding no amount a cluster can have (negative, NaN or
        infinite), with that amount; None when every one is a real amount. The cache
        refuses such requests and allocatables: they would break every later session."""
        for name, amount in ((CPU, self.milli_cpu), (MEMORY, self.memory),
                             *self.scalars.items()):
            if not (0 <= amount < math.inf):  # NaN fails it too
                return name, amount
        return None

    def resource_names(self) -> list[str]:
        """The dimensions holding at least :data:`MIN_RESOURCE` (Volcano's ``ResourceNames``)."""
        out = []
        if self.milli_cpu >= MIN_RESOURCE:
            out.append(CPU)
        if self.memory >= MIN_RESOURCE:
            out.append(MEMORY)
        out.extend(n for n, q in self.scalars.items() if q >= MIN_RESOURCE)
        return out

    def is_empty(self) -> bool:
        """No dimension other than ``pods`` holds at least :data:`MIN_RESOURCE`."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(q < MIN_RESOURCE for n, q in self.scalars.items() if n != PODS)

    def is_zero(self, name: str) -> bool:
        return self.get(name) < MIN_RESOURCE

    def to_dict(self, *, all_dimensions: bool = False) -> dict[str, float]:
        """Internal units by name; zero dimensions are left out unless asked for."""
        out: dict[str, float] = {}
        for name in self.names():
            amount = self.get(name)
            if all_dimensions or amount:
                out[name] = amount
        return out

    def to_quantities(self) -> dict[str, str]:
        """Kubernetes quantities in their canonical form, as Volcano writes a resource
        list (``{"cpu": "1500m", "memory": "1Gi"}``)."""
        out: dict[str, str] = {}
        for name, amount in self.to_dict().items():
            out[name] = format_quantity(name, amount)
        return out

    # -- arithmetic (in place) -----------------------------------------------------

    def add(self, other: Resource) -> Resource:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        scalars = self.scalars
        for name, amount in other.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + amount
        return self

    def sub(self, other: Resource) -> Resource:
        """Subtract, requiring ``other <= self`` (Volcano asserts; we raise ``ValueError``)."""
        if not other.less_equal(self, _ZERO):
            raise ValueError(f"resource is not sufficient to do operation: {self} sub {other}")
        return self.sub_unchecked(other)

    def sub_unchecked(self, other: Resource) -> Resource:
        """Subtract, allowing negative results (Volcano's ``SubWithoutAssert``).

        As in Volcano, a scalar of ``other`` missing here is subtracted from 0.
        """
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        scalars = self.scalars
        for name, amount in other.scalars.items():
            scalars[name] = scalars.get(name, 0.0) - amount
        return self

    def readd(self, request: Resource) -> Resource:
        """``sub_unchecked(request).add(request)`` in one call, for a task whose status
        changed (Volcano takes its request off, then puts it back).

        The float operations are those of the two calls, in the same order: each
        dimension becomes ``(x - request) + request``, which for non-integral amounts
        may differ from ``x``.
        """
        if request is self:  # the second step must see the first
            return self.sub_unchecked(request).add(request)
        self.milli_cpu = (self.milli_cpu - request.milli_cpu) + request.milli_cpu
        self.memory = (self.memory - request.memory) + request.memory
        scalars = self.scalars
        get = scalars.get
        # One pass does what the two calls' passes do: each name is subtracted then
        # added back, and a name missing here is inserted in the same order.
        for name, amount in request.scalars.items():
            scalars[name] = (get(name, 0.0) - amount) + amount
        return self

    def sub_then_add(self, removed: Resource, added: Resource) -> Resource:
        """``sub_unchecked(removed).add(added)`` in one call: each dimension becomes
        ``(x - removed) + added``, the same float operations in the same order (see
        :meth:`readd`)."""
        if removed is self or added is self:  # the second step must see the first
            return self.sub_unchecked(removed).add(added)
        self.milli_cpu = (self.milli_cpu - removed.milli_cpu) + added.milli_cpu
        self.memory = (self.memory - removed.memory) + added.memory
        scalars = self.scalars
        for name, amount in removed.scalars.items():
            scalars[name] = scalars.get(name, 0.0) - amount
        for name, amount in added.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + amount
        return self

    def add_then_sub(self, added: Resource, removed: Resource) -> Resource:
        """``add(added).sub_unchecked(removed)`` in one call: each dimension becomes
        ``(x + added) - removed``, the same float operations in the same order."""
        if removed is self or added is self:
            return self.add(added).sub_unchecked(removed)
        self.milli_cpu = (self.milli_cpu + added.milli_cpu) - removed.milli_cpu
        self.memory = (self.memory + added.memory) - removed.memory
        scalars = self.scalars
        for name, amount in added.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + amount
        for name, amount in removed.scalars.items():
            scalars[name] = scalars.get(name, 0.0) - amount
        return self

    def multi(self, ratio: float) -> Resource:
        self.milli_cpu *= ratio
        self.memory *= ratio
        for name in self.scalars:
            self.scalars[name] *= ratio
        return self

    def set_max(self, other: Resource) -> Resource:
        """Per dimension, the larger of the two (Volcano's ``SetMaxResource``)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        for name, amount in other.scalars.items():
            if name not in self.scalars or amount > self.scalars[name]:
                self.scalars[name] = amount
        return self

    def min_dimension(self, other: Resource, default: DimensionDefault = _ZERO) -> Resource:
        """Per dimension, the smaller of the two (Volcano's ``MinDimensionResource``).

        A scalar missing in ``other`` becomes 0 under ``ZERO`` and is kept under
        ``INFINITY``.
        """
        self.milli_cpu = min(self.milli_cpu, other.milli_cpu)
        self.memory = min(self.memory, other.memory)
        for name, amount in self.scalars.items():
            if name in other.scalars:
                self.scalars[name] = min(amount, other.scalars[name])
            elif default is _ZERO:
                self.scalars[name] = 0.0
        return self

    def fit_delta(self, request: Resource) -> Resource:
        """Available minus requested minus epsilon, on requested dimensions only.

        A dimension below 0 afterwards is insufficient (Volcano's ``FitDelta``).
        """
        if request.milli_cpu > 0:
            self.milli_cpu -= request.milli_cpu + MIN_RESOURCE
        if request.memory > 0:
            self.memory -= request.memory + MIN_RESOURCE
        for name, amount in request.scalars.items():
            if amount > 0:
                self.scalars[name] = self.scalars.get(name, 0.0) - (amount + MIN_RESOURCE)
        return self

    # -- arithmetic (new objects) --------------------------------------------------

    def __add__(self, other: Resource) -> Resource:
        return self.clone().add(other)

    def __sub__(self, other: Resource) -> Resource:
        return self.clone().sub_unchecked(other)

    # -- comparisons ---------------------------------------------------------------

    def less_equal(self, other: Resource, default: DimensionDefault = _ZERO) -> bool:
        """Every dimension of ``self`` fits in ``other`` (within the epsilon)."""
        if not _le(self.milli_cpu, other.milli_cpu) or not _le(self.memory, other.memory):
            return False
        right = other.scalars
        if default is _INFINITY:
            for name in right:
                if name not in self.scalars:
                    return False
            for name, amount in self.scalars.items():
                if name in right and not _le(amount, right[name]):
                    return False
            return True
        return all(_le(amount, right.get(name, 0.0)) for name, amount in self.scalars.items())

    def less_equal_with_names(
        self, other: Resource, default: DimensionDefault = _ZERO
    ) -> tuple[bool, list[str]]:
        """Like :meth:`less_equal`, also naming the insufficient dimensions.

        Volcano's ``LessEqualWithResourcesName``: unlike ``less_equal`` it never
        fails because of a scalar present only in ``other``.
        """
        short: list[str] = []
        if not _le(self.milli_cpu, other.milli_cpu):
            short.append(CPU)
        if not _le(self.memory, other.memory):
            short.append(MEMORY)
        right = other.scalars
        for name, amount in self.scalars.items():
            if name not in right and default is _INFINITY:
                continue
            if not _le(amount, right.get(name, 0.0)):
                short.append(name)
        return not short, short

    def less_equal_with_dimension(
        self, other: Resource, request: Resource | None
    ) -> tuple[bool, list[str]]:
        """Compare only the dimensions ``request`` asks for (> 0), ignoring ``pods``.

        No epsilon here (Volcano's ``LessEqualWithDimensionAndResourcesName``).
        With no request, this is :meth:`less_equal_with_names` under ``ZERO``.
        """
        if request is None:
            return self.less_equal_with_names(other, _ZERO)
        short: list[str] = []
        if request.milli_cpu > 0 and self.milli_cpu > other.milli_cpu:
            short.append(CPU)
        if request.memory > 0 and self.memory > other.memory:
            short.append(MEMORY)
        if self.scalars:
            for name, amount in request.scalars.items():
                if name == PODS or amount <= 0:
                    continue
                if self.scalars.get(name, 0.0) > other.scalars.get(name, 0.0):
                    short.append(name)
        return not short, short

    def less(self, other: Resource, default: DimensionDefault = _ZERO) -> bool:
        """Every dimension strictly smaller (Volcano's ``Less``)."""
        if not (self.milli_cpu < other.milli_cpu and self.memory < other.memory):
            return False
        right = other.scalars
        if default is _INFINITY:
            if any(name not in self.scalars for name in right):
                return False
            return all(a < right[n] for n, a in self.scalars.items() if n in right)
        return all(a < right.get(n, 0.0) for n, a in self.scalars.items())

    def less_partly(self, other: Resource, default: DimensionDefault = _ZERO) -> bool:
        """At least one dimension strictly smaller (Volcano's ``LessPartly``).

        Under ``ZERO`` a scalar present only in ``other`` counts as smaller, whatever
        its amount (Volcano's rule); under ``INFINITY`` so does one present only here.
        """
        if self.milli_cpu < other.milli_cpu or self.memory < other.memory:
            return True
        return self._partly(other, default, lambda a, b: a < b)

    def less_equal_partly(self, other: Resource, default: DimensionDefault = _ZERO) -> bool:
        """At least one dimension fits within the epsilon (Volcano's ``LessEqualPartly``)."""
        if _le(self.milli_cpu, other.milli_cpu) or _le(self.memory, other.memory):
            return True
        return self._partly(other, default, _le)

    def _partly(
        self, other: Resource, default: DimensionDefault, holds: Callable[[float, float], bool]
    ) -> bool:
        right = other.scalars
        if default is _ZERO and any(name not in self.scalars for name in right):
            return True
        for name, amount in self.scalars.items():
            if name not in right and default is _INFINITY:
                return True
            if holds(amount, right.get(name, 0.0)):
                return True
        return False

    def equal(self, other: Resource) -> bool:
        """Equal within the epsilon on cpu, memory and this side's scalars."""
        if abs(self.milli_cpu - other.milli_cpu) >= MIN_RESOURCE:
            return False
        if abs(self.memory - other.memory) >= MIN_RESOURCE:
            return False
        return all(
            abs(a - other.scalars.get(n, 0.0)) < MIN_RESOURCE for n, a in self.scalars.items()
        )

    def __eq__(self, other: object) -> bool:
        """Exact equality, treating a missing scalar as 0 (for tests and snapshots)."""
        if not isinstance(other, Resource):
            return NotImplemented
        if self.milli_cpu != other.milli_cpu or self.memory != other.memory:
            return False
        names = set(self.scalars) | set(other.scalars)
        return all(self.scalars.get(n, 0.0) == other.scalars.get(n, 0.0) for n in names)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        parts = [f"cpu {self.milli_cpu:g}m", f"memory {self.memory:g}"]
        parts.extend(f"{n} {a:g}" for n, a in self.scalars.items())
        return f"<Resource {', '.join(parts)}>"

    __str__ = __repr__


def _amount_uncached(raw: object, whole: bool) -> float:
    exact = parse_quantity(raw)
    if exact < 0:
        # Before rounding up: "-0.5m" would read as 0 (Kubernetes refuses it).
        raise QuantityError(raw, "negative")
    try:
        # Rounded up, as Kubernetes' Value and MilliValue.
        return float(math.ceil(exact) if whole else math.ceil(exact * 1000))
    except OverflowError:
        raise QuantityError(raw, "too large") from None


# Workloads repeat a handful of quantity strings ("500m", "1Gi") many thousand times;
# parsing them exactly (with Fraction) once each keeps loading large clusters fast.
# Typed: equal numbers of different types parse differently (True is no quantity, 1 is;
# 1e23 and 99999999999999991611392 differ in thousandths).
_amount = functools.lru_cache(maxsize=8192, typed=True)(_amount_uncached)


def format_quantity(name: str, amount: float) -> str:
    """Volcano's ``ConvertRes2ResList`` of one amount (truncated to an integer: memory
    in bytes as BinarySI, pods as a count, the rest in thousandths as DecimalSI), as
    Kubernetes writes the quantity."""
    if math.isinf(amount):
        return "inf"
    if name == MEMORY:
        return canonical_quantity(int(amount), binary=True)
    if name == PODS:
        return canonical_quantity(int(amount))
    return canonical_quantity(int(amount), -3)

