"""Dynamic Resource Allocation objects read from documents.

Each ``parse_*`` function takes either the Kubernetes object (``metadata``,
``spec``, ``status``, as ``kubectl get -o yaml`` prints it) or the scenario
format's flat form (the same fields, without ``metadata`` and ``spec``), applies
the API server's defaults (``allocationMode: ExactCount``, ``count: 1``,
toleration operator ``Equal``) and checks what it would reject, raising
:class:`~batchsched.kube.dra.objects.DraObjectError` with the dotted path of the
field. Fields the API does not have are refused too, and so is what batchsched
does not model (binding conditions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from batchsched.errors import QuantityError
from batchsched.kube.affinity import AffinityError, NodeSelectorTerm, parse_node_selector_term
from batchsched.kube.cel import Semver
from batchsched.kube.dra.objects import (
    ALL,
    EXACT_COUNT,
    MAX_SUBREQUESTS,
    AllocationResult,
    AttributeValue,
    CapacityPolicy,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    DeviceResult,
    DraObjectError,
    PodClaim,
    RequestSpec,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    SliceDevice,
)
from batchsched.kube.quantity import parse_quantity
from batchsched.kube.taints import Taint, Toleration

__all__ = [
    "parse_device_class",
    "parse_dra_documents",
    "parse_pod_claims",
    "parse_resource_claim",
    "parse_resource_claim_template",
    "parse_resource_slice",
]

def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DraObjectError(path, f"must be a mapping, not {type(value).__name__}")
    return value


def _sequence(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise DraObjectError(path, f"must be a list, not {type(value).__name__}")
    return value


def _text(value: Any, path: str, *, required: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise DraObjectError(path, "is required")
        return ""
    if not isinstance(value, str):
        raise DraObjectError(path, f"must be a string, not {type(value).__name__}")
    return value


def _integer(value: Any, path: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise DraObjectError(path, f"must be an integer, not {value!r}")
    return value


def _boolean(value: Any, path: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise DraObjectError(path, f"must be true or false, not {value!r}")
    return value


def _keys(obj: Mapping[str, Any], allowed: set[str], path: str) -> None:
    for key in obj:
        if key not in allowed:
            raise DraObjectError(f"{path}.{key}", "unknown field")


def _meta_path(obj: Mapping[str, Any], path: str) -> str:
    """Where a Kubernetes object's metadata fields are (``path.metadata``), or a flat
    entry's (``path``)."""
    return f"{path}.metadata" if "metadata" in obj or "spec" in obj else path


def _flat(obj: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], Mapping[str, Any],
                                                      Mapping[str, Any], str]:
    """(metadata, spec, status, path of spec) of a Kubernetes object or a flat entry."""
    if "metadata" in obj or "spec" in obj:
        metadata = _mapping(obj.get("metadata"), f"{path}.metadata")
        return (metadata, _mapping(obj.get("spec"), f"{path}.spec"),
                _mapping(obj.get("status"), f"{path}.status"), f"{path}.spec")
    return obj, obj, obj, path


def _selectors(raw: Any, path: str) -> tuple[str, ...]:
    out: list[str] = []
    for i, entry in enumerate(_sequence(raw, path)):
        where = f"{path}[{i}]"
        cel = _mapping(_mapping(entry, where).get("cel"), f"{where}.cel")
        expression = _text(cel.get("expression"), f"{where}.cel.expression")
        if not expression:
            raise DraObjectError(f"{where}.cel.expression",
                                 "is required (CEL is the only selector type)")
        out.append(expression)
    return tuple(out)


def _node_selector(raw: Any, path: str) -> NodeSelectorTerm:
    selector = _mapping(raw, path)
    terms = _sequence(selector.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    if len(terms) != 1:
        raise DraObjectError(f"{path}.nodeSelectorTerms",
                             f"must have exactly one term, not {len(terms)}")
    try:
        return parse_node_selector_term(terms[0], f"{path}.nodeSelectorTerms[0]")
    except AffinityError as exc:
        raise DraObjectError(exc.path, exc.problem) from None


def _tolerations(raw: Any, path: str) -> tuple[Toleration, ...]:
    out: list[Toleration] = []
    for i, entry in enumerate(_sequence(raw, path)):
        where = f"{path}[{i}]"
        obj = _mapping(entry, where)
        _keys(obj, {"key", "operator", "value", "effect", "tolerationSeconds"}, where)
        operator = _text(obj.get("operator"), f"{where}.operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise DraObjectError(f"{where}.operator", f"must be Equal or Exists, not {operator!r}")
        out.append(Toleration(key=_text(obj.get("key"), f"{where}.key"), operator=operator,
                              value=_text(obj.get("value"), f"{where}.value"),
                              effect=_text(obj.get("effect"), f"{where}.effect")))
    return tuple(out)


def _new_name(obj: Mapping[str, Any], where: str, seen: set[str], what: str) -> str:
    """The entry's ``name``, required and not one of ``seen`` (which it joins)."""
    name = _text(obj.get("name"), f"{where}.name", required=True)
    if name in seen:
        raise DraObjectError(f"{where}.name", f"duplicate {what} name {name!r}")
    seen.add(name)
    return name


def _spec_keys(spec: Mapping[str, Any], obj: Mapping[str, Any], allowed: set[str],
               flat_extra: set[str], path: str) -> None:
    """Refuse fields the API does not have (a flat entry also carries its metadata)."""
    _keys(spec, allowed | flat_extra if spec is obj else allowed, path)


def parse_device_class(raw: Any, path: str = "deviceClass") -> DeviceClass:
    obj = _mapping(raw, path)
    metadata, spec, _, spec_path = _flat(obj, path)
    # config and extendedResourceName are accepted and not read (docs/dra.md).
    _spec_keys(spec, obj, {"selectors", "config", "extendedResourceName"}, {"name"}, spec_path)
    name = _text(metadata.get("name"), f"{_meta_path(obj, path)}.name", required=True)
    return DeviceClass(name, _selectors(spec.get("selectors"), f"{spec_path}.selectors"))


def _attribute(raw: Any, path: str) -> tuple[AttributeValue, str]:
    obj = _mapping(raw, path)
    kinds = [key for key in ("int", "bool", "string", "version") if key in obj]
    if len(kinds) != 1 or len(obj) != 1:
        raise DraObjectError(path, "must have exactly one of int, bool, string, version")
    kind = kinds[0]
    value = obj[kind]
    if kind == "int":
        return _integer(value, f"{path}.int", 0), ""
    if kind == "bool":
        return _boolean(value, f"{path}.bool"), ""
    text = _text(value, f"{path}.{kind}")
    if kind == "string":
        return text, ""
    try:
        return Semver(text), ""
    except ValueError as exc:
        return text, str(exc)


def _quantity(raw: Any, path: str) -> Fraction:
    try:
        return parse_quantity(raw)
    except QuantityError as exc:
        raise DraObjectError(path, f"malformed quantity: {exc}") from None


def _device(raw: Any, path: str, per_device: bool) -> SliceDevice:
    obj = _mapping(raw, path)
    if "basic" in obj:
        raise DraObjectError(f"{path}.basic", "the resource.k8s.io/v1beta1 shape: in v1 a "
                             "device holds its attributes and capacity itself")
    _keys(obj, {"name", "attributes", "capacity", "taints", "nodeName", "nodeSelector",
                "allNodes", "consumesCounters", "allowMultipleAllocations", "bindingConditions",
                "bindingFailureConditions", "bindsToNode"}, path)
    name = _text(obj.get("name"), f"{path}.name", required=True)
    for unsupported in ("bindingConditions", "bindingFailureConditions", "bindsToNode"):
        if obj.get(unsupported):
            raise DraObjectError(f"{path}.{unsupported}", _UNSUPPORTED)
    attributes: dict[str, AttributeValue] = {}
    bad_versions: dict[str, str] = {}
    for key, value in _mapping(obj.get("attributes"), f"{path}.attributes").items():
        attributes[key], problem = _attribute(value, f"{path}.attributes.{key}")
        if problem:
            bad_versions[key] = problem
    capacity: dict[str, Fraction] = {}
    policies: dict[str, CapacityPolicy] = {}
    for key, value in _mapping(obj.get("capacity"), f"{path}.capacity").items():
        where = f"{path}.capacity.{key}"
        entry = _mapping(value, where)
        capacity[key] = _quantity(entry.get("value"), f"{where}.value")
        if entry.get("requestPolicy") is not None:
            policies[key] = _policy(entry["requestPolicy"], f"{where}.requestPolicy")
    taints = []
    for i, entry in enumerate(_sequence(obj.get("taints"), f"{path}.taints")):
        where = f"{path}.taints[{i}]"
        taint = _mapping(entry, where)
        taints.append(Taint(_text(taint.get("key"), f"{where}.key", required=True),
                            _text(taint.get("value"), f"{where}.value"),
                            _text(taint.get("effect"), f"{where}.effect", required=True)))
    node_name = _text(obj.get("nodeName"), f"{path}.nodeName")
    node_selector = (_node_selector(obj["nodeSelector"], f"{path}.nodeSelector")
                     if obj.get("nodeSelector") is not None else None)
    all_nodes = _boolean(obj.get("allNodes"), f"{path}.allNodes")
    placements = bool(node_name) + (node_selector is not None) + all_nodes
    if per_device and placements != 1:
        raise DraObjectError(path, "with perDeviceNodeSelection, a device sets exactly one of "
                             "nodeName, nodeSelector, allNodes")
    if not per_device and placements:
        raise DraObjectError(path, "a device sets its own node only in a slice with "
                             "perDeviceNodeSelection")
    consumes: dict[str, Mapping[str, Fraction]] = {}
    entries = _sequence(obj.get("consumesCounters"), f"{path}.consumesCounters")
    if len(entries) > 2:
        raise DraObjectError(f"{path}.consumesCounters", "must have at most 2 entries")
    for i, entry in enumerate(entries):
        where = f"{path}.consumesCounters[{i}]"
        raw = _mapping(entry, where)
        counter_set = _text(raw.get("counterSet"), f"{where}.counterSet", required=True)
        if counter_set in consumes:
            raise DraObjectError(f"{where}.counterSet", f"duplicate counter set {counter_set!r}")
        consumes[counter_set] = _counters(raw.get("counters"), f"{where}.counters")
    return SliceDevice(name, attributes, capacity, tuple(taints), node_name, node_selector,
                       all_nodes, bad_versions, consumes,
                       _boolean(obj.get("allowMultipleAllocations"),
                                f"{path}.allowMultipleAllocations"), policies)


def _policy(raw: Any, path: str) -> CapacityPolicy:
    obj = _mapping(raw, path)
    _keys(obj, {"default", "validValues", "validRange"}, path)
    default = _quantity(obj["default"], f"{path}.default") if obj.get("default") is not None \
        else None
    values = tuple(sorted(_quantity(v, f"{path}.validValues[{i}]") for i, v in
                          enumerate(_sequence(obj.get("validValues"), f"{path}.validValues"))))
    span = _mapping(obj.get("validRange"), f"{path}.validRange")
    if values and span:
        raise DraObjectError(path, "validValues and validRange cannot both be set")
    if (values or span) and default is None:
        raise DraObjectError(f"{path}.default", "is required with validValues or validRange")

    def bound(name: str) -> Fraction | None:
        value = span.get(name)
        return _quantity(value, f"{path}.validRange.{name}") if value is not None else None
    minimum = bound("min")
    if span and minimum is None:
        raise DraObjectError(f"{path}.validRange.min", "is required")
    return CapacityPolicy(default, values, minimum, bound("max"), bound("step"))




def _counters(raw: Any, path: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for key, value in _mapping(raw, path).items():
        entry = _mapping(value, f"{path}.{key}")
        out[key] = _quantity(entry.get("value"), f"{path}.{key}.value")
    if not out:
        raise DraObjectError(path, "must name at least one counter")
    return out


_UNSUPPORTED = "not modelled by batchsched (binding conditions are not supported)"


def parse_resource_slice(raw: Any, path: str = "resourceSlice") -> ResourceSlice:
    obj = _mapping(raw, path)
    metadata, spec, _, spec_path = _flat(obj, path)
    _spec_keys(spec, obj, {"driver", "pool", "nodeName", "nodeSelector", "allNodes",
                           "perDeviceNodeSelection", "devices", "sharedCounters"}, {"name"},
               spec_path)
    name = _text(metadata.get("name"), f"{_meta_path(obj, path)}.name", required=True)
    counter_sets: dict[str, Mapping[str, Fraction]] = {}
    for i, entry in enumerate(_sequence(spec.get("sharedCounters"),
                                        f"{spec_path}.sharedCounters")):
        where = f"{spec_path}.sharedCounters[{i}]"
        raw = _mapping(entry, where)
        set_name = _text(raw.get("name"), f"{where}.name", required=True)
        if set_name in counter_sets:
            raise DraObjectError(f"{where}.name", f"duplicate counter set {set_name!r}")
        counter_sets[set_name] = _counters(raw.get("counters"), f"{where}.counters")
    if counter_sets and spec.get("devices"):
        raise DraObjectError(spec_path, "a slice holds devices or sharedCounters, not both")
    driver = _text(spec.get("driver"), f"{spec_path}.driver", required=True)
    pool = _mapping(spec.get("pool"), f"{spec_path}.pool")
    pool_name = _text(pool.get("name"), f"{spec_path}.pool.name", required=True)
    generation = _integer(pool.get("generation"), f"{spec_path}.pool.generation", 0)
    count = _integer(pool.get("resourceSliceCount"), f"{spec_path}.pool.resourceSliceCount", 1)
    if count < 1:
        raise DraObjectError(f"{spec_path}.pool.resourceSliceCount", "must be at least 1")
    node_name = _text(spec.get("nodeName"), f"{spec_path}.nodeName")
    node_selector = (_node_selector(spec["nodeSelector"], f"{spec_path}.nodeSelector")
                     if spec.get("nodeSelector") is not None else None)
    all_nodes = _boolean(spec.get("allNodes"), f"{spec_path}.allNodes")
    per_device = _boolean(spec.get("perDeviceNodeSelection"),
                          f"{spec_path}.perDeviceNodeSelection")
    placements = bool(node_name) + (node_selector is not None) + all_nodes + per_device
    if placements != 1 and not (counter_sets and placements == 0):
        raise DraObjectError(spec_path, "exactly one of nodeName, nodeSelector, allNodes, "
                             "perDeviceNodeSelection must be set")
    devices = tuple(_device(entry, f"{spec_path}.devices[{i}]", per_device)
                    for i, entry in enumerate(_sequence(spec.get("devices"),
                                                        f"{spec_path}.devices")))
    return ResourceSlice(name, driver, pool_name, generation, count, node_name, node_selector,
                         all_nodes, per_device, devices, counter_sets)


def _request_spec(obj: Mapping[str, Any], path: str, name: str, *, admin: bool) -> RequestSpec:
    allowed = {"name", "deviceClassName", "selectors", "allocationMode", "count", "tolerations",
               "capacity"} | ({"adminAccess"} if admin else set())
    _keys(obj, allowed, path)
    capacity = _mapping(obj.get("capacity"), f"{path}.capacity")
    _keys(capacity, {"requests"}, f"{path}.capacity")
    capacity_requests = {
        name: _quantity(value, f"{path}.capacity.requests.{name}")
        for name, value in _mapping(capacity.get("requests"),
                                    f"{path}.capacity.requests").items()}
    mode = _text(obj.get("allocationMode"), f"{path}.allocationMode") or EXACT_COUNT
    if mode not in (EXACT_COUNT, ALL):
        raise DraObjectError(f"{path}.allocationMode", f"must be ExactCount or All, not {mode!r}")
    count = _integer(obj.get("count"), f"{path}.count", 1 if mode == EXACT_COUNT else 0)
    if mode == EXACT_COUNT and count < 1:
        raise DraObjectError(f"{path}.count", "must be at least 1")
    if mode == ALL and obj.get("count") is not None:
        raise DraObjectError(f"{path}.count", "must not be set with allocationMode All")
    return RequestSpec(
        name=name,
        device_class_name=_text(obj.get("deviceClassName"), f"{path}.deviceClassName",
                                required=True),
        selectors=_selectors(obj.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        count=count,
        admin_access=_boolean(obj.get("adminAccess"), f"{path}.adminAccess"),
        tolerations=_tolerations(obj.get("tolerations"), f"{path}.tolerations"),
        capacity_requests=capacity_requests,
    )


def _requests(raw: Any, path: str) -> tuple[DeviceRequest, ...]:
    out: list[DeviceRequest] = []
    seen: set[str] = set()
    for i, entry in enumerate(_sequence(raw, path)):
        where = f"{path}[{i}]"
        obj = _mapping(entry, where)
        _keys(obj, {"name", "exactly", "firstAvailable"}, where)
        name = _new_name(obj, where, seen, "request")
        exactly, alternatives = obj.get("exactly"), obj.get("firstAvailable")
        if (exactly is None) == (not alternatives):
            raise DraObjectError(where, "exactly one of exactly, firstAvailable must be set")
        if exactly is not None:
            out.append(DeviceRequest(name, exactly=_request_spec(
                _mapping(exactly, f"{where}.exactly"), f"{where}.exactly", name, admin=True)))
            continue
        subs = _sequence(alternatives, f"{where}.firstAvailable")
        if len(subs) > MAX_SUBREQUESTS:
            raise DraObjectError(f"{where}.firstAvailable",
                                 f"must have at most {MAX_SUBREQUESTS} entries")
        specs = []
        for j, sub in enumerate(subs):
            sub_path = f"{where}.firstAvailable[{j}]"
            sub_obj = _mapping(sub, sub_path)
            sub_name = _text(sub_obj.get("name"), f"{sub_path}.name", required=True)
            specs.append(_request_spec(sub_obj, sub_path, sub_name, admin=False))
        out.append(DeviceRequest(name, first_available=tuple(specs)))
    return tuple(out)


def _constraints(raw: Any, path: str, requests: Sequence[DeviceRequest]
                 ) -> tuple[DeviceConstraint, ...]:
    names = {request.name for request in requests}
    out: list[DeviceConstraint] = []
    for i, entry in enumerate(_sequence(raw, path)):
        where = f"{path}[{i}]"
        obj = _mapping(entry, where)
        _keys(obj, {"requests", "matchAttribute", "distinctAttribute"}, where)
        listed = tuple(_text(r, f"{where}.requests[{k}]", required=True)
                       for k, r in enumerate(_sequence(obj.get("requests"), f"{where}.requests")))
        for k, request in enumerate(listed):
            if request.partition("/")[0] not in names:
                raise DraObjectError(f"{where}.requests[{k}]",
                                     f"names no request of the claim ({request!r})")
        match = _text(obj.get("matchAttribute"), f"{where}.matchAttribute")
        distinct = _text(obj.get("distinctAttribute"), f"{where}.distinctAttribute")
        if bool(match) == bool(distinct):
            raise DraObjectError(where, "exactly one of matchAttribute, distinctAttribute "
                                 "must be set")
        for field, attribute in (("matchAttribute", match), ("distinctAttribute", distinct)):
            domain, slash, name = (attribute or "").partition("/")
            if attribute and not (slash and domain and name):
                # The API server's validateFullyQualifiedName.
                raise DraObjectError(f"{where}.{field}", f"{attribute!r} must include a "
                                     "domain (a fully qualified name: domain/name)")
        out.append(DeviceConstraint(listed, match, distinct))
    return tuple(out)


def _devices_spec(spec: Mapping[str, Any], path: str
                  ) -> tuple[tuple[DeviceRequest, ...], tuple[DeviceConstraint, ...]]:
    devices = _mapping(spec.get("devices"), f"{path}.devices") if "devices" in spec else spec
    if devices is not spec:
        _keys(devices, {"requests", "constraints", "config"}, f"{path}.devices")
    requests = _requests(devices.get("requests"), f"{path}.devices.requests"
                         if "devices" in spec else f"{path}.requests")
    constraints = _constraints(devices.get("constraints"), f"{path}.devices.constraints"
                               if "devices" in spec else f"{path}.constraints", requests)
    return requests, constraints


def _allocation(raw: Any, path: str) -> AllocationResult:
    obj = _mapping(raw, path)
    devices = _mapping(obj.get("devices"), f"{path}.devices") if "devices" in obj else obj
    results: list[DeviceResult] = []
    where_results = f"{path}.devices.results" if "devices" in obj else f"{path}.results"
    for i, entry in enumerate(_sequence(devices.get("results"), where_results)):
        where = f"{where_results}[{i}]"
        result = _mapping(entry, where)
        results.append(DeviceResult(
            request=_text(result.get("request"), f"{where}.request", required=True),
            driver=_text(result.get("driver"), f"{where}.driver", required=True),
            pool=_text(result.get("pool"), f"{where}.pool", required=True),
            device=_text(result.get("device"), f"{where}.device", required=True),
            admin_access=_boolean(result.get("adminAccess"), f"{where}.adminAccess"),
            share_id=_text(result.get("shareID"), f"{where}.shareID"),
            consumed_capacity={
                name: _quantity(value, f"{where}.consumedCapacity.{name}")
                for name, value in _mapping(result.get("consumedCapacity"),
                                            f"{where}.consumedCapacity").items()},
            tolerations=_tolerations(result.get("tolerations"), f"{where}.tolerations"),
        ))
    selector = (_node_selector(obj["nodeSelector"], f"{path}.nodeSelector")
                if obj.get("nodeSelector") is not None else None)
    return AllocationResult(tuple(results), selector)


def _reserved_for(raw: Any, path: str, namespace: str) -> tuple[str, ...]:
    out: list[str] = []
    for i, entry in enumerate(_sequence(raw, path)):
        if isinstance(entry, str):
            out.append(entry if "/" in entry else f"{namespace}/{entry}")
            continue
        obj = _mapping(entry, f"{path}[{i}]")
        name = _text(obj.get("name"), f"{path}[{i}].name", required=True)
        out.append(f"{namespace}/{name}")
    return tuple(out)


def parse_resource_claim(raw: Any, path: str = "resourceClaim") -> ResourceClaim:
    obj = _mapping(raw, path)
    metadata, spec, status, spec_path = _flat(obj, path)
    _spec_keys(spec, obj, {"devices"} if spec is not obj else set(),
               {"name", "namespace", "requests", "constraints", "config", "allocation",
                "reservedFor", "owner", "deleting"}, spec_path)
    name = _text(metadata.get("name"), f"{_meta_path(obj, path)}.name", required=True)
    namespace = _text(metadata.get("namespace"),
                      f"{_meta_path(obj, path)}.namespace") or "default"
    requests, constraints = _devices_spec(spec, spec_path)
    status_path = f"{path}.status" if status is not obj else path
    allocation = (_allocation(status["allocation"], f"{status_path}.allocation")
                  if status.get("allocation") is not None else None)
    flat = metadata is obj  # owner and deleting are the flat form's own fields
    owner = _text(obj.get("owner"), f"{path}.owner") if flat else ""
    for i, reference in enumerate(_sequence(metadata.get("ownerReferences"),
                                            f"{path}.metadata.ownerReferences")):
        ref = _mapping(reference, f"{path}.metadata.ownerReferences[{i}]")
        if ref.get("controller") and ref.get("kind") == "Pod":
            ref_name = _text(ref.get("name"), f"{path}.metadata.ownerReferences[{i}].name")
            owner = f"{namespace}/{ref_name}"
    return ResourceClaim(
        namespace=namespace, name=name, requests=requests, constraints=constraints,
        allocation=allocation,
        reserved_for=_reserved_for(status.get("reservedFor"), f"{status_path}.reservedFor",
                                   namespace),
        owner=owner,
        deleting=bool(metadata.get("deletionTimestamp")) or (
            flat and _boolean(obj.get("deleting"), f"{path}.deleting")),
    )


def parse_resource_claim_template(raw: Any, path: str = "resourceClaimTemplate"
                                  ) -> ResourceClaimTemplate:
    obj = _mapping(raw, path)
    metadata, spec, _, spec_path = _flat(obj, path)
    name = _text(metadata.get("name"), f"{_meta_path(obj, path)}.name", required=True)
    namespace = _text(metadata.get("namespace"),
                      f"{_meta_path(obj, path)}.namespace") or "default"
    if "spec" in spec and isinstance(spec.get("spec"), Mapping):
        spec, spec_path = spec["spec"], f"{spec_path}.spec"  # the object's spec.spec
    requests, constraints = _devices_spec(spec, spec_path)
    return ResourceClaimTemplate(namespace, name, requests, constraints)


def parse_pod_claims(raw: Any, path: str, statuses: Any = None) -> tuple[PodClaim, ...]:
    """A pod's ``resourceClaims`` (and its ``status.resourceClaimStatuses``, the claims
    made from templates, by entry name)."""
    generated: dict[str, str] = {}
    # The statuses' own field name, beside the entries': resourceClaimStatuses.
    listed = (f"{path.removesuffix('resourceClaims')}resourceClaimStatuses"
              if path.endswith("resourceClaims") else f"{path}Statuses")
    for i, entry in enumerate(_sequence(statuses, listed)):
        obj = _mapping(entry, f"{listed}[{i}]")
        # An entry without a claim name: the pod needs no claim for it.
        generated[_text(obj.get("name"), f"{listed}[{i}].name", required=True)] = _text(
            obj.get("resourceClaimName"), f"{listed}[{i}].resourceClaimName")
    out: list[PodClaim] = []
    seen: set[str] = set()
    for i, entry in enumerate(_sequence(raw, path)):
        where = f"{path}[{i}]"
        obj = _mapping(entry, where)
        _keys(obj, {"name", "resourceClaimName", "resourceClaimTemplateName"}, where)
        name = _new_name(obj, where, seen, "claim")
        claim = _text(obj.get("resourceClaimName"), f"{where}.resourceClaimName")
        template = _text(obj.get("resourceClaimTemplateName"),
                         f"{where}.resourceClaimTemplateName")
        if bool(claim) == bool(template):
            raise DraObjectError(where, "exactly one of resourceClaimName, "
                                 "resourceClaimTemplateName must be set")
        out.append(PodClaim(name, claim, template, generated.get(name)))
    return tuple(out)




_T = TypeVar("_T")


def _unique(raw: Any, section: str, parse: Callable[[Any, str], _T], key: Callable[[_T], str],
            what: str) -> dict[str, _T]:
    """The entries of one list, by key; a key given twice is an error naming the entry."""
    out: dict[str, _T] = {}
    for i, entry in enumerate(_sequence(raw, section)):
        parsed = parse(entry, f"{section}[{i}]")
        name = key(parsed)
        if name in out:
            raise DraObjectError(f"{section}[{i}].name", f"duplicate {what} {name!r}")
        out[name] = parsed
    return out


def parse_dra_documents(*, device_classes: Any = None, resource_slices: Any = None,
                        resource_claims: Any = None, claim_templates: Any = None
                        ) -> tuple[dict[str, DeviceClass], tuple[ResourceSlice, ...],
                                   dict[str, ResourceClaim], dict[str, ResourceClaimTemplate]]:
    """The four lists of a scenario (``deviceClasses``, ``resourceSlices``,
    ``resourceClaims``, ``resourceClaimTemplates``), each name unique."""
    classes = _unique(device_classes, "deviceClasses", parse_device_class,
                      lambda c: c.name, "device class")
    slices = _unique(resource_slices, "resourceSlices", parse_resource_slice,
                     lambda s: s.name, "resource slice")
    claims = _unique(resource_claims, "resourceClaims", parse_resource_claim,
                     lambda c: c.key, "claim")
    templates = _unique(claim_templates, "resourceClaimTemplates",
                        parse_resource_claim_template, lambda t: t.key, "claim template")
    return classes, tuple(slices.values()), claims, templates
