"""A device as the allocator sees it: its CEL view, its attributes for constraints, the
selectors' verdicts on it, and what a share of it consumes (consumable capacity)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from batchsched.kube.cel import (
    CelEvaluationError,
    CelSyntaxError,
    Quantity,
    Semver,
    compile_expression,
)
from batchsched.kube.dra.objects import AttributeValue, ResourceSlice, SliceDevice
from batchsched.kube.dra.pools import DeviceId

__all__ = ["AllocationError", "Candidate", "SelectorCache", "attribute_of", "consumed_capacity",
           "device_view", "same_value", "selectors_pass", "share_id"]


class AllocationError(Exception):
    """The allocation cannot be attempted at all (a selector that does not compile or
    fails to evaluate, a request for all devices of a pool being updated...): the
    Kubernetes plugin's Filter error, with its text."""


class Candidate:
    """A device as the search sees it: where it sits, and its CEL view."""

    __slots__ = ("device", "device_id", "slice", "variables")

    def __init__(self, slice_: ResourceSlice, device: SliceDevice) -> None:
        self.slice = slice_
        self.device = device
        self.device_id: DeviceId = (slice_.driver, slice_.pool, device.name)
        self.variables: dict[str, Any] | None = None

    def cel_variables(self) -> dict[str, Any]:
        if self.variables is None:
            self.variables = {"device": device_view(self.slice.driver, self.device)}
        return self.variables


class _Domains(dict[str, Any]):
    """``device.attributes`` / ``device.capacity``: a domain without entries reads as an
    empty map (Kubernetes' behaviour), while ``in`` sees only the present ones."""

    def __missing__(self, key: str) -> dict[str, Any]:
        return {}


def device_view(driver: str, device: SliceDevice) -> dict[str, Any]:
    """The ``device`` variable of the selectors: attributes and capacities by domain (a
    name without a domain belongs to the driver's)."""
    attributes: _Domains = _Domains()
    for name, value in device.attributes.items():
        domain, _, ident = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[ident] = value
    capacity: _Domains = _Domains()
    for name, amount in device.capacity.items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[ident] = Quantity(amount)
    return {"driver": driver, "attributes": attributes, "capacity": capacity,
            "allowMultipleAllocations": device.allow_multiple_allocations}


def attribute_of(candidate: Candidate, qualified: str) -> AttributeValue | None:
    attributes = candidate.device.attributes
    if qualified in attributes:
        return attributes[qualified]
    domain, _, ident = qualified.partition("/")
    if domain == candidate.slice.driver and ident in attributes:
        return attributes[ident]
    return None


def same_value(left: AttributeValue, right: AttributeValue) -> bool:
    """Equal type and value; versions as written (build metadata included)."""
    if isinstance(left, Semver) and isinstance(right, Semver):
        return bool(left.text == right.text)
    return type(left) is type(right) and left == right


class SelectorCache:
    """What stays true while the slices do not change (a session): each device's CEL
    view, and each selector's verdict on each device (an error kept as its text)."""

    def __init__(self) -> None:
        self.candidates: dict[int, Candidate] = {}
        #: (selector, id of the device object) -> verdict, or the text of its error.
        self.verdicts: dict[tuple[str, int], bool | str] = {}


def consumed_capacity(device: SliceDevice, requests: Mapping[str, Fraction]
                      ) -> dict[str, Fraction] | None:
    """What a pick of ``device`` consumes of each of its capacities for a request asking
    ``requests`` (Kubernetes' consumable capacity): the amount asked, or the policy's
    default when none is asked (the whole capacity without a policy), rounded up to
    the policy's next valid value or step. None when the device lacks a capacity asked
    for or its policy refuses the amount."""
    if any(name not in device.capacity for name in requests):
        return None
    out: dict[str, Fraction] = {}
    for name, value in device.capacity.items():
        policy = device.capacity_policies.get(name)
        asked = requests.get(name)
        if asked is None:
            amount = policy.default if policy is not None and policy.default is not None \
                else value
        elif policy is None:
            amount = asked
        elif policy.valid_values:
            amount = next((v for v in policy.valid_values if v >= asked), asked)
        elif policy.minimum is not None and asked < policy.minimum:
            amount = policy.minimum
        elif policy.minimum is not None and policy.step:
            # On whole units, as Kubernetes' Quantity.Value() reads them (rounded up).
            minimum, step = math.ceil(policy.minimum), math.ceil(policy.step)
            amount = Fraction(minimum + math.ceil((math.ceil(asked) - minimum) / step) * step)
        else:
            amount = asked
        if policy is not None and not (policy.default is not None and amount == policy.default):
            if policy.valid_values and amount not in policy.valid_values:
                return None
            if policy.minimum is not None:
                if policy.maximum is not None and amount > policy.maximum:
                    return None
                if policy.step and (math.ceil(amount) - math.ceil(policy.minimum)) \
                        % math.ceil(policy.step):
                    return None  # on whole units, as Kubernetes' Quantity.Value() reads
        out[name] = amount
    return out


def share_id(claim: str, request: str, device: DeviceId, number: int) -> str:
    """A share's id: a UUID made from what it is (Kubernetes draws a random one), so
    that replays decide alike."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL,
                          f"dra-share:{claim}/{request}/{'/'.join(device)}/{number}"))


#: The variables a device selector may name.
_SELECTOR_VARIABLES = frozenset({"device"})


def selectors_pass(selectors: Sequence[str], candidate: Candidate, owner: str,
            verdicts: dict[tuple[str, int], bool | str]) -> bool:
    """Whether every selector is true for the device, in order (the first false one
    stops); a selector that fails to compile or to evaluate ends the allocation.
    Selectors are compiled when first evaluated, as Kubernetes does."""
    if not selectors:
        return True
    bad = candidate.device.bad_versions
    if bad:
        name, problem = next(iter(bad.items()))
        raise AllocationError(f"{owner}: selector #0: CEL runtime error: attribute {name}: "
                              f"parse semantic version: {problem}")
    for i, selector in enumerate(selectors):
        key = (selector, id(candidate.device))
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = _evaluate(selector, candidate)
        if isinstance(verdict, str):
            raise AllocationError(f"{owner}: selector #{i}: {verdict}")
        if not verdict:
            return False
    return True


def _evaluate(selector: str, candidate: Candidate) -> bool | str:
    try:
        program = compile_expression(selector, _SELECTOR_VARIABLES)
    except CelSyntaxError as exc:
        return f"CEL compile error: {exc}"
    try:
        verdict = program.evaluate(candidate.cel_variables())
    except CelEvaluationError as exc:
        return f"CEL runtime error: {exc}"
    if type(verdict) is not bool:
        return f"CEL result of type {type(verdict).__name__} could not be converted to bool"
    return bool(verdict)
