"""The objects of Dynamic Resource Allocation (``resource.k8s.io/v1``); read from
documents by :mod:`batchsched.kube.dra.documents`.

Names follow the API: a device's attributes and capacities are keyed by
qualified name (``model`` or ``gpu.example.com/model``); a device is identified
by ``driver/pool/device``; a claim by ``namespace/name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import attrs

from batchsched.kube.affinity import NodeSelectorTerm
from batchsched.kube.cel import Semver
from batchsched.kube.taints import Taint, Toleration

__all__ = [
    "ALL",
    "EXACT_COUNT",
    "MAX_RESERVED_FOR",
    "AllocationResult",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceResult",
    "DraObjectError",
    "PodClaim",
    "RequestSpec",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "SliceDevice",
]

EXACT_COUNT = "ExactCount"
ALL = "All"
#: At most this many devices per claim (the API's ``AllocationResultsMaxSize``).
MAX_DEVICES_PER_CLAIM = 32
#: At most this many pods in a claim's ``reservedFor`` (the API server's limit).
MAX_RESERVED_FOR = 256
#: At most this many alternatives in a ``firstAvailable`` request.
MAX_SUBREQUESTS = 8

AttributeValue = bool | int | str | Semver


class DraObjectError(ValueError):
    """A document the API server would reject; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.problem = message
        super().__init__(f"{path}: {message}" if path else message)


@attrs.frozen
class DeviceClass:
    """A ``DeviceClass``: the selectors every device of the class must pass."""

    name: str
    selectors: tuple[str, ...] = ()


@attrs.frozen
class CapacityPolicy:
    """A device capacity's ``requestPolicy`` (consumable capacity): what a request is
    given when it asks for none (``default``), and the amounts it may be given
    (``valid_values``, or ``minimum`` up to ``maximum`` in ``step``s)."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    minimum: Fraction | None = None
    maximum: Fraction | None = None
    step: Fraction | None = None


@attrs.frozen
class SliceDevice:
    """One device of a ``ResourceSlice``. ``attributes`` and ``capacity`` keep the
    names as written (qualified or not); ``node_name``/``node_selector``/``all_nodes``
    are the device's own placement in a slice with ``perDeviceNodeSelection``."""

    name: str
    attributes: Mapping[str, AttributeValue] = attrs.field(factory=dict)
    capacity: Mapping[str, Fraction] = attrs.field(factory=dict)
    taints: tuple[Taint, ...] = ()
    node_name: str = ""
    node_selector: NodeSelectorTerm | None = None
    all_nodes: bool = False
    #: Attribute values that are versions but do not parse as semantic versions (the
    #: device then fails every selector, as in Kubernetes), by attribute name.
    bad_versions: Mapping[str, str] = attrs.field(factory=dict)
    #: What taking the device uses up of its pool's shared counters (partitionable
    #: devices): counter set -> counter -> amount.
    consumes_counters: Mapping[str, Mapping[str, Fraction]] = attrs.field(factory=dict)
    #: Several claims may share the device, within its capacities (consumable capacity).
    allow_multiple_allocations: bool = False
    #: The request policies of its capacities, by capacity name.
    capacity_policies: Mapping[str, CapacityPolicy] = attrs.field(factory=dict)


@attrs.frozen
class ResourceSlice:
    """A ``ResourceSlice``: devices of one driver's pool, and where they are usable
    (exactly one of ``node_name``, ``node_selector``, ``all_nodes``,
    ``per_device_node_selection``)."""

    name: str
    driver: str
    pool: str
    generation: int = 0
    slice_count: int = 1
    node_name: str = ""
    node_selector: NodeSelectorTerm | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[SliceDevice, ...] = ()
    #: A counter-only slice's counter sets (partitionable devices): set -> counter ->
    #: amount; a slice holds devices or counters, not both.
    shared_counters: Mapping[str, Mapping[str, Fraction]] = attrs.field(factory=dict)


@attrs.frozen
class RequestSpec:
    """What one request (``exactly``) or one of its alternatives (``firstAvailable``)
    asks for. ``name`` is the request's, or the alternative's own name."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    tolerations: tuple[Toleration, ...] = ()
    #: How much of each capacity of a shared device it asks for (consumable capacity).
    capacity_requests: Mapping[str, Fraction] = attrs.field(factory=dict)


@attrs.frozen
class DeviceRequest:
    """A claim's request: ``exactly`` one kind of device, or the ``first_available``
    of several alternatives (in order of preference)."""

    name: str
    exactly: RequestSpec | None = None
    first_available: tuple[RequestSpec, ...] = ()

    def alternatives(self) -> list[tuple[str, RequestSpec]]:
        """What the request may be served as, in order, each with the name its results
        carry (``req``, or ``req/alternative``)."""
        if self.exactly is not None:
            return [(self.name, self.exactly)]
        return [(f"{self.name}/{spec.name}", spec) for spec in self.first_available]


@attrs.frozen
class DeviceConstraint:
    """A claim constraint over ``requests`` (empty: all of the claim's)."""

    requests: tuple[str, ...] = ()
    match_attribute: str = ""
    distinct_attribute: str = ""


@attrs.frozen
class DeviceResult:
    """One allocated device: the request (``req`` or ``req/alternative``) it serves."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    #: On a device several claims share: this allocation's id and what it consumes of
    #: each of the device's capacities.
    share_id: str = ""
    consumed_capacity: Mapping[str, Fraction] = attrs.field(factory=dict)
    #: The request's tolerations, which Kubernetes' allocator copies into each result
    #: (what lets the pod use a tainted device, and what taint eviction checks).
    tolerations: tuple[Toleration, ...] = ()

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request, "driver": self.driver,
                               "pool": self.pool, "device": self.device}
        if self.admin_access:
            out["adminAccess"] = True
        if self.share_id:
            out["shareID"] = self.share_id
        if self.consumed_capacity:
            out["consumedCapacity"] = {name: _format_quantity(amount) for name, amount
                                       in sorted(self.consumed_capacity.items())}
        if self.tolerations:
            out["tolerations"] = [_toleration_json(t) for t in self.tolerations]
        return out


def _toleration_json(toleration: Toleration) -> dict[str, str]:
    """A toleration as the API writes it (empty fields left out, the operator always)."""
    out = {"key": toleration.key, "operator": toleration.operator,
           "value": toleration.value, "effect": toleration.effect}
    return {name: text for name, text in out.items() if text or name == "operator"}


@attrs.frozen
class AllocationResult:
    """A claim's ``status.allocation``: its devices and the nodes they can be used
    from (None: any node)."""

    results: tuple[DeviceResult, ...]
    node_selector: NodeSelectorTerm | None = None

    def available_on(self, labels: Mapping[str, str], node_name: str) -> bool:
        return self.node_selector is None or self.node_selector.matches(labels, node_name)


@attrs.frozen
class ResourceClaim:
    """A ``ResourceClaim``. ``owner`` is the uid (``namespace/name``) of the pod it was
    generated for from a template ("" for a claim made on its own); ``reserved_for``
    the pods it is reserved for."""

    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    allocation: AllocationResult | None = None
    reserved_for: tuple[str, ...] = ()
    owner: str = ""
    deleting: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@attrs.frozen
class ResourceClaimTemplate:
    """A ``ResourceClaimTemplate``: the claim each pod naming it gets for itself."""

    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@attrs.frozen
class PodClaim:
    """An entry of a pod's ``spec.resourceClaims``: a claim by name, or a template;
    ``generated`` is the claim made from the template (the pod's
    ``status.resourceClaimStatuses``): None while none was made, "" when the status
    says the pod needs none (Kubernetes then skips the entry)."""

    name: str
    claim_name: str = ""
    template_name: str = ""
    generated: str | None = None

def _format_quantity(amount: Fraction) -> str:
    """A quantity in Kubernetes' canonical form: binary suffixes for exact multiples of
    1024 (``16Gi``), else a plain or milli number."""
    if amount.denominator == 1:
        whole = int(amount)
        for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30),
                             ("Mi", 2**20), ("Ki", 2**10)):
            if whole and whole % size == 0:
                return f"{whole // size}{suffix}"
        return str(whole)
    milli = amount * 1000
    return f"{int(milli)}m" if milli.denominator == 1 else str(float(amount))
