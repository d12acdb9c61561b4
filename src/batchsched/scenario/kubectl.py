"""A real cluster's state, as ``kubectl get ... -o json`` prints it, as a scenario.

The dump is a Kubernetes ``List`` (docs/explain.md gives the command); each object
becomes what Volcano's scheduler cache makes of it (nodes, pods as tasks, pod groups
as jobs, queues, priority classes, budgets) in the scenario format (version 1). The
scheduler configuration is Volcano's ConfigMap (an item of the List, or a file given
apart), else Volcano's default. A placed pod that no pod group holds (another
scheduler's, or one whose PodGroup is missing) holds its node and nothing else, as in
Volcano's cache: it is a task without a job. What Volcano would not see (pods of other
schedulers waiting for a node, objects of other kinds) is left out with a warning, in
:attr:`Scenario.warnings` and in the scenario's description. A malformed object is one
:class:`~batchsched.errors.ScenarioError` naming the object and its field, e.g.
``dump.json: Pod team-a/w-3: spec.containers[0].resources.requests.cpu: "2x" is not a
quantity``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import yaml

from batchsched.api.device_config import DEVICE_CONFIG_KEY
from batchsched.api.resource_names import counted_by_volcano
from batchsched.api.task import TASK_SPEC_KEY, task_spec_of
from batchsched.conf import (
    DEFAULT_CONFIGURATION_YAML,
    as_volcano_reads,
    configuration_from_text,
    require_actions,
)
from batchsched.errors import QuantityError, ScenarioError
from batchsched.kube.affinity import stored_pod_affinity, stored_pod_term
from batchsched.kube.go_strconv import parse_int
from batchsched.kube.go_yaml import load_first_document
from batchsched.kube.quantity import parse_quantity
from batchsched.kube.quota import REQUESTS_PREFIX, is_extended_resource, pod_quota_usage
from batchsched.scenario.loader import (
    NUMA_TOPOLOGY_KEYS,
    Scenario,
    load_scenario,
    parse_scenario,
)

__all__ = ["import_kubectl_dump", "is_kubectl_dump", "load_kubectl_dump", "load_scenario_or_dump",
           "missing_pod_group", "scenario_document_from_kubectl", "scenario_yaml"]

GROUP_NAME = "scheduling.k8s.io/group-name"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
#: The owners of a pod whose annotations Volcano's pod-group controller reads (kind,
#: API group), for a pod without a group.
_OWNER_KINDS = frozenset({("ReplicaSet", "apps"), ("DaemonSet", "apps"),
                          ("StatefulSet", "apps"), ("Job", "batch")})
CONF_KEY = "volcano-scheduler.conf"
NETWORK_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_HIGHEST_TIER = "volcano.sh/network-topology-highest-tier"
# Kept out of every object: a copy of the whole manifest that nothing schedules by.
_NOISE_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
_READ_KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "PodDisruptionBudget",
               "ResourceQuota", "HyperNode", "DeviceClass", "ResourceSlice", "ResourceClaim",
               "ResourceClaimTemplate", "NodeShard", "Numatopology")
_COMPLETED = frozenset({"Succeeded", "Failed"})
#: The pod-group conditions Volcano's scheduler writes (others are not its own).
_POD_GROUP_CONDITIONS = frozenset({"Unschedulable", "Scheduled"})
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20),
           ("Ki", 2**10))

_NAMESPACED = frozenset({"Pod", "PodGroup", "PodDisruptionBudget", "ResourceQuota",
                         "ConfigMap", "ResourceClaim", "ResourceClaimTemplate"})
#: The metadata a Dynamic Resource Allocation object keeps (the rest is bookkeeping).
_DRA_METADATA = ("name", "namespace", "ownerReferences", "deletionTimestamp")

Quantities = dict[str, Fraction]


@attrs.frozen
class _Item:
    """One object of the List: ``who`` names it in messages (``Pod team-a/w-0``)."""

    who: str
    namespace: str
    name: str
    obj: Mapping[str, Any]


def is_kubectl_dump(document: Any) -> bool:
    """Whether ``document`` is a Kubernetes list (``kind: List``, ``apiVersion: v1``,
    or a typed ``...List``) holding ``items``."""
    if not isinstance(document, Mapping) or not isinstance(document.get("items"), list):
        return False
    kind = document.get("kind")
    return (kind == "List" and document.get("apiVersion") == "v1") or (
        isinstance(kind, str) and kind.endswith("List"))


def scenario_document_from_kubectl(
    dump: Mapping[str, Any], *, source: str, configuration_text: str | None = None,
    now: str | float | None = None, scheduler_names: Collection[str] = ("volcano",),
) -> dict[str, Any]:
    """The scenario document (plain data, ready for YAML) of a kubectl List.

    ``configuration_text`` (a Volcano ConfigMap or the configuration itself) replaces
    the List's scheduler ConfigMap; ``now`` is the session clock (absent: real time);
    ``scheduler_names`` are the names Volcano answers to (its ``--scheduler-name``).
    """
    return _Converter(source, scheduler_names).convert(dump, configuration_text, now)


def import_kubectl_dump(
    path: str | Path, *, config_path: str | Path | None = None, now: str | float | None = None,
) -> tuple[dict[str, Any], Scenario]:
    """Read a dump file, convert it and parse the result: the scenario document and
    the :class:`Scenario` it loads to (whose warnings include the conversion's)."""
    source = str(path)
    text = None if config_path is None else _read_text(config_path)
    converter = _Converter(source, ("volcano",))
    document = converter.convert(_read_dump(source), text, now, str(config_path))
    return document, converter.parse(document)


def load_kubectl_dump(path: str | Path, *, config_path: str | Path | None = None,
                      now: str | float | None = None) -> Scenario:
    """The :class:`Scenario` of a kubectl dump file (``config_path``: a Volcano
    scheduler ConfigMap or configuration file replacing the dump's)."""
    return import_kubectl_dump(path, config_path=config_path, now=now)[1]


def load_scenario_or_dump(path: str | Path) -> Scenario:
    """A scenario file, or a kubectl dump converted (what ``batchsched run`` and
    ``batchsched explain`` read). A scenario file is read exactly as by
    :func:`~batchsched.scenario.loader.load_scenario`. (The loader does not read dumps
    itself: this module builds on it, and the package's imports form no cycle.)"""
    try:
        return load_scenario(path)
    except ScenarioError as exc:
        # A List is no scenario: its top-level keys are unknown to the format. Several
        # documents are none either: they may be the outputs of several kubectl gets.
        several = not exc.path.startswith("(top level).")
        if several:
            try:
                several = len(_read_values(str(path))) > 1
            except ScenarioError:
                several = False
            if not several:
                raise
        try:
            document = _read_document(str(path))
        except ScenarioError:
            raise exc from None
        if not is_kubectl_dump(document):
            if isinstance(document, Mapping) and "apiVersion" in document \
                    and isinstance(document.get("kind"), str):
                _read_dump(str(path))  # a Kubernetes object, but not a List: say so
            raise
    converter = _Converter(str(path), ("volcano",))
    return converter.parse(converter.convert(document, None, None))


def scenario_yaml(document: Mapping[str, Any]) -> str:
    """The scenario document as YAML (leaf mappings in flow style, keys in order)."""
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=None,
                          allow_unicode=True, width=100)


# -- reading ------------------------------------------------------------------------


def _read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ScenarioError(f"cannot read: {reason}", source=str(path)) from exc


def _read_document(source: str) -> Any:
    """The file's document; several (a YAML stream, JSON values one after another: the
    outputs of several ``kubectl get`` commands) make one List of their objects."""
    values = _read_values(source)
    if len(values) <= 1:
        return values[0] if values else None
    items: list[Any] = []
    for k, value in enumerate(values, 1):
        if is_kubectl_dump(value):
            items.extend(_list_items(value))
        elif isinstance(value, Mapping) and isinstance(value.get("kind"), str):
            items.append(value)
        else:
            raise ScenarioError(f"document {k} of {len(values)} is neither a Kubernetes "
                                "object nor a List of them", source=source)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _read_values(source: str) -> list[Any]:
    text = _read_text(source)
    if text.lstrip().startswith(("{", "[")):
        decoder, at = json.JSONDecoder(), 0
        values: list[Any] = []
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at == len(text):
                return values
            try:
                value, at = decoder.raw_decode(text, at)
            except json.JSONDecodeError as exc:
                raise ScenarioError(f"malformed JSON at line {exc.lineno}: {exc.msg}",
                                    source=source) from exc
            except RecursionError:
                raise ScenarioError("malformed document: nested too deeply",
                                    source=source) from None
            values.append(value)
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except RecursionError:
        raise ScenarioError("malformed document: nested too deeply", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"neither JSON nor YAML{where}: {getattr(exc, 'problem', exc)}",
                            source=source) from exc


def _list_items(dump: Mapping[str, Any], where: str = "items") -> list[Any]:
    """A List's objects, those of Lists within it included; a typed list's (PodList)
    objects, which leave out their kind, get it."""
    return [obj for _, obj in _located_items(dump, where)]


def _located_items(dump: Mapping[str, Any], where: str = "items") -> list[tuple[str, Any]]:
    """:func:`_list_items` with where each object is (``items[2].items[0]``)."""
    kind = str(dump["kind"])
    default_kind = kind[: -len("List")] if kind != "List" else ""
    items: list[tuple[str, Any]] = []
    for i, obj in enumerate(dump["items"]):
        place = f"{where}[{i}]"
        if is_kubectl_dump(obj):
            items.extend(_located_items(obj, f"{place}.items"))
        elif isinstance(obj, Mapping) and not obj.get("kind") and default_kind:
            items.append((place, {**obj, "kind": default_kind}))
        else:
            items.append((place, obj))
    return items


def _read_dump(source: str) -> Mapping[str, Any]:
    document = _read_document(source)
    if not is_kubectl_dump(document):
        found = (f"kind {document.get('kind')!r}" if isinstance(document, Mapping)
                 else "nothing" if document is None else f"a {type(document).__name__}")
        raise ScenarioError("not a kubectl List (the output of `kubectl get ... -o json`: "
                            f"kind List with items); found {found}", source=source)
    return document  # type: ignore[no-any-return]


def _configuration_document(text: str, source: str) -> dict[str, Any]:
    """The configuration mapping of a Volcano ConfigMap or configuration text, checked
    by :func:`batchsched.conf.configuration_from_text` and against the known actions
    and plugins (errors name ``source``: the ConfigMap, not the scenario written)."""
    from batchsched.framework.registry import default_registry

    require_actions(configuration_from_text(text, source=source)).validate(default_registry())
    # Read as Volcano reads it (yaml.v2), then written out as plain values.
    document = as_volcano_reads(load_first_document(text))
    if isinstance(document, Mapping):
        data = document.get("data")
        if CONF_KEY in document:
            document = document[CONF_KEY]
        elif isinstance(data, Mapping) and CONF_KEY in data:
            document = data[CONF_KEY]
    if isinstance(document, str):
        document = as_volcano_reads(load_first_document(document))
    return dict(document)


# -- converting ---------------------------------------------------------------------


def _format(name: str, amount: Fraction) -> str:
    """A quantity string the loader reads back as exactly ``amount`` (rounded up as
    Kubernetes' ``Value``/``MilliValue``)."""
    whole = name in ("memory", "pods")
    if amount.denominator != 1 and whole:
        amount = Fraction(math.ceil(amount))
    if amount.denominator != 1:
        return f"{math.ceil(amount * 1000)}m"
    number = int(amount)
    if number and (name == "memory" or name.startswith("hugepages-")):
        for suffix, factor in _BINARY:
            if number % factor == 0:
                return f"{number // factor}{suffix}"
    return str(number)


def _add(total: Quantities, more: Mapping[str, Fraction]) -> Quantities:
    for name, amount in more.items():
        total[name] = total.get(name, Fraction(0)) + amount
    return total


#: The limits a ResourceQuota counts (``limits.<name>``).
_QUOTA_LIMITED = ("cpu", "memory", "ephemeral-storage")


def _quota_usage(requests: Mapping[str, Fraction], limits: Mapping[str, Fraction], *,
                 ended: bool) -> Quantities:
    """A pod's usage as a ResourceQuota counts it, which Volcano's PodGroup controller
    writes as the minResources of a pod's own PodGroup (``GetPodQuotaUsage``): the pod
    evaluator's, and each extended resource under its own name too."""
    usage = pod_quota_usage(requests, limits, pods=Fraction(1), counted=not ended)
    for name in list(usage):
        plain = name.removeprefix(REQUESTS_PREFIX)
        if plain != name and is_extended_resource(plain):
            usage[plain] = usage[name]
    return usage


#: kube-scheduler's stand-in for a container's missing cpu and memory requests in its
#: resource scores (``schedutil.DefaultMilliCPURequest``, ``DefaultMemoryRequest``).
_NON_MISSING: Quantities = {"cpu": Fraction(1, 10), "memory": Fraction(200 * 2**20)}


def _nonzero_request(spec_requests: tuple[Quantities, Quantities | None],
                     requests: Quantities, init: Quantities | None) -> dict[str, str] | None:
    """The pod's ``nonZeroRequests`` entry: kube-scheduler's cpu and memory figures
    (``spec_requests``, worked out with the stand-in per container) when they differ
    from what the merged requests give with the stand-in applied to the pod."""
    def larger(pair: tuple[Quantities, Quantities | None], name: str) -> Fraction:
        total, during_init = pair
        amount = total.get(name, Fraction(0))
        return max(amount, during_init.get(name, Fraction(0))) if during_init else amount

    kube = {name: larger(spec_requests, name) for name in ("cpu", "memory")}
    merged = {name: larger((requests, init), name) or _NON_MISSING[name]
              for name in ("cpu", "memory")}
    return None if kube == merged else _formatted(kube)


def _rounded(quantities: Mapping[str, Fraction]) -> Quantities:
    """Each amount as Volcano's ``NewResource`` keeps it: memory in whole bytes, the
    others in thousandths, rounded up."""
    return {name: (Fraction(math.ceil(amount)) if name == "memory"
                   else Fraction(math.ceil(amount * 1000), 1000))
            for name, amount in quantities.items()}


def _preempted_by_scheduler(status: Mapping[str, Any]) -> bool:
    """The pod's first ``DisruptionTarget`` condition is True with reason
    ``PreemptionByScheduler`` (what Volcano's ``podTerminatingByPreemption`` reads)."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return False
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            return bool(condition.get("status") == "True"
                        and condition.get("reason") == "PreemptionByScheduler")
    return False


def _resize_infeasible(status: Mapping[str, Any]) -> bool:
    """Kubernetes' ``IsPodResizeInfeasible`` (of the version Volcano vendors): the first
    PodResizePending condition has reason Infeasible. The older ``status.resize``
    field is not read (that version does not read it)."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return False
    pending = next((c for c in conditions
                    if isinstance(c, Mapping) and c.get("type") == "PodResizePending"), None)
    return pending is not None and pending.get("reason") == "Infeasible"


def _formatted(quantities: Mapping[str, Fraction]) -> dict[str, str]:
    return {name: _format(name, amount) for name, amount in quantities.items()}


def _drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None and v not in ({}, [])}


def missing_pod_group(group: str) -> str:
    """Why a pod that waits for a PodGroup the dump lacks is left out."""
    return f"its PodGroup {group} does not exist, and Volcano leaves such a pod unscheduled"


class _Converter:
    def __init__(self, source: str, scheduler_names: Collection[str]) -> None:
        self.source = source
        self.scheduler_names = frozenset(scheduler_names)
        self.warnings: list[str] = []
        # (section, index) -> "Kind namespace/name": what a loader error is about.
        self.origins: dict[tuple[str, int], str] = {}
        self.jobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.podgroups: set[tuple[str, str]] = set()  # those of the dump, not stand-ins
        self.nodes: dict[str, dict[str, Any]] = {}
        #: ConfigMaps holding a device configuration (deviceshare reads them).
        self.device_configs: list[tuple[str, dict[str, Any]]] = []
        #: Where the scheduler configuration came from (source, place in it): errors
        #: found when its plugins and actions are built name them.
        self.config_origin: tuple[str, str] | None = None
        #: Annotations of the objects Volcano's pod-group controller and admission
        #: read for a pod without a group: (kind, namespace, name) of a pod's owner
        #: (ReplicaSet, DaemonSet, StatefulSet, Job), ("Namespace", "", name).
        self.owner_annotations: dict[tuple[str, str, str], dict[str, str]] = {}
        #: ``namespace/name`` of each pod left out of the scenario -> why.
        self.left_out_pods: dict[str, str] = {}

    def fail(self, who: str, field: str, message: str) -> ScenarioError:
        return ScenarioError(message, source=self.source,
                             path=f"{who}: {field}" if field else who)

    def warn(self, who: str, message: str) -> None:
        self.warnings.append(f"{self.source}: {who}: {message}")

    def leave_out(self, who: str, uid: str, why: str) -> None:
        """Leave a pod out of the scenario, with a warning and ``why`` kept for the
        questions asked about it (:attr:`Scenario.left_out_pods`)."""
        self.left_out_pods[uid] = why
        self.warn(who, f"left out: {why}")

    # -- typed field access ------------------------------------------------------

    def mapping(self, value: Any, who: str, field: str) -> Mapping[str, Any]:
        if value is not None and not isinstance(value, Mapping):
            raise self.fail(who, field, f"must be a mapping, not {value!r}")
        return value or {}

    def entry(self, value: Any, who: str, field: str) -> Mapping[str, Any]:
        """A list entry that must be an object (a container): null is no container."""
        if not isinstance(value, Mapping):
            raise self.fail(who, field, f"must be a mapping, not {value!r}")
        return value

    def seq(self, value: Any, who: str, field: str) -> list[Any]:
        if value is not None and not isinstance(value, list):
            raise self.fail(who, field, f"must be a list, not {value!r}")
        return value or []

    def strings(self, value: Any, who: str, field: str) -> dict[str, str]:
        """A map of strings (labels, annotations: the API server holds nothing else)."""
        out = {}
        for key, text in self.mapping(value, who, field).items():
            if key in _NOISE_ANNOTATIONS:
                continue
            if not isinstance(key, str) or not isinstance(text, str):
                raise self.fail(who, f"{field}.{key}", f"must be a string, not {text!r}")
            out[key] = text
        return out

    def text(self, value: Any, who: str, field: str) -> str:
        """A string field ('' when absent)."""
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(who, field, f"must be a string, not {value!r}")
        return value

    def quantities(self, value: Any, who: str, field: str, *, all_names: bool = False
                   ) -> Quantities:
        out: Quantities = {}
        for name, raw in self.mapping(value, who, field).items():
            try:
                amount = parse_quantity(raw)
            except QuantityError as exc:
                raise self.fail(who, f"{field}.{name}", str(exc)) from exc
            if amount < 0:
                raise self.fail(who, f"{field}.{name}", f"{raw!r} is negative")
            if all_names or counted_by_volcano(str(name)):
                out[str(name)] = amount
        return out

    def resources(self, value: Any, who: str, field: str, *, all_names: bool = False
                  ) -> dict[str, str] | None:
        return None if value is None else _formatted(
            self.quantities(value, who, field, all_names=all_names))

    # -- the List ------------------------------------------------------------------

    def convert(self, dump: Mapping[str, Any], configuration_text: str | None,
                now: str | float | None, config_source: str = "<configuration>"
                ) -> dict[str, Any]:
        by_kind, config_maps = self.sort(dump)
        if configuration_text is not None:
            config = _configuration_document(configuration_text, config_source)
            self.config_origin = (config_source, "")
        elif config_maps:
            who, text = config_maps.pop(0)
            config = _configuration_document(text, f"{self.source}: {who}")
            self.config_origin = (f"{self.source}: {who}", f"data.{CONF_KEY}")
        else:
            config = yaml.safe_load(DEFAULT_CONFIGURATION_YAML)
            self.warnings.append(f"{self.source}: no Volcano scheduler ConfigMap among its "
                                 "items: Volcano's default configuration applies unless "
                                 "one is given (--config)")
        for who, _ in config_maps:
            self.warn(who, "not used: another scheduler configuration is")
        for item in by_kind["Node"]:
            if item.name in self.nodes:
                raise self.fail(item.who, "metadata.name", "a node of that name is in the dump "
                                "already")
            self.nodes[item.name] = self.node(item)
        for item in by_kind["Numatopology"]:
            self.numa_topology(item)
        for item in by_kind["PodGroup"]:
            if (item.namespace, item.name) in self.jobs:
                raise self.fail(item.who, "metadata.name", "a PodGroup of that name is in "
                                "the dump already")
            self.jobs[(item.namespace, item.name)] = self.podgroup(item)
        self.podgroups = set(self.jobs)
        tasks = [(item.who, task) for item in by_kind["Pod"] if (task := self.pod(item))]
        sections: dict[str, list[tuple[str, dict[str, Any]]]] = {
            "priorityClasses": [(i.who, self.priority_class(i))
                                for i in by_kind["PriorityClass"]],
            "queues": [(i.who, self.queue(i)) for i in by_kind["Queue"]],
            "nodes": [(f"Node {n}", node) for n, node in self.nodes.items()],
            "jobs": [(f"PodGroup {ns}/{n}", job) for (ns, n), job in self.jobs.items()],
            "tasks": tasks,
            "pdbs": [(i.who, self.pdb(i)) for i in by_kind["PodDisruptionBudget"]],
            "resourceQuotas": [(i.who, self.quota(i)) for i in by_kind["ResourceQuota"]],
            "configMaps": self.device_configs,
            "hyperNodes": [(i.who, self.hyper_node(i)) for i in by_kind["HyperNode"]],
            "nodeShards": [(i.who, self.node_shard(i)) for i in by_kind["NodeShard"]],
            "deviceClasses": [(i.who, _dra_object(i)) for i in by_kind["DeviceClass"]],
            "resourceSlices": [(i.who, _dra_object(i)) for i in by_kind["ResourceSlice"]],
            "resourceClaims": [(i.who, _dra_object(i)) for i in by_kind["ResourceClaim"]],
            "resourceClaimTemplates": [(i.who, _dra_object(i))
                                       for i in by_kind["ResourceClaimTemplate"]],
        }
        lines = [f"Imported from {Path(self.source).name} by `batchsched import kubectl` "
                 f"({len(self.nodes)} nodes, {len(self.jobs)} pod groups, {len(tasks)} pods, "
                 f"{len(sections['queues'])} queues{_dra_counts(sections)}).",
                 *(f"- {w}" for w in self.warnings)]
        document: dict[str, Any] = {"version": 1, "name": Path(self.source).stem,
                                    "description": "\n".join(lines), "config": config}
        if isinstance(now, str) and re.fullmatch(r"\d+(\.\d+)?", now.strip()):
            now = float(now)
        if now is not None:
            document["now"] = now
        for section, entries in sections.items():
            for index, (who, _) in enumerate(entries):
                self.origins[(section, index)] = who
            if entries or section in ("nodes", "jobs", "tasks"):
                document[section] = [entry for _, entry in entries]
        return document

    def sort(self, dump: Mapping[str, Any]
             ) -> tuple[dict[str, list[_Item]], list[tuple[str, str]]]:
        """The List's objects by kind, and its Volcano scheduler ConfigMaps (name, text);
        objects of other kinds are counted in one warning."""
        if not is_kubectl_dump(dump):
            raise ScenarioError("not a kubectl List (kind List with items)", source=self.source)
        by_kind: dict[str, list[_Item]] = {k: [] for k in _READ_KINDS}
        config_maps: list[tuple[str, str]] = []
        skipped: dict[str, int] = {}
        # Lists within the List (a NodeList among its items) give their objects.
        for place, obj in _located_items(dump):
            if not isinstance(obj, Mapping):
                raise self.fail(place, "", f"not an object: {obj!r}")
            item_kind = obj.get("kind")
            meta = self.mapping(obj.get("metadata"), place, "metadata")
            name = meta.get("name")
            if not isinstance(item_kind, str) or not item_kind:
                named = f" ({name})" if name else ""
                raise self.fail(f"{place}{named}", "", "an object without kind")
            if not isinstance(name, str) or not name:
                raise self.fail(f"{place} ({item_kind})", "",
                                "an object without metadata.name")
            namespace = str(meta.get("namespace") or "default")
            who = (f"{item_kind} {namespace}/{name}" if item_kind in _NAMESPACED
                   else f"{item_kind} {name}")
            api = str(obj.get("apiVersion") or "scheduling.volcano.sh/")
            data = self.mapping(obj.get("data"), who, "data") if item_kind == "ConfigMap" \
                else {}
            if item_kind in ("PodGroup", "Queue") and not api.startswith(
                    "scheduling.volcano.sh/"):
                self.warn(who, f"skipped: {api} is not Volcano's scheduling API")
            elif item_kind in by_kind:
                by_kind[item_kind].append(_Item(who, namespace, name, obj))
            elif (item_kind, api.partition("/")[0]) in _OWNER_KINDS:
                self.owner_annotations[item_kind, namespace, name] = self.strings(
                    meta.get("annotations"), who, "metadata.annotations")
            elif item_kind == "Namespace":
                self.owner_annotations["Namespace", "", name] = self.strings(
                    meta.get("annotations"), who, "metadata.annotations")
            elif CONF_KEY in data:
                if not isinstance(data[CONF_KEY], str):
                    raise self.fail(who, f"data.{CONF_KEY}", "must be a string")
                config_maps.append((who, data[CONF_KEY]))
            elif DEVICE_CONFIG_KEY in data:
                if not isinstance(data[DEVICE_CONFIG_KEY], str):
                    raise self.fail(who, f"data.{DEVICE_CONFIG_KEY}", "must be a string")
                self.device_configs.append((who, {
                    "name": name, "namespace": namespace,
                    "data": {DEVICE_CONFIG_KEY: data[DEVICE_CONFIG_KEY]}}))
            else:
                skipped[item_kind] = skipped.get(item_kind, 0) + 1
        if skipped:
            self.warnings.append(
                f"{self.source}: skipped {sum(skipped.values())} object(s) of other kinds ("
                + ", ".join(f"{k} {n}" for k, n in sorted(skipped.items()))
                + f"): batchsched reads {', '.join(_READ_KINDS)}, Volcano's scheduler "
                "ConfigMap and device configuration ConfigMaps, and the annotations of "
                "Namespaces and of pods' ReplicaSets, DaemonSets, StatefulSets and Jobs")
        return by_kind, config_maps

    def parse(self, document: Mapping[str, Any]) -> Scenario:
        """Load the converted document; a loader error is renamed after the Kubernetes
        object it is about, and the conversion's warnings come first."""
        try:
            scenario = parse_scenario(document, source=self.source)
        except ScenarioError as exc:
            raise self.renamed(exc) from exc
        if self.config_origin is not None:
            source, location = self.config_origin
            scenario = attrs.evolve(scenario, configuration=attrs.evolve(
                scenario.configuration, source=source, location=location))
        return attrs.evolve(scenario, warnings=(
            *self.warnings, *map(self.renamed_warning, scenario.warnings)),
            left_out_pods=MappingProxyType(dict(self.left_out_pods)))

    def renamed_warning(self, warning: str) -> str:
        """A loader warning (``SOURCE: PATH: problem``) renamed as errors are."""
        prefix = f"{self.source}: "
        if not warning.startswith(prefix):
            return warning
        path, separator, problem = warning[len(prefix):].partition(": ")
        if not separator:
            return warning
        return str(self.renamed(ScenarioError(problem, source=self.source, path=path)))

    def renamed(self, exc: ScenarioError) -> ScenarioError:
        match = re.fullmatch(r"(\w+)\[(\d+)\](?: \([^)]*\))?\.?(.*)", exc.path, re.S)
        if match is None or (match[1], int(match[2])) not in self.origins:
            return exc
        section, rest = match[1], match[3]
        cut = re.search(r"[.\[]", rest)
        head, tail = (rest[: cut.start()], rest[cut.start():]) if cut else (rest, "")
        field = _K8S_FIELDS.get(section, {}).get(head) or _COMMON_FIELDS.get(head) or (
            f"{_PREFIX.get(section, '')}{head}" if head else "")
        return self.fail(self.origins[(section, int(match[2]))], f"{field}{tail}", exc.problem)

    # -- objects -------------------------------------------------------------------

    def meta(self, item: _Item) -> dict[str, Any]:
        meta = self.mapping(item.obj.get("metadata"), item.who, "metadata")
        return {
            "annotations": self.strings(meta.get("annotations"), item.who,
                                        "metadata.annotations"),
            "labels": self.strings(meta.get("labels"), item.who, "metadata.labels"),
            "createdAt": meta.get("creationTimestamp"),
        }

    def parts(self, item: _Item) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        return (self.mapping(item.obj.get("spec"), item.who, "spec"),
                self.mapping(item.obj.get("status"), item.who, "status"))

    def node(self, item: _Item) -> dict[str, Any]:
        (spec, status), who = self.parts(item), item.who
        key = "allocatable" if status.get("allocatable") is not None else "capacity"
        images = {}
        for i, image in enumerate(self.seq(status.get("images"), who, "status.images")):
            entry = self.mapping(image, who, f"status.images[{i}]")
            size = entry.get("sizeBytes")
            if size is None:
                size = 0  # sizeBytes is omitted when empty (omitempty)
            if type(size) is not int or size < 0:
                raise self.fail(who, f"status.images[{i}].sizeBytes",
                                f"must be a size in bytes (a whole number >= 0), not {size!r}")
            for name in self.seq(entry.get("names"), who, f"status.images[{i}].names"):
                images[str(name)] = size
        taints = []
        for i, raw in enumerate(self.seq(spec.get("taints"), who, "spec.taints")):
            taint = self.mapping(raw, who, f"spec.taints[{i}]")  # timeAdded is not read
            taints.append(_drop_none({k: taint.get(k) for k in ("key", "value", "effect")}))
        meta = self.meta(item)
        return _drop_none({
            "name": item.name,
            "allocatable": self.resources(status.get(key), who, f"status.{key}"),
            "capacity": self.resources(status.get("capacity"), who, "status.capacity"),
            "labels": meta["labels"], "annotations": meta["annotations"], "taints": taints,
            "unschedulable": spec.get("unschedulable") or None,
            # Volcano ignores node conditions (setNodeState): a node that is not Ready
            # keeps pods off through the taints the node controller gives it.
            "images": images,
        })

    def numa_topology(self, item: _Item) -> None:
        """A ``Numatopology`` (``nodeinfo.volcano.sh/v1alpha1``, named after its node, as
        Volcano's NUMA exporter writes it): its spec is the node's ``numaTopology``."""
        node = self.nodes.get(item.name)
        if node is None:
            self.warn(item.who, "no Node of that name in the dump: not read")
            return
        if "numaTopology" in node:
            raise self.fail(item.who, "metadata.name", "a Numatopology of that name is in the "
                            "dump already")
        spec = self.mapping(item.obj.get("spec"), item.who, "spec")
        node["numaTopology"] = {key: spec[key] for key in NUMA_TOPOLOGY_KEYS
                                if spec.get(key) is not None}

    def podgroup(self, item: _Item) -> dict[str, Any]:
        spec, status = self.parts(item)
        converted = _drop_none({
            "name": item.name, "namespace": item.namespace,
            "queue": spec.get("queue") or "default",
            "minMember": spec.get("minMember"), "minTaskMember": spec.get("minTaskMember"),
            # Every name as written: Volcano's controllers put quota names there
            # (count/pods, requests.cpu), which its resourcequota plugin reads and
            # sessions leave out of every other count.
            "minResources": self.resources(spec.get("minResources"), item.who,
                                           "spec.minResources", all_names=True),
            "networkTopology": spec.get("networkTopology") or None,
            "subGroupPolicy": spec.get("subGroupPolicy") or None,
            "phase": status.get("phase") or None,
            # The status Volcano's job updater wrote: a session's close compares with it.
            "running": status.get("running") or None,
            "succeeded": status.get("succeeded") or None,
            "failed": status.get("failed") or None,
            "conditions": [
                _drop_none({"type": c.get("type"), "status": c.get("status"),
                            "reason": c.get("reason") or None,
                            "message": c.get("message") or None})
                for c in self.seq(status.get("conditions"), item.who, "status.conditions")
                if isinstance(c, Mapping) and c.get("type") in _POD_GROUP_CONDITIONS] or None,
            "priorityClassName": spec.get("priorityClassName") or None,
            **self.meta(item),
        })
        if spec.get("minResources") is not None and "minResources" not in converted:
            # An empty map is not none: Volcano's enqueue asks the plugins' vote for a
            # pod group with minResources, empty or not, and skips it only without.
            converted["minResources"] = {}
        return converted

    def pod_network_topology(self, annotations: Mapping[str, str],
                             who: str) -> dict[str, Any] | None:
        """The pod group Volcano's controller makes for a pod takes its network topology
        from the pod's annotations (``parseNetworkTopologyFromPod``): hard unless the
        mode says soft; a tier that is not an integer is left out, with a warning."""
        mode = annotations.get(NETWORK_TOPOLOGY_MODE)
        tier = annotations.get(NETWORK_TOPOLOGY_HIGHEST_TIER)
        if mode is None and tier is None:
            return None
        topology: dict[str, Any] = {"mode": "hard"}
        if mode is not None:
            if mode.lower() in ("hard", "soft"):
                topology["mode"] = mode.lower()
            else:
                self.warn(who, f"{NETWORK_TOPOLOGY_MODE}: {mode!r} is not hard or soft; "
                          "hard, as Volcano reads it")
        if tier is not None:
            if re.fullmatch(r"[+-]?\d+", tier) and int(tier) >= 0:
                topology["highestTierAllowed"] = int(tier)
            else:
                self.warn(who, f"{NETWORK_TOPOLOGY_HIGHEST_TIER}: {tier!r} is not a tier; "
                          "left out, as Volcano does")
        return topology

    def hyper_node(self, item: _Item) -> dict[str, Any]:
        spec, _ = self.parts(item)
        return _drop_none({"name": item.name, "tier": spec.get("tier"),
                           "tierName": spec.get("tierName") or None,
                           "members": spec.get("members")})

    def node_shard(self, item: _Item) -> dict[str, Any]:
        """A ``NodeShard`` (``shard.volcano.sh/v1alpha1``): the nodes it wants and, from
        its status, those its scheduler uses."""
        spec, status = self.parts(item)
        return _drop_none({"name": item.name,
                           "nodesDesired": self.names(spec.get("nodesDesired"), item.who,
                                                      "spec.nodesDesired"),
                           "nodesInUse": self.names(status.get("nodesInUse"), item.who,
                                                    "status.nodesInUse") or None})

    def names(self, value: Any, who: str, field: str) -> list[str]:
        """A list of names (node names)."""
        out = []
        for i, name in enumerate(self.seq(value, who, field)):
            if not isinstance(name, str):
                raise self.fail(who, f"{field}[{i}]", f"must be a name, not {name!r}")
            out.append(name)
        return out

    def queue(self, item: _Item) -> dict[str, Any]:
        (spec, status), who = self.parts(item), item.who
        guarantee = self.mapping(spec.get("guarantee"), who, "spec.guarantee")
        meta = self.meta(item)
        state = self.text(status.get("state"), who, "status.state")
        if not state:
            # Volcano's proportion and capacity plugins place nothing in a queue whose
            # state is not Open.
            self.warn(who, "no status.state (read as Unknown): under the proportion or "
                      "capacity plugin, Volcano schedules none of its jobs until the queue "
                      "controller opens it")
            state = "Unknown"
        return _drop_none({
            "name": item.name, "weight": spec.get("weight"),
            "capability": self.resources(spec.get("capability"), who, "spec.capability"),
            "deserved": self.resources(spec.get("deserved"), who, "spec.deserved"),
            "guarantee": self.resources(guarantee.get("resource"), who,
                                        "spec.guarantee.resource"),
            "reclaimable": spec.get("reclaimable"), "parent": spec.get("parent") or None,
            "priority": spec.get("priority"), "state": state,
            "annotations": meta["annotations"], "affinity": spec.get("affinity"),
            "createdAt": meta["createdAt"],
        })

    def priority_class(self, item: _Item) -> dict[str, Any]:
        obj = item.obj
        return _drop_none({"name": item.name, "value": obj.get("value"),
                           "globalDefault": obj.get("globalDefault") or None,
                           "preemptionPolicy": obj.get("preemptionPolicy")})

    def pdb(self, item: _Item) -> dict[str, Any]:
        (spec, status), who = self.parts(item), item.who
        selector = self.mapping(spec.get("selector"), who, "spec.selector")
        labels = self.strings(selector.get("matchLabels"), who, "spec.selector.matchLabels")
        expressions = self.seq(selector.get("matchExpressions"), who,
                               "spec.selector.matchExpressions")
        disrupted = self.mapping(status.get("disruptedPods"), who, "status.disruptedPods")
        out: dict[str, Any] = {"name": item.name, "namespace": item.namespace,
                               "selector": labels, "matchExpressions": expressions or None,
                               # Pods being evicted, which the budget no longer charges.
                               "disruptedPods": sorted(disrupted) or None}
        # Volcano's pdb plugin reads the status the disruption controller computed; a
        # budget without one is worked out from its spec (a hand-written dump), and
        # one without either allows none (the status' zero value).
        if status.get("disruptionsAllowed") is not None:
            out["disruptionsAllowed"] = status["disruptionsAllowed"]
        elif spec.get("minAvailable") is None and spec.get("maxUnavailable") is None:
            out["disruptionsAllowed"] = 0
        else:
            out.update({"minAvailable": spec.get("minAvailable"),
                        "maxUnavailable": spec.get("maxUnavailable")})
        return _drop_none(out)

    def quota(self, item: _Item) -> dict[str, Any]:
        (spec, status), who = self.parts(item), item.who
        # Volcano's cache keeps a quota's status only: until the quota controller has
        # written status.hard, the resourcequota plugin limits nothing.
        hard = self.quantities(status.get("hard"), who, "status.hard", all_names=True)
        if not hard and spec.get("hard"):
            self.warn(who, "no status.hard yet (the quota controller writes it): Volcano's "
                      "resourcequota plugin limits nothing by it until then, and spec.hard "
                      "is not read")
        used = self.quantities(status.get("used"), who, "status.used", all_names=True)
        # As written (checked above): the quantities keep the format the status gave.
        return _drop_none({"name": item.name, "namespace": item.namespace,
                           "hard": _as_written(status.get("hard"), hard),
                           "used": _as_written(status.get("used"), used)})

    # -- pods ----------------------------------------------------------------------

    def container_requests(self, container: Any, who: str, field: str) -> Quantities:
        """A container's requests; a resource with only a limit requests the limit (the
        API server's defaulting)."""
        resources = self.mapping(self.mapping(container, who, field).get("resources"), who,
                                 f"{field}.resources")
        requests = self.quantities(resources.get("requests"), who,
                                   f"{field}.resources.requests")
        limits = self.quantities(resources.get("limits"), who, f"{field}.resources.limits")
        given = self.mapping(resources.get("requests"), who, f"{field}.resources.requests")
        return {**{k: v for k, v in limits.items() if k not in given}, **requests}

    def pod_requests(self, spec: Mapping[str, Any], status: Mapping[str, Any], who: str,
                     *, non_missing: bool = False) -> tuple[Quantities, Quantities | None]:
        """The containers' requests (plus sidecars and overhead) and what the pod needs
        while its init containers run, as Volcano's ``GetPodResourceRequest`` computes
        them: each container's requests rounded as ``NewResource`` rounds them, a
        resized container's as its status says (in-place resize), then the pod-level
        cpu and memory in their place when the pod sets them. With ``non_missing``,
        a container that asks no cpu (memory) asks 100m (200Mi): kube-scheduler's
        figure for its resource scores (``NonMissingContainerRequests``)."""
        resized = self.container_statuses(status, "containerStatuses", who)
        resized_init = self.container_statuses(status, "initContainerStatuses", who)
        infeasible = _resize_infeasible(status)
        total: Quantities = {}
        asked: set[str] = set()  # what some container requests (non-missing figures aside)
        for i, raw in enumerate(self.seq(spec.get("containers"), who, "spec.containers")):
            field = f"spec.containers[{i}]"
            container = self.entry(raw, who, field)
            own = self.container_requests(container, who, field)
            own = self.resized(own, resized, container, infeasible=infeasible, who=who)
            asked.update(own)
            if non_missing:
                own = {**_NON_MISSING, **own}
            _add(total, _rounded(own))
        sidecars: Quantities = {}
        init: Quantities = {}
        inits = self.seq(spec.get("initContainers"), who, "spec.initContainers")
        for i, raw in enumerate(inits):
            field = f"spec.initContainers[{i}]"
            container = self.entry(raw, who, field)
            own = self.container_requests(container, who, field)
            sidecar = container.get("restartPolicy") == "Always"  # keeps running
            if sidecar:
                own = self.resized(own, resized_init, container, infeasible=infeasible,
                                   who=who)
            asked.update(own)
            if non_missing:
                own = {**_NON_MISSING, **own}
            if sidecar:
                _add(sidecars, _rounded(own))
                need = dict(sidecars)
            else:
                need = _add(dict(_rounded(own)), sidecars)
            for name, amount in need.items():
                init[name] = max(init.get(name, Fraction(0)), amount)
        overhead = _rounded(self.quantities(spec.get("overhead"), who, "spec.overhead"))
        _add(total, sidecars)
        pod_level = self.pod_level_requests(spec, who, asked)
        for name, amount in pod_level.items():
            total[name] = amount
            if name in init:
                init[name] = amount
        _add(total, overhead)
        if not inits:
            return total, None
        return total, {name: amount + overhead.get(name, Fraction(0))
                       for name, amount in init.items()}

    def pod_limits(self, spec: Mapping[str, Any], who: str) -> Quantities:
        """The pod's limits as a quota counts them (Kubernetes' ``PodLimits``, of cpu,
        memory and ephemeral storage): the containers' and sidecars' sum, or an init
        container's (with the sidecars started before it) when larger; the pod-level
        cpu and memory limits in their place; plus the overhead of what is limited."""
        def limits(container: Any, field: str) -> Quantities:
            resources = self.mapping(self.mapping(container, who, field).get("resources"),
                                     who, f"{field}.resources")
            found = self.quantities(resources.get("limits"), who, f"{field}.resources.limits")
            return {k: v for k, v in found.items() if k in _QUOTA_LIMITED}

        total: Quantities = {}
        for i, container in enumerate(self.seq(spec.get("containers"), who,
                                               "spec.containers")):
            _add(total, limits(container, f"spec.containers[{i}]"))
        sidecars: Quantities = {}
        largest: Quantities = {}
        for i, raw in enumerate(self.seq(spec.get("initContainers"), who,
                                         "spec.initContainers")):
            container = self.entry(raw, who, f"spec.initContainers[{i}]")
            own = limits(container, f"spec.initContainers[{i}]")
            if container.get("restartPolicy") == "Always":
                _add(total, own)
                _add(sidecars, own)
                need = dict(sidecars)
            else:
                need = _add(dict(own), sidecars)
            for name, amount in need.items():
                largest[name] = max(largest.get(name, Fraction(0)), amount)
        for name, amount in largest.items():
            total[name] = max(total.get(name, Fraction(0)), amount)
        resources = self.mapping(spec.get("resources"), who, "spec.resources")
        pod_level = self.quantities(resources.get("limits"), who, "spec.resources.limits")
        total.update({k: v for k, v in pod_level.items() if k in ("cpu", "memory")})
        overhead = self.quantities(spec.get("overhead"), who, "spec.overhead")
        return {name: amount + overhead.get(name, Fraction(0))
                for name, amount in total.items()}

    def pod_level_requests(self, spec: Mapping[str, Any], who: str,
                           asked: Collection[str] = ()) -> Quantities:
        """The pod-level requests (``spec.resources``; Kubernetes' PodLevelResources) of
        the resources it supports (cpu, memory, ``hugepages-*``:
        ``IsSupportedPodLevelResource``), which replace the containers' sum when set.

        A pod-level limit is the request of its resource when the pod level requests
        none, as the API server defaults it (``defaultPodRequests``; a dump from a
        cluster has it already), unless a container (``asked``) requests cpu or memory:
        those default to the containers' total, which they are anyway. Hugepages are
        not overcommitted: their limit is their request whatever the containers ask."""
        resources = self.mapping(spec.get("resources"), who, "spec.resources")
        requests = self.quantities(resources.get("requests"), who, "spec.resources.requests")
        limits = self.quantities(resources.get("limits"), who, "spec.resources.limits")
        for name, amount in limits.items():
            if name not in requests and not (name in ("cpu", "memory") and name in asked):
                requests[name] = amount
        return _rounded({name: amount for name, amount in requests.items()
                         if name in ("cpu", "memory") or name.startswith("hugepages-")})

    def container_statuses(self, status: Mapping[str, Any], key: str, who: str
                           ) -> dict[str, tuple[str, Mapping[str, Any]]]:
        """The container statuses that report resources, by container name: each with
        its place in the pod (``status.containerStatuses[i]``)."""
        out: dict[str, tuple[str, Mapping[str, Any]]] = {}
        for i, raw in enumerate(self.seq(status.get(key), who, f"status.{key}")):
            where = f"status.{key}[{i}]"
            entry = self.mapping(raw, who, where)
            if entry.get("resources") is not None:
                out[self.text(entry.get("name"), who, f"{where}.name")] = (where, entry)
        return out

    def resized(self, own: Quantities, statuses: Mapping[str, tuple[str, Mapping[str, Any]]],
                container: Any, *, infeasible: bool, who: str) -> Quantities:
        """A container's requests under in-place resize (Volcano's
        ``determineContainerReqs``): the largest of the spec's (unless the resize is
        infeasible), the status' and the allocated resources."""
        found = statuses.get(str(container.get("name")))
        if found is None:
            return own
        where, entry = found
        reported = self.quantities(
            self.mapping(entry.get("resources"), who, f"{where}.resources").get("requests"),
            who, f"{where}.resources.requests")
        allocated = self.quantities(entry.get("allocatedResources"), who,
                                    f"{where}.allocatedResources")
        out: Quantities = dict(reported) if infeasible else dict(own)
        for more in ((allocated,) if infeasible else (reported, allocated)):
            for name, amount in more.items():
                if name not in out or amount > out[name]:
                    out[name] = amount
        return out

    def upper_annotations(self, references: list[Mapping[str, Any]], namespace: str
                          ) -> dict[str, str]:
        """The annotations of a pod's owners in the dump (``getAnnotationsFromUpperRes``:
        a ReplicaSet, DaemonSet, StatefulSet or Job, in reference order; the first
        owner's value of a key stands)."""
        out: dict[str, str] = {}
        for ref in references:
            kind, name = ref.get("kind"), ref.get("name")
            if not (isinstance(kind, str) and isinstance(name, str) and kind and name):
                continue
            for key, value in self.owner_annotations.get((kind, namespace, name), {}).items():
                out.setdefault(key, value)
        return out

    def pod(self, item: _Item) -> dict[str, Any] | None:
        (spec, status), who = self.parts(item), item.who
        namespace, name = item.namespace, item.name
        meta = self.mapping(item.obj.get("metadata"), who, "metadata")
        phase = self.text(status.get("phase"), who, "status.phase") or "Pending"
        node = self.text(spec.get("nodeName"), who, "spec.nodeName")
        scheduler = self.text(spec.get("schedulerName"), who,
                              "spec.schedulerName") or "default-scheduler"
        requests, init = self.pod_requests(spec, status, who)
        ours = scheduler in self.scheduler_names
        uid = f"{namespace}/{name}"
        if not ours and not node:
            self.leave_out(who, uid, f"it waits for scheduler {scheduler!r}, and Volcano "
                           "schedules only its own pods "
                           f"({', '.join(sorted(self.scheduler_names))})")
            return None
        fields = self.meta(item)
        group = fields["annotations"].get(GROUP_NAME)
        if not ours and phase in _COMPLETED and (
                not group or (namespace, group) not in self.podgroups):
            # No node holds it and no job counts it: Volcano does nothing with it. One
            # of an existing pod group still counts in its job (a finished task).
            self.left_out_pods[uid] = (f"it is {phase}, a pod of scheduler {scheduler!r} "
                                       "that no pod group counts")
            return None
        # A placed pod that no pod group holds only holds its node in Volcano's cache:
        # another scheduler's pod (no PodGroup is ever made for it), or one whose
        # PodGroup is missing (the snapshot leaves such a job out).
        foreign = not group and not ours
        if group and (namespace, group) not in self.podgroups:
            if not node or phase in _COMPLETED:
                self.leave_out(who, uid, missing_pod_group(f"{namespace}/{group}") if
                               phase not in _COMPLETED else
                               f"its PodGroup {namespace}/{group} does not exist, and it "
                               f"is {phase}: no job counts it")
                return None
            self.warn(who, f"its PodGroup {namespace}/{group} does not exist; the pod holds "
                      f"its place on {node}, in no job (Volcano's snapshot leaves such a "
                      "job out)")
            foreign = True
        if foreign:
            group = None
        elif not group:  # Volcano's controller gives the pod a PodGroup of its own
            references = [ref for ref in self.seq(
                meta.get("ownerReferences"), who, "metadata.ownerReferences")
                if isinstance(ref, Mapping)]
            owner = next((ref.get("uid") for ref in references
                          if ref.get("controller") and ref.get("uid")), None)
            group = f"podgroup-{owner or meta.get('uid') or name}"
        if group is not None and (namespace, group) not in self.jobs:
            effective = dict(requests)
            for key, amount in (init or {}).items():
                effective[key] = max(effective.get(key, Fraction(0)), amount)
            # The controller's reading of the pod's owners (their annotations, the first
            # owner's for a key), and its minResources: the pod's quota usage times
            # minMember (CalTaskRequests).
            upper = self.upper_annotations(references, namespace)
            min_member = _group_min_member(upper)
            annotations, labels = _inherited_from_pod(fields["annotations"], fields["labels"])
            annotations = {**{k: v for k, v in upper.items() if k.startswith("volcano.sh/")},
                           **annotations}
            usage = _quota_usage({} if phase in _COMPLETED else effective,
                                 self.pod_limits(spec, who), ended=phase in _COMPLETED)
            # The admission webhook moves a group of the default queue to its
            # namespace's queue (the namespace's queue-name annotation).
            queue = fields["annotations"].get(QUEUE_NAME) or "default"
            if queue == "default":
                queue = self.owner_annotations.get(("Namespace", "", namespace), {}).get(
                    QUEUE_NAME) or queue
            self.jobs[(namespace, group)] = _drop_none({
                "name": group, "namespace": namespace,
                "annotations": annotations or None, "labels": labels or None,
                "queue": queue, "minMember": min_member,
                "minResources": _formatted({key: amount * min_member
                                            for key, amount in usage.items()}),
                "phase": "Running" if node else None,
                "priorityClassName": spec.get("priorityClassName") or None,
                "createdAt": fields["createdAt"],
                "networkTopology": self.pod_network_topology(fields["annotations"], who),
            })
            if not min_member:
                # No replica: CalTaskRequests adds none, an empty (not absent) list.
                self.jobs[(namespace, group)]["minResources"] = {}
        if node and node not in self.nodes:
            self.warn(who, f"its node {node} is not in the dump: a NotReady stand-in holds it "
                      "and every pod placed there")
            self.nodes[node] = {"name": node, "allocatable": {}, "ready": False}
        nominated = self.text(status.get("nominatedNodeName"), who,
                              "status.nominatedNodeName") or None
        containers = [self.entry(c, who, f"spec.containers[{i}]")
                      for i, c in enumerate(self.seq(spec.get("containers"), who,
                                                     "spec.containers"))]
        init_containers = [self.entry(c, who, f"spec.initContainers[{i}]")
                           for i, c in enumerate(self.seq(spec.get("initContainers"), who,
                                                          "spec.initContainers"))]
        ports: list[int | dict[str, Any]] = []
        # A sidecar's (a restartable init container's) host ports are the pod's too, as
        # kube-scheduler's GetHostPorts counts them (Kubernetes 1.33 and later).
        port_holders = [(f"spec.containers[{c}]", container)
                        for c, container in enumerate(containers)]
        port_holders += [(f"spec.initContainers[{c}]", container)
                         for c, container in enumerate(init_containers)
                         if container.get("restartPolicy") == "Always"]
        for holder, container in port_holders:
            for p, port in enumerate(self.seq(container.get("ports"), who, f"{holder}.ports")):
                where = f"{holder}.ports[{p}]"
                entry = self.mapping(port, who, where)
                host_port = entry.get("hostPort")
                if not host_port:
                    continue
                if (not isinstance(host_port, int) or isinstance(host_port, bool)
                        or not 0 < host_port < 65536):
                    raise self.fail(who, f"{where}.hostPort", f"{host_port!r} is not a port")
                protocol = self.text(entry.get("protocol"), who, f"{where}.protocol") or "TCP"
                host_ip = self.text(entry.get("hostIP"), who, f"{where}.hostIP")
                ports.append(host_port if (protocol, host_ip) == ("TCP", "") else _drop_none(
                    {"port": host_port, "protocol": protocol, "hostIP": host_ip or None}))
        # What the API server merged of matchLabelKeys when it stored the pod is taken as
        # merged (stored_pod_term).
        pod_labels = fields["labels"] or {}
        spread = spec.get("topologySpreadConstraints")
        if isinstance(spread, list):
            spread = [stored_pod_term(constraint, pod_labels) for constraint in spread]
        return _drop_none({
            "name": name, "namespace": namespace, "job": group,
            "role": task_spec_of(fields["annotations"], fields["labels"]) or None,
            "node": node or None, "phase": phase,
            "deleting": True if meta.get("deletionTimestamp") else None,
            "preemptedByScheduler": True if _preempted_by_scheduler(status) else None,
            "requests": _formatted(requests), "initRequests": init and _formatted(init),
            "nonZeroRequests": _nonzero_request(
                self.pod_requests(spec, status, who, non_missing=True), requests, init),
            "priority": spec.get("priority"),
            "priorityClassName": spec.get("priorityClassName") or None,
            "preemptionPolicy": spec.get("preemptionPolicy"),
            "labels": fields["labels"], "annotations": fields["annotations"],
            "nodeSelector": spec.get("nodeSelector"), "tolerations": spec.get("tolerations"),
            "affinity": stored_pod_affinity(spec.get("affinity"), pod_labels),
            "hostPorts": ports,
            "topologySpreadConstraints": spread or None,
            # Every container's image, init containers' too: kube-scheduler's image
            # locality (since v1.30) sums and counts over both.
            "images": [c["image"] for c in (*init_containers, *containers)
                       if c.get("image")],
            "createdAt": fields["createdAt"],
            "uid": self.text(meta.get("uid"), who, "metadata.uid") or None,
            # When a placed pod started: a replay forward counts its run from there.
            "startTime": (status.get("startTime") or None) if node else None,
            "nominatedNodeName": nominated if not node and nominated in self.nodes else None,
            "resourceClaims": spec.get("resourceClaims") or None,
            "schedulingGates": spec.get("schedulingGates") or None,
            "resourceClaimStatuses": status.get("resourceClaimStatuses") or None,
            # The PodScheduled condition a session wrote (False): the same one again
            # records no FailedScheduling event.
            "scheduledCondition": next((
                _drop_none({"reason": c.get("reason") or None,
                            "message": c.get("message") or None})
                for c in self.seq(status.get("conditions"), who, "status.conditions")
                if isinstance(c, Mapping) and c.get("type") == "PodScheduled"
                and c.get("status") == "False"), None) if not node else None,
        })


def _dra_counts(sections: Mapping[str, list[tuple[str, dict[str, Any]]]]) -> str:
    """``, 2 resource slices, 3 resource claims`` for the DRA objects a dump holds."""
    names = {"deviceClasses": "device classes", "resourceSlices": "resource slices",
             "resourceClaims": "resource claims",
             "resourceClaimTemplates": "resource claim templates"}
    return "".join(f", {len(sections[key])} {name}" for key, name in names.items()
                   if sections.get(key))


def _dra_object(item: _Item) -> dict[str, Any]:
    """A DeviceClass, ResourceSlice, ResourceClaim or ResourceClaimTemplate in the
    Kubernetes shape the scenario format reads, its bookkeeping metadata left out."""
    metadata = item.obj.get("metadata")
    kept = {key: value for key, value in metadata.items() if key in _DRA_METADATA} \
        if isinstance(metadata, Mapping) else {"name": item.name}
    return {"metadata": kept, "spec": item.obj.get("spec") or {},
            **({"status": item.obj["status"]} if item.obj.get("status") else {})}


# Where a scenario field comes from in the Kubernetes object (for renamed errors).
#: What Volcano's pod-group controller copies from a pod into the PodGroup it makes for
#: it (buildPodGroupFromPod): these annotations, the first of the two budgets, and
#: these labels.
_POD_GROUP_ANNOTATIONS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time",
                          "volcano.sh/revocable-zone")
_POD_GROUP_BUDGETS = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
_POD_GROUP_LABELS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")


def _as_written(raw: Any, read: Quantities) -> dict[str, Any] | None:
    """The quantities of ``raw`` that were read into ``read``, as the object wrote them
    (None when there are none)."""
    if not read or not isinstance(raw, Mapping):
        return _formatted(read)
    return {name: raw[name] for name in read if name in raw} or None


def _group_min_member(upper: Mapping[str, str]) -> int:
    """The controller's ``getMinMemberFromUpperRes``: the owners'
    ``scheduling.volcano.sh/group-min-member`` when Go's ``ParseInt(.., 10, 32)`` reads
    it and it is not negative, else 1."""
    raw = upper.get(GROUP_MIN_MEMBER)
    if raw is None:
        return 1
    value, ok = parse_int(raw, 32)
    return value if ok and value >= 0 else 1


def _inherited_from_pod(annotations: Mapping[str, str], labels: Mapping[str, str]
                        ) -> tuple[dict[str, str], dict[str, str]]:
    """The annotations and labels the PodGroup Volcano makes for a pod inherits."""
    inherited = {key: annotations[key] for key in _POD_GROUP_ANNOTATIONS if key in annotations}
    budget = next((key for key in _POD_GROUP_BUDGETS if key in annotations), None)
    if budget is not None:
        inherited[budget] = annotations[budget]
    return inherited, {key: labels[key] for key in _POD_GROUP_LABELS if key in labels}


_COMMON_FIELDS = {"labels": "metadata.labels", "annotations": "metadata.annotations",
                  "createdAt": "metadata.creationTimestamp", "name": "metadata.name",
                  "namespace": "metadata.namespace"}
_PREFIX = {"tasks": "spec.", "jobs": "spec.", "queues": "spec.", "pdbs": "spec.",
           "resourceQuotas": "spec.", "hyperNodes": "spec."}
_K8S_FIELDS = {
    "nodes": {"allocatable": "status.allocatable", "capacity": "status.capacity",
              "taints": "spec.taints", "unschedulable": "spec.unschedulable",
              "images": "status.images", "numaTopology": "(its Numatopology's) spec"},
    "tasks": {"job": f"metadata.annotations.{GROUP_NAME}", "node": "spec.nodeName",
              "role": f"metadata.annotations.{TASK_SPEC_KEY} (or label)", "phase": "status.phase",
              "deleting": "metadata.deletionTimestamp", "startTime": "status.startTime",
              "preemptedByScheduler": "status.conditions",
              "requests": "spec.containers[*].resources.requests",
              "initRequests": "spec.initContainers[*].resources.requests",
              "nonZeroRequests": "spec.containers[*].resources.requests",
              "hostPorts": "spec.containers[*].ports[*].hostPort (and sidecars')",
              "images": "spec.containers[*].image",
              "resourceClaimStatuses": "status.resourceClaimStatuses",
              "scheduledCondition": "status.conditions[type=PodScheduled]"},
    "jobs": {"phase": "status.phase", "running": "status.running",
             "succeeded": "status.succeeded", "failed": "status.failed",
             "conditions": "status.conditions"},
    "queues": {"guarantee": "spec.guarantee.resource", "state": "status.state"},
    "pdbs": {"selector": "spec.selector.matchLabels",
             "matchExpressions": "spec.selector.matchExpressions",
             "disruptionsAllowed": "status.disruptionsAllowed"},
    "resourceQuotas": {"hard": "status.hard", "used": "status.used"},
}
