"""Load a scenario file (scenario format version 1) strictly.

Every object is checked: an unknown key, a missing reference or a malformed
quantity raises :class:`~batchsched.errors.ScenarioError` whose message names
the file, the object and the field, e.g.
``s.yaml: tasks[3] (c1/p4).requests.memory: "1Qi" is not a quantity``.
The two tolerances of the format (a job whose queue is missing is dropped, an
unknown priority class counts as priority 0) are reported as warnings in
:attr:`Scenario.warnings`.

Large scenarios are mostly plain nodes, jobs and tasks (a few keys, all well
formed): those are built without the checks' bookkeeping (``plain_node``,
``plain_job``, ``plain_task``); anything else, and so every error and warning,
goes through the checked path.

The module is long because it is the format's whole grammar, one method per kind
of object, sharing one error convention (file, object, field).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import math
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import yaml

from batchsched.api.ascend_annotations import (
    ALLOCATED_SUFFIX,
    REGISTER_PREFIX,
    decode_devices,
    read_register,
)
from batchsched.api.cluster import (
    SYSTEM_PRIORITY_CLASSES,
    ClusterInfo,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
)
from batchsched.api.devices import gpu_ask
from batchsched.api.gpushare import GPU_INDEX_ANNOTATION, UNHEALTHY_ANNOTATION, gpu_index
from batchsched.api.hypernode import (
    CLUSTER_TOP,
    HARD,
    SOFT,
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    TopologyError,
    build_topology,
    unmatched_brackets,
)
from batchsched.api.job import (
    REQUESTED_RUNTIME_ANNOTATION,
    SLA_WAITING_TIME_ANNOTATIONS,
    JobInfo,
    PodGroup,
    waiting_time_from,
)
from batchsched.api.node import NodeInfo, NodeUsage
from batchsched.api.numa import (
    CPU_MANAGER_POLICY,
    MAX_NUMA_NODES,
    TOPOLOGY_MANAGER_POLICY,
    CpuDetails,
    CPUInfo,
    NumaResource,
    NumaTopology,
    format_cpuset,
    parse_cpuset,
)
from batchsched.api.oversubscription import (  # OVERSUBSCRIPTION_*: re-exported too
    OVERSUBSCRIPTION_CPU,
    OVERSUBSCRIPTION_MEMORY,
    node_oversubscription,
)
from batchsched.api.queue import ROOT_QUEUE, NodeGroupAffinity, QueueInfo
from batchsched.api.resource import CPU, Resource
from batchsched.api.resource_names import counted_by_volcano
from batchsched.api.sharding import NodeShard
from batchsched.api.sub_job import SubGroupPolicy
from batchsched.api.task import TASK_SPEC_KEY, TaskInfo, task_spec_of
from batchsched.api.types import (
    COMPLETED_STATUSES,
    GO_ZERO_TIME,
    NO_COUNTS,
    NO_LABELS,
    PodGroupCondition,
    PodGroupConditionType,
    PodGroupPhase,
    QueueState,
    TaskStatus,
)
from batchsched.api.vgpu import (
    ASSIGNED_IDS_ANNOTATION,
    NODE_REGISTER_ANNOTATION,
    unreadable_devices,
    why_no_vgpus,
)
from batchsched.cache.memory import MemoryCache
from batchsched.conf import (
    SchedulerConfiguration,
    as_volcano_reads,
    default_configuration,
    parse_configuration,
)
from batchsched.errors import ConfigError, QuantityError, ScenarioError
from batchsched.framework.arguments import parse_duration
from batchsched.framework.events import EVENT_FIELDS
from batchsched.kube.affinity import (
    AffinityError,
    Requirement,
    UnparsableSelectorError,
    parse_affinity,
    parse_label_selector,
)
from batchsched.kube.cel.re2 import Re2Error
from batchsched.kube.cel.re2_search import Re2Search
from batchsched.kube.dra.claims import instantiate_templates
from batchsched.kube.dra.documents import parse_dra_documents, parse_pod_claims
from batchsched.kube.dra.objects import DraObjectError, PodClaim
from batchsched.kube.dra.scheduling import DraObjects
from batchsched.kube.go_strconv import parse_int, quote
from batchsched.kube.go_yaml import GoYamlLoader, check_aliasing
from batchsched.kube.go_yaml import resolve as go_resolve
from batchsched.kube.host_ports import PROTOCOLS, HostPort
from batchsched.kube.pod_view import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    kube_int,
)
from batchsched.kube.quantity import canonical_text, parse_quantity
from batchsched.kube.taints import Taint, Toleration
from batchsched.kube.topology_spread import (
    SpreadConstraint,
    TopologySpreadError,
    parse_topology_spread,
)

__all__ = ["Scenario", "load_scenario", "parse_scenario"]

T = TypeVar("T")

_TOP_KEYS = {"version", "name", "description", "config", "priorityClasses", "queues", "nodes",
             "jobs", "tasks", "pdbs", "resourceQuotas", "configMaps", "hyperNodes", "now",
             "faults", "expect", "deviceClasses", "resourceSlices", "resourceClaims",
             "resourceClaimTemplates", "nodeShards"}
#: The keys ``expect`` checks (besides ``x-`` extensions).
EXPECT_KEYS = frozenset({
    "binds", "bindCount", "evicted", "evictCount", "pipelined", "podGroupPhases",
    "taskStatusCounts", "scores", "bindFailures", "nominated", "gpuDevices", "vgpuDevices",
    "vnpuDevices", "claimAllocations", "queueStatus", "events"})


@attrs.frozen
class Scenario:
    """A parsed scenario. :meth:`build_cache` gives a fresh cluster each time."""

    name: str
    description: str
    source: str
    configuration: SchedulerConfiguration
    priority_classes: tuple[PriorityClass, ...]
    queues: tuple[QueueInfo, ...]
    nodes: tuple[NodeInfo, ...]
    jobs: tuple[JobInfo, ...]
    tasks: tuple[TaskInfo, ...]
    pdbs: tuple[PodDisruptionBudget, ...]
    resource_quotas: tuple[ResourceQuota, ...]
    now: float | None
    expect: Mapping[str, Any]
    warnings: tuple[str, ...] = ()
    #: ``faults.bindFailures``: the tasks whose bind the cache refuses (platform tests).
    bind_failures: frozenset[str] = frozenset()
    #: ``configMaps``: ``namespace/name`` -> data.
    config_maps: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    #: ``hyperNodes``: the network topology.
    hyper_nodes: tuple[HyperNode, ...] = ()
    #: ``nodeShards``: the NodeShard objects (scheduler sharding).
    node_shards: tuple[NodeShard, ...] = ()
    #: ``deviceClasses``, ``resourceSlices``, ``resourceClaims`` and
    #: ``resourceClaimTemplates`` as declared (the claims tasks get from templates are
    #: made by :meth:`to_cluster` and :meth:`build_cache`).
    dra: DraObjects = attrs.field(factory=DraObjects)
    #: The fields whose relative time (``"-90s"``) was read from the wall clock, the
    #: file giving no ``now``: each run of the file reads another time (a replay
    #: refuses them: it needs a fixed clock).
    wall_clock_times: tuple[str, ...] = ()
    #: Whether the file gives its ``config`` (else ``configuration`` is the default:
    #: only a file read with ``config_required=False`` may leave it out).
    configuration_given: bool = True
    #: The queues of ``queues`` the file does not declare (``default`` and ``root``,
    #: which every cluster has): a workload's own declaration of them wins over a
    #: ``--cluster`` file's that did not declare them.
    implicit_queues: frozenset[str] = frozenset()
    #: Pods of a cluster dump the conversion left out (``namespace/name`` -> why: another
    #: scheduler's, or of a PodGroup the dump does not have), for the questions asked
    #: about them (``batchsched explain``). Empty for a scenario file.
    left_out_pods: Mapping[str, str] = attrs.field(factory=dict)

    def to_cluster(self, *, copy: bool = True) -> ClusterInfo:
        """The snapshot a session opens on: Ready nodes with their placed tasks, and the
        jobs (whose queue exists) with their tasks.

        With ``copy=False`` the scenario's own objects are handed over: faster for a
        one-shot run, after which this scenario must not be run again.
        """
        def fresh_job(job: JobInfo) -> JobInfo:
            if not copy and job.mutations == 0 and not job.tasks and not job.task_status_index:
                return job  # as the loader built it: it never held a task
            twin = job.clone() if copy else job
            twin.tasks.clear()
            twin.task_status_index.clear()
            twin.allocated = Resource()
            twin.total_request = Resource()
            return twin

        nodes = {n.name: (n.clone() if copy else n) for n in self.nodes if n.ready}
        not_ready = {n.name: (n.clone() if copy else n) for n in self.nodes if not n.ready}
        queue_names = {queue.name for queue in self.queues}
        # A job whose queue does not exist is left out (as Volcano's snapshot does); its
        # placed pods still hold their nodes.
        jobs = {job.uid: fresh_job(job) for job in self.jobs if job.queue in queue_names}
        tasks = [task.clone() for task in self.tasks] if copy else self.tasks
        claims = dict(self.dra.resource_claims)
        for task in tasks:
            if task.resource_claims:
                # The claim controller's part: a claim of its own from each template named.
                task.resource_claims = instantiate_templates(
                    task.resource_claims, namespace=task.namespace, pod=task.name,
                    pod_uid=task.uid, templates=self.dra.claim_templates, claims=claims)
        for task in tasks:
            job = jobs.get(task.job)
            if job is not None:
                job.add_task(task)
            if (task.node_name and task.status != TaskStatus.PENDING
                    and task.status not in COMPLETED_STATUSES):
                holder = nodes.get(task.node_name) or not_ready.get(task.node_name)
                if holder is not None:
                    holder.add_task(task)
        return ClusterInfo(
            nodes=nodes, jobs=jobs, queues={q.name: q.clone() for q in self.queues},
            priority_classes={pc.name: pc for pc in self.priority_classes},
            pdbs=[attrs.evolve(p) for p in self.pdbs],
            resource_quotas=[attrs.evolve(q, used=q.used.clone()) for q in self.resource_quotas],
            now=self.now if self.now is not None else time.time(),
            config_maps={key: dict(data) for key, data in self.config_maps.items()},
            hyper_nodes=self.hyper_nodes,
            node_shards=self.node_shards,
            dra=attrs.evolve(self.dra, resource_claims=claims) if self.dra else self.dra,
            not_ready_nodes=not_ready,
        )

    def build_cache(self) -> MemoryCache:
        """A new in-memory cluster holding this scenario's objects (copies)."""
        cache = MemoryCache(now=self.now if self.now is not None else time.time())
        cache.set_dra_objects(self.dra)
        for pc in self.priority_classes:
            cache.add_priority_class(pc)
        for queue in self.queues:
            cache.add_queue(queue.clone())
        for node in self.nodes:
            cache.add_node(node.clone())
        for job in self.jobs:
            twin = job.clone()
            twin.tasks.clear()
            twin.task_status_index.clear()
            twin.allocated = Resource()
            twin.total_request = Resource()
            cache.add_job(twin)
        for task in self.tasks:
            if task.job in cache.jobs:
                cache.add_task(task.clone())
            elif not task.job:
                cache.add_foreign_pod(task.clone())
        cache.pdbs = [attrs.evolve(p) for p in self.pdbs]
        cache.resource_quotas = [attrs.evolve(q, used=q.used.clone())
                                 for q in self.resource_quotas]
        for key, data in self.config_maps.items():
            namespace, _, name = key.partition("/")
            cache.set_config_map(namespace, name, dict(data))
        for hyper_node in self.hyper_nodes:
            cache.set_hyper_node(hyper_node)
        for shard in self.node_shards:
            cache.set_node_shard(shard)
        return cache

    def with_configuration(self, configuration: SchedulerConfiguration) -> Scenario:
        return attrs.evolve(self, configuration=configuration)


def load_scenario(path: str | Path, *, config_required: bool = True) -> Scenario:
    """Read and parse a YAML or JSON scenario file. Without ``config_required`` a file
    without ``config`` has the default configuration (and ``configuration_given``
    false): a workload or a cluster for ``batchsched simulate``."""
    source = str(path)
    try:
        # A byte-order mark is not part of the document (JSON parsers refuse it).
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror}", source=source) from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"cannot read: not UTF-8 text (byte {exc.start})",
                            source=source) from exc
    try:
        document = json.loads(text) if source.endswith(".json") else \
            yaml.load(text, Loader=_ScenarioYamlLoader)
        del text  # a large file's text need not outlive its parse
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        if isinstance(exc, json.JSONDecodeError):
            where = f" at line {exc.lineno}"
        raise ScenarioError(f"malformed document{where}: {getattr(exc, 'problem', exc)}",
                            source=source) from exc
    except ValueError as exc:  # an integer of thousands of digits
        problem = ("a number of more than 4300 digits" if "digits" in str(exc)
                   else str(exc))
        raise ScenarioError(f"malformed document: {problem}", source=source) from exc
    except RecursionError:
        raise ScenarioError("malformed document: nested too deeply", source=source) from None
    # The document is ours: its entries are dropped as they become objects, so that
    # the document and the objects it becomes are not both held whole at the peak.
    try:
        return _Parser(source, consume=True, config_required=config_required).parse(document)
    except RecursionError:
        raise ScenarioError("malformed document: nested too deeply", source=source) from None


class _ScenarioYamlLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep
    the last silently: a typo must never be ignored). The ``config`` block is read as
    Volcano reads its configuration file (yaml.v2's scalars: ``1.5e0`` is a number,
    ``n`` is false in an enable flag, a name stays text), so that a configuration
    pasted into a scenario means what it means to Volcano."""

    def get_single_node(self) -> yaml.Node | None:
        """PyYAML's, refusing an alias bomb as yaml.v2 does (the ``config`` block is
        read as Go reads it, which expands aliases)."""
        node: yaml.Node | None = super().get_single_node()
        check_aliasing(node)
        return node

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        """PyYAML's, remembering whether the tag was resolved (none written), which the
        ``config`` block's reading needs."""
        tag = self.peek_event().tag  # type: ignore[no-untyped-call]
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)
        node.implicit_tag = tag is None or tag == "!"  # type: ignore[attr-defined]
        return node

    def construct_document(self, node: yaml.Node) -> Any:
        # The config block is read first, by yaml.v2's rules alone (its merge keys and
        # tagged scalars too): PyYAML's reading of the rest never sees it. A key given
        # twice in it is refused, as anywhere in the file.
        config = _config_node(node) if isinstance(node, yaml.MappingNode) else None
        read: Any = None
        if config is not None:
            _refuse_repeated_keys(config)
            read = _as_volcano_reads_it(config)
            self._config_id = id(config)
        document = super().construct_document(node)
        if config is not None and isinstance(document, dict) and "config" in document:
            document["config"] = read
        return document

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if id(node) == getattr(self, "_config_id", None):
            return None  # read by construct_document, by yaml.v2's rules
        return super().construct_object(node, deep=deep)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[type, Any]] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # merged keys may be overridden on purpose
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float)):
                continue  # an unhashable key is refused by the constructor itself
            if (type(key), key) in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark)
            seen.add((type(key), key))
        return super().construct_mapping(node, deep=deep)


def _config_node(root: yaml.MappingNode) -> yaml.Node | None:
    """The value node of the document's ``config`` key as PyYAML reads the document:
    the last one given, else one a merge key brings (the later merge winning, and of a
    merged sequence the earlier mapping)."""
    explicit: list[yaml.Node] = [value for key, value in root.value
                                 if isinstance(key, yaml.ScalarNode) and key.value == "config"
                                 and key.tag != "tag:yaml.org,2002:merge"]
    if explicit:
        return explicit[-1]
    found: yaml.Node | None = None
    for key, value in root.value:
        if key.tag != "tag:yaml.org,2002:merge":
            continue
        merged = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for part in reversed(merged):
            if isinstance(part, yaml.MappingNode):
                found = _config_node(part) or found
    return found


def _refuse_repeated_keys(root: yaml.Node) -> None:
    """Refuse a key given twice in a mapping of ``root`` (merge keys aside): keys
    compared as yaml.v2 resolves them (``1`` and ``01`` are one key)."""
    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        if not isinstance(node, yaml.MappingNode):
            continue
        seen: set[tuple[type, Any]] = set()
        for key_node, value_node in node.value:
            stack.append(value_node)
            if not isinstance(key_node, yaml.ScalarNode) or \
                    key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key: Any = key_node.value
            if getattr(key_node, "implicit_tag", False) and key_node.style is None:
                key = go_resolve(key_node.value)[1]
            if (type(key), key) in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark)
            seen.add((type(key), key))


def _as_volcano_reads_it(node: yaml.Node) -> Any:
    """A scenario's ``config`` block as Volcano reads a configuration file: yaml.v2's
    scalars (:mod:`batchsched.kube.go_yaml`), each value as Volcano's types take it."""
    loader = GoYamlLoader("")
    try:
        return as_volcano_reads(loader.construct_document(node))
    finally:
        loader.dispose()


def parse_scenario(document: Any, *, source: str = "<scenario>") -> Scenario:
    """Build a :class:`Scenario` from an already-parsed document (left unchanged)."""
    return _Parser(source).parse(document)


class _Parser:
    def __init__(self, source: str, *, consume: bool = False,
                 config_required: bool = True) -> None:
        self.source = source
        self.consume = consume
        self.config_required = config_required
        self.warnings: list[str] = []
        self.now = 0.0
        self.shared_quantities: dict[tuple[Any, ...], Resource] = {}
        #: One string object per distinct namespace, queue or class name of the plain
        #: entries (100,000 tasks name a handful), instead of one per entry.
        self.shared_texts: dict[str, str] = {}
        #: A plain task's request vector (its containers' requests and the implicit
        #: pod) per distinct request shape: requests are read-only once a task is
        #: built, so the tasks of one shape hold one vector.
        self.shared_task_requests: dict[int, Resource] = {}
        #: Whether the document gives ``now`` (else relative times read the wall clock).
        self.now_given = False
        self.wall_clock_times: list[str] = []

    def fail(self, path: str, message: str) -> ScenarioError:
        return ScenarioError(message, source=self.source, path=path)

    # -- generic field readers -------------------------------------------------------

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping, not {_kind(value)}")
        return value

    def items(self, value: Any, path: str) -> Iterator[tuple[int, Any]]:
        """The entries of a list with their positions; when the parser consumes its
        document, each entry is dropped from the list once the next is asked for."""
        entries = self.seq(value, path)
        for i, item in enumerate(entries):
            yield i, item
            if self.consume:
                entries[i] = None

    def seq(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list, not {_kind(value)}")
        return value

    def keys(self, obj: Mapping[str, Any], allowed: set[str] | frozenset[str], path: str,
             *, extensions: bool = False) -> None:
        """Every key of ``obj`` is known; with ``extensions`` (the top level and
        ``expect``, where the shared conformance tooling writes its own) keys starting
        with ``x-`` pass too."""
        if obj.keys() <= allowed:
            return
        for key in obj:
            if extensions and isinstance(key, str) and key.startswith("x-"):
                continue
            if key not in allowed:
                raise self.fail(f"{path}.{key}",
                                f"unknown key (known: {', '.join(sorted(allowed))})")

    def typed(self, obj: Mapping[str, Any], key: str, kind: type[T] | tuple[type, ...],
              default: T, path: str) -> T:
        if key not in obj or obj[key] is None:
            return default
        value = obj[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(f"{path}.{key}", f"must be {_names(kinds)}, not {value!r}")
        if not isinstance(value, kinds):
            raise self.fail(f"{path}.{key}", f"must be {_names(kinds)}, not {value!r}")
        return value  # type: ignore[return-value]

    def text(self, obj: Mapping[str, Any], key: str, path: str) -> str:
        """A string field that YAML may have read as a scalar of another type (a
        boolean as Go writes it, a number as written); absent or null is empty."""
        value = obj.get(key)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (str, int, float)):
            return str(value)
        raise self.fail(f"{path}.{key}" if path else key,
                        f"must be a string, not {_kind(value)}")

    def name(self, obj: Mapping[str, Any], path: str) -> str:
        value = obj.get("name")
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{path}.name", f"must be a string, not {_kind(value)}")
        if not value:
            raise self.fail(f"{path}.name", "a non-empty name is required")
        return value

    def namespaced(self, item: Any, path: str) -> tuple[Mapping[str, Any], str, str, str]:
        """An entry with a ``name`` and a ``namespace`` (default ``default``): the
        mapping, its name and namespace, and the path naming it (``path (ns/name)``)."""
        obj = self.mapping(item, path)
        name = self.name(obj, path)
        namespace = self.typed(obj, "namespace", str, "default", path)
        return obj, name, namespace, f"{path} ({namespace}/{name})"

    def resources(self, value: Any, path: str) -> Resource:
        quantities = self.mapping(value, path)
        for name in quantities:
            if not isinstance(name, str):
                raise self.fail(f"{path}.{name}",
                                f"a resource name is a string, not {_kind(name)}")
        try:
            return Resource.from_mapping(quantities)
        except QuantityError:
            pass  # find the offending entry to name it
        for name, raw in quantities.items():
            try:
                Resource.from_mapping({name: raw})
            except QuantityError as exc:
                reason = ("is negative" if exc.reason.endswith("negative")
                          else "is out of range" if exc.reason.endswith("out of range")
                          else "is not a quantity")
                text = f'"{raw}"' if isinstance(raw, str) else repr(raw)
                raise self.fail(f"{path}.{name}", f"{text} {reason}") from exc
        raise AssertionError("unreachable: some quantity failed above")

    def host_ports(self, entries: Sequence[Any], path: str) -> list[int | HostPort]:
        """A task's host ports: a port number (TCP on every address) or
        ``{port, protocol, hostIP}``, each (port, protocol, address) once, as the API
        server's validation has them."""
        ports: list[int | HostPort] = []
        seen: set[tuple[str, str, int]] = set()
        for p, entry in enumerate(entries):
            where = f"{path}[{p}]"
            if isinstance(entry, Mapping):
                unknown = sorted(set(entry) - {"port", "protocol", "hostIP"})
                if unknown:
                    raise self.fail(f"{where}.{unknown[0]}",
                                    "unknown key (known: hostIP, port, protocol)")
                port = entry.get("port")
                protocol = entry.get("protocol", "TCP")
                host_ip = entry.get("hostIP", "")
                if protocol not in PROTOCOLS:
                    raise self.fail(f"{where}.protocol", f"{protocol!r} is not one of "
                                    f"{', '.join(PROTOCOLS)}")
                if not isinstance(host_ip, str) or (host_ip and not _is_ip(host_ip)):
                    raise self.fail(f"{where}.hostIP", f"{host_ip!r} is not an IP address")
                where = f"{where}.port"
            else:
                port, protocol, host_ip = entry, "TCP", ""
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise self.fail(where, f"{port!r} is not a port")
            key = (protocol, host_ip, port)
            if key in seen:
                raise self.fail(where, f"port {port}/{protocol}"
                                + (f" on {host_ip}" if host_ip else "") + " is given twice")
            seen.add(key)
            ports.append(port if (protocol, host_ip) == ("TCP", "")
                         else HostPort(host_ip, protocol, port))
        return ports

    def counted(self, resources: Resource, path: str, holder: str) -> Resource:
        """``resources`` less the names Volcano's ``NewResource`` does not count (a bare
        ``gpu``, ``requests.cpu``), each reported: Kubernetes refuses them in a pod's
        requests or a node's allocatable, and Volcano would not see them."""
        dropped = [name for name in resources.scalars if not counted_by_volcano(name)]
        if not dropped:
            return resources
        for name in dropped:
            self.warnings.append(
                f"{self.source}: {path}.{name}: not a resource name Volcano counts "
                f"(Kubernetes refuses it in a {holder}; an extended resource is qualified, "
                "such as example.com/gpu); left out")
        return resources.without(frozenset(dropped))

    def shared_resources(self, value: Any, *, counted_only: bool = False) -> Resource | None:
        """What :meth:`resources` gives for ``value``, parsed once per distinct mapping
        (large scenarios repeat a few request shapes), or None when ``value`` is not a
        dict of valid quantities (nor, with ``counted_only``, when it names a resource
        Volcano does not count). The result is shared: whoever may change it must copy
        it (a pod group keeps it as is: its minResources is read-only).
        """
        if value is None:
            value = {}
        elif type(value) is not dict:
            return None
        # The types keep apart mappings that are equal but parse differently:
        # {"cpu": 1} holds a quantity, {"cpu": True} does not.
        key = (*value.items(), *map(type, value), *map(type, value.values()))
        try:
            shared = self.shared_quantities.get(key)
        except TypeError:  # an unhashable quantity, not a valid one
            return None
        if shared is None:
            if not all(isinstance(name, str) for name in value):
                return None  # :meth:`resources` names it
            try:
                shared = self.shared_quantities[key] = Resource.from_mapping(value)
            except QuantityError:
                return None
        if counted_only and shared.scalars and not all(map(counted_by_volcano, shared.scalars)):
            return None
        return shared

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        out: dict[str, str] = {}
        if value is None:
            return out
        entries = self.mapping(value, path)
        for key in entries:
            out[str(key)] = self.text(entries, key, path)
        return out

    def time_value(self, value: Any, path: str, *, relative: bool = True) -> float:
        """A time: RFC 3339, seconds since the epoch (a number, or text YAML leaves
        unread such as ``1.7e9``), or, when ``relative``, a signed duration from
        ``now``. Always a finite instant."""
        if isinstance(value, bool):
            raise self.fail(path, f"{value!r} is not a time")
        if isinstance(value, (int, float)):
            return self.finite_time(value, path)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.timezone.utc)
            return float(value.timestamp())
        if isinstance(value, dt.date):
            # An unquoted YAML date: its midnight in UTC, as the same date quoted.
            return float(dt.datetime(value.year, value.month, value.day,
                                     tzinfo=dt.timezone.utc).timestamp())
        if isinstance(value, str):
            text = value.strip()
            if _NUMBER.fullmatch(text):
                return self.finite_time(float(text), path)
            if text.startswith(("+", "-")) and not _looks_like_date(text):
                try:
                    offset = parse_duration(text)
                except ValueError:
                    pass
                else:
                    if not relative:
                        raise self.fail(path, f"{value!r}: the session clock cannot be "
                                              "relative to itself (RFC 3339 or seconds since "
                                              "the epoch)")
                    if not self.now_given:
                        self.wall_clock_times.append(path)
                    return self.finite_time(self.now + offset, path)
            try:
                parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                forms = ("RFC 3339, seconds since the epoch, or a signed duration like "
                         "\"-90s\"" if relative else "RFC 3339 or seconds since the epoch")
                raise self.fail(path, f"{value!r} is not a time ({forms})") from None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.timezone.utc)
            return parsed.timestamp()
        raise self.fail(path, f"{value!r} is not a time")

    def finite_time(self, value: float, path: str) -> float:
        try:
            seconds = float(value)
        except OverflowError:
            raise self.fail(path, "is too large to be a time") from None
        if not math.isfinite(seconds):
            raise self.fail(path, f"{value!r} is not a time")
        if not _FIRST_SECOND <= seconds <= _LAST_SECOND:
            # Kubernetes' times are years 1 to 9999 (RFC 3339); a time in milliseconds
            # lands far past them.
            raise self.fail(path, f"{value!r} is no time of the years 1 to 9999 in seconds "
                                  "since the epoch (milliseconds?)")
        return seconds

    def enum(self, obj: Mapping[str, Any], key: str, choices: Mapping[str, T], default: T,
             path: str) -> T:
        if key not in obj or obj[key] is None:
            return default
        value = obj[key]
        # Only strings name a choice (a list or mapping is not even hashable).
        if not isinstance(value, str) or value not in choices:
            named = [choice for choice in choices if choice]
            empty = " (or empty)" if "" in choices else ""
            raise self.fail(f"{path}.{key}",
                            f"{value!r} is not one of {', '.join(named)}{empty}")
        return choices[value]

    # -- the document ----------------------------------------------------------------

    def parse(self, doc: Any) -> Scenario:
        doc = self.mapping(doc, "(document)") if doc is not None else None
        if not doc:
            raise self.fail("", "the document is empty")
        self.keys(doc, _TOP_KEYS, "(top level)", extensions=True)
        version = doc.get("version")
        if type(version) is not int or version != 1:
            raise self.fail("version", f"must be 1, not {version!r}")
        configuration_given = "config" in doc
        if not configuration_given and self.config_required:
            raise self.fail("config", "is required")
        try:
            configuration = attrs.evolve(
                parse_configuration(self.mapping(doc["config"], "config"), source=self.source),
                location="config") if configuration_given else default_configuration()
        except ConfigError as exc:
            key = f"config.{exc.key}" if exc.key else "config"
            message = str(exc).split(": ", 2)[-1]
            raise self.fail(key, message) from exc
        self.now_given = doc.get("now") is not None
        self.now = self.time_value(doc["now"], "now", relative=False) \
            if self.now_given else time.time()
        now = self.now if doc.get("now") is not None else None

        classes = self.priority_classes(doc.get("priorityClasses"))
        queues = self.queues(doc.get("queues"))
        declared = {item.get("name") for item in doc.get("queues") or ()
                    if isinstance(item, Mapping)}
        nodes = self.nodes(doc.get("nodes"))
        jobs = self.jobs(doc.get("jobs"), classes, queues)
        tasks = self.tasks(doc.get("tasks"), classes, jobs, nodes)
        pdbs = self.pdbs(doc.get("pdbs"), tasks)
        quotas = self.quotas(doc.get("resourceQuotas"))
        config_maps = self.config_maps(doc.get("configMaps"))
        hyper_nodes = self.hyper_nodes(doc.get("hyperNodes"))
        node_shards = self.node_shards(doc.get("nodeShards"))
        dra = self.dra_objects(doc)
        self.warn_missing_templates(tasks, dra)
        expect = self.expect(doc.get("expect"), jobs)
        bind_failures = self.faults(doc.get("faults"), tasks)
        kept_jobs = {uid: job for uid, job in jobs.items() if job.queue in queues}
        for uid, job in jobs.items():
            if uid not in kept_jobs:
                self.warnings.append(missing_queue_warning(self.source, uid, job.queue))
        return Scenario(
            name=self.text(doc, "name", "") or Path(self.source).stem,
            description=self.text(doc, "description", ""),
            source=self.source,
            configuration=configuration,
            priority_classes=tuple(classes.values()),
            queues=tuple(queues.values()),
            nodes=tuple(nodes.values()),
            jobs=tuple(jobs.values()),
            # A left-out job's pods still hold their nodes (Volcano's cache counts them).
            tasks=tuple(tasks),
            pdbs=tuple(pdbs),
            resource_quotas=tuple(quotas),
            now=now,
            expect=expect,
            warnings=tuple(self.warnings),
            bind_failures=bind_failures,
            config_maps=config_maps,
            hyper_nodes=hyper_nodes,
            node_shards=node_shards,
            dra=dra,
            wall_clock_times=tuple(self.wall_clock_times),
            configuration_given=configuration_given,
            implicit_queues=frozenset(queues) - declared,
        )

    def dra_objects(self, doc: Mapping[str, Any]) -> DraObjects:
        """The Dynamic Resource Allocation lists."""
        try:
            classes, slices, claims, templates = parse_dra_documents(
                device_classes=doc.get("deviceClasses"),
                resource_slices=doc.get("resourceSlices"),
                resource_claims=doc.get("resourceClaims"),
                claim_templates=doc.get("resourceClaimTemplates"))
        except DraObjectError as exc:
            raise self.fail(exc.path, exc.problem) from None
        return DraObjects(classes, slices, claims, templates)

    def warn_missing_templates(self, tasks: Sequence[TaskInfo], dra: DraObjects) -> None:
        """A task naming a claim template the scenario does not have gets no claim (its
        pod waits with "ResourceClaim not created yet"): say so now."""
        for task in tasks:
            for entry in task.resource_claims:
                if (entry.template_name and entry.generated is None
                        and f"{task.namespace}/{entry.template_name}" not in dra.claim_templates):
                    self.warnings.append(
                        f"{self.source}: task {task.uid}: resourceClaims {entry.name!r}: no "
                        f"claim template {entry.template_name!r} in namespace "
                        f"{task.namespace!r}; the pod waits for its claim")

    def network_topology(self, raw: Any, path: str) -> NetworkTopology | None:
        """A pod group's ``networkTopology: {mode, highestTierAllowed, highestTierName}``."""
        if raw is None:
            return None
        obj = self.mapping(raw, path)
        self.keys(obj, {"mode", "highestTierAllowed", "highestTierName"}, path)
        mode = self.typed(obj, "mode", str, HARD, path)
        if mode not in (HARD, SOFT):
            raise self.fail(f"{path}.mode", f"must be hard or soft, not {mode!r}")
        tier = obj.get("highestTierAllowed")
        if tier is not None and (not isinstance(tier, int) or isinstance(tier, bool)
                                 or tier < 0):
            raise self.fail(f"{path}.highestTierAllowed",
                            f"must be a non-negative integer, not {tier!r}")
        name = self.typed(obj, "highestTierName", str, "", path)
        if tier is not None and name:
            raise self.fail(path, "highestTierAllowed and highestTierName cannot both be set")
        return NetworkTopology(mode, tier, name)

    def sub_group_policies(self, raw: Any, path: str) -> tuple[SubGroupPolicy, ...]:
        """A pod group's ``subGroupPolicy``: ``[{name, subGroupSize, minSubGroups,
        labelSelector, matchLabelKeys, networkTopology}]``."""
        out = []
        for i, item in self.items(raw, path):
            where = f"{path}[{i}]"
            obj = self.mapping(item, where)
            self.keys(obj, {"name", "subGroupSize", "minSubGroups", "labelSelector",
                            "matchLabelKeys", "networkTopology"}, where)
            size = obj.get("subGroupSize", 1)
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise self.fail(f"{where}.subGroupSize", f"must be an integer >= 1, not {size!r}")
            minimum = obj.get("minSubGroups", 0)
            if not isinstance(minimum, int) or isinstance(minimum, bool) or minimum < 0:
                raise self.fail(f"{where}.minSubGroups",
                                f"must be a non-negative integer, not {minimum!r}")
            selector = None
            selector_error = ""
            if obj.get("labelSelector") is not None:
                try:
                    selector = parse_label_selector(obj["labelSelector"], f"{where}.labelSelector",
                                                    unvalidated=True)
                except UnparsableSelectorError as exc:
                    # The API server stores it; Volcano logs that it cannot read it, and
                    # the policy takes no task.
                    selector_error = f"{exc.path}: {exc.problem}"
                    self.warnings.append(f"{self.source}: {selector_error}; Volcano cannot "
                                         "read this selector: the policy takes no task")
                except AffinityError as exc:
                    raise self.fail(exc.path, exc.problem) from None
            keys = self.seq(obj.get("matchLabelKeys"), f"{where}.matchLabelKeys")
            for j, key in enumerate(keys):
                if not isinstance(key, str):
                    raise self.fail(f"{where}.matchLabelKeys[{j}]", "must be a string")
                if not key:
                    # The API server stores it; no pod has a label "", so the policy
                    # takes no task (Volcano's getSubJobMatchValues).
                    self.warnings.append(f"{self.source}: {where}.matchLabelKeys[{j}]: an "
                                         "empty key no pod label has: the policy takes no "
                                         "task")
            out.append(SubGroupPolicy(
                name=self.typed(obj, "name", str, "", where),
                network_topology=self.network_topology(obj.get("networkTopology"),
                                                       f"{where}.networkTopology"),
                sub_group_size=size, min_sub_groups=minimum, label_selector=selector,
                match_label_keys=tuple(keys), selector_error=selector_error))
        return tuple(out)

    def hyper_nodes(self, raw: Any) -> tuple[HyperNode, ...]:
        """``hyperNodes: [{name, tier, tierName, members: [{type, selector}]}]``."""
        out: dict[str, HyperNode] = {}
        for i, item in self.items(raw, "hyperNodes"):
            path = f"hyperNodes[{i}]"
            obj = self.mapping(item, path)
            name = self.name(obj, path)
            self.keys(obj, {"name", "tier", "tierName", "members"}, path)
            if name == CLUSTER_TOP:
                raise self.fail(f"{path}.name", f"{name!r} is the name of Volcano's virtual "
                                "root of the hypernode tree (and no Kubernetes object name)")
            self.unique(out, name, path, "hypernode")
            tier = obj.get("tier")
            if not isinstance(tier, int) or isinstance(tier, bool) or tier < 0:
                raise self.fail(f"{path}.tier", f"must be a non-negative integer, not {tier!r}")
            members = [self.hyper_node_member(member, f"{path}.members[{j}]")
                       for j, member in self.items(obj.get("members"), f"{path}.members")]
            for j, member in enumerate(members):
                if member.exact == CLUSTER_TOP:
                    raise self.fail(f"{path}.members[{j}].selector.exactMatch.name",
                                    f"{CLUSTER_TOP!r} is the name of Volcano's virtual root "
                                    "of the hypernode tree (and no Kubernetes object name)")
            if not members:
                raise self.fail(f"{path}.members", "must have at least one member")
            out[name] = HyperNode(name, tier, tuple(members),
                                  self.typed(obj, "tierName", str, "", path))
        hyper_nodes = tuple(out.values())
        try:
            build_topology(hyper_nodes, ())
        except TopologyError as exc:
            raise self.fail("hyperNodes", str(exc)) from None
        return hyper_nodes

    def node_shards(self, raw: Any) -> tuple[NodeShard, ...]:
        """``nodeShards: [{name, nodesDesired: [...], nodesInUse: [...]}]`` (a NodeShard's
        ``spec.nodesDesired`` and ``status.nodesInUse``)."""
        out: dict[str, NodeShard] = {}
        for i, item in self.items(raw, "nodeShards"):
            path = f"nodeShards[{i}]"
            obj = self.mapping(item, path)
            name = self.name(obj, path)
            self.keys(obj, {"name", "nodesDesired", "nodesInUse"}, path)
            self.unique(out, name, path, "node shard")
            lists: list[tuple[str, ...]] = []
            for key in ("nodesDesired", "nodesInUse"):
                names: list[str] = []
                for j, value in self.items(obj.get(key), f"{path}.{key}"):
                    if not isinstance(value, str) or not value:
                        raise self.fail(f"{path}.{key}[{j}]",
                                        f"must be a node's name, not {value!r}")
                    names.append(value)
                lists.append(tuple(names))
            out[name] = NodeShard(name, lists[0], lists[1])
        return tuple(out.values())

    def hyper_node_member(self, raw: Any, path: str) -> HyperNodeMember:
        obj = self.mapping(raw, path)
        self.keys(obj, {"type", "selector"}, path)
        kind = obj.get("type")
        if kind not in ("Node", "HyperNode"):
            raise self.fail(f"{path}.type", f"must be Node or HyperNode, not {kind!r}")
        selector = self.mapping(obj.get("selector"), f"{path}.selector")
        self.keys(selector, {"exactMatch", "regexMatch", "labelMatch"}, f"{path}.selector")
        if len(selector) != 1:
            raise self.fail(f"{path}.selector",
                            "exactly one of exactMatch, regexMatch or labelMatch is needed")
        (field, value), = selector.items()
        where = f"{path}.selector.{field}"
        if field == "labelMatch":
            try:
                labels = parse_label_selector(value, where, unvalidated=True)
            except UnparsableSelectorError as exc:
                # The API server stores it; Volcano logs that it cannot read it, and the
                # member selects no node (GetMembers).
                self.warnings.append(f"{self.source}: {exc.path}: {exc.problem}; Volcano "
                                     "cannot read this selector: the member selects no node")
                return HyperNodeMember(kind, unreadable=f"{exc.path}: {exc.problem}")
            except AffinityError as exc:
                raise self.fail(exc.path, exc.problem) from None
            return HyperNodeMember(kind, labels=labels)
        spec = self.mapping(value, where)
        key = "name" if field == "exactMatch" else "pattern"
        self.keys(spec, {key}, where)
        text = spec.get(key)
        if not isinstance(text, str) or not text:
            raise self.fail(f"{where}.{key}", "must be a non-empty string")
        if field == "exactMatch":
            return HyperNodeMember(kind, exact=text)
        unmatched = unmatched_brackets(text)
        if unmatched:
            # Volcano's admission policy refuses it: the API server never stores it.
            raise self.fail(f"{where}.{key}", f"{text!r}: invalid: unmatched {unmatched}")
        try:
            Re2Search(text)
        except Re2Error as exc:
            if not exc.supported:
                raise self.fail(f"{where}.{key}", f"{text!r}: {exc}") from None
            # The API server stores it; Volcano logs that Go's regexp refuses it, and
            # the member selects no node (GetMembers).
            problem = f"{text!r} is not a regular expression Go's regexp accepts: {exc}"
            self.warnings.append(f"{self.source}: {where}.{key}: {problem}; the member "
                                 "selects no node")
            return HyperNodeMember(kind, regex=text, unreadable=f"{where}.{key}: {problem}")
        return HyperNodeMember(kind, regex=text)

    def config_maps(self, raw: Any) -> dict[str, dict[str, str]]:
        """``configMaps: [{name, namespace, data: {key: text}}]``."""
        out: dict[str, dict[str, str]] = {}
        for i, item in self.items(raw, "configMaps"):
            obj, name, namespace, path = self.namespaced(item, f"configMaps[{i}]")
            key = f"{namespace}/{name}"
            self.keys(obj, {"name", "namespace", "data"}, path)
            self.unique(out, key, path, "config map")
            out[key] = self.string_map(obj.get("data"), f"{path}.data")
        return out

    def unique(self, seen: Mapping[str, Any], key: str, path: str, what: str) -> None:
        if key in seen:
            raise self.fail(path, f"duplicate {what} {key!r}")

    def priority_classes(self, raw: Any) -> dict[str, PriorityClass]:
        out: dict[str, PriorityClass] = {}
        for i, item in enumerate(self.seq(raw, "priorityClasses")):
            path = f"priorityClasses[{i}]"
            obj = self.mapping(item, path)
            name = self.name(obj, path)
            path = f"{path} ({name})"
            self.keys(obj, {"name", "value", "preemptionPolicy", "globalDefault"}, path)
            self.unique(out, name, path, "priority class")
            if "value" not in obj:
                raise self.fail(f"{path}.value", "is required")
            value = self.typed(obj, "value", int, 0, path)
            policy = self.enum(obj, "preemptionPolicy",
                               {"PreemptLowerPriority": "PreemptLowerPriority", "Never": "Never"},
                               "PreemptLowerPriority", path)
            global_default = self.typed(obj, "globalDefault", bool, False, path)
            if global_default:
                first = next((c.name for c in out.values() if c.global_default), None)
                if first is not None:
                    raise self.fail(f"{path}.globalDefault", f"{first!r} is the global default "
                                    "already (Kubernetes admits one)")
            out[name] = PriorityClass(name, value, policy, global_default)
        for system in SYSTEM_PRIORITY_CLASSES:
            out.setdefault(system.name, system)  # every cluster has them
        return out

    def queues(self, raw: Any) -> dict[str, QueueInfo]:
        out: dict[str, QueueInfo] = {}
        states = {s.value: s for s in QueueState}
        for i, item in enumerate(self.seq(raw, "queues")):
            path = f"queues[{i}]"
            obj = self.mapping(item, path)
            name = self.name(obj, path)
            path = f"{path} ({name})"
            self.keys(obj, {"name", "weight", "capability", "deserved", "guarantee",
                            "reclaimable", "parent", "priority", "state", "annotations",
                            "affinity", "createdAt"}, path)
            self.unique(out, name, path, "queue")
            defined = {}
            resources: dict[str, Resource | None] = {}
            for field in ("capability", "deserved", "guarantee"):
                if obj.get(field) is None:
                    resources[field] = None
                    continue
                quota = resources[field] = self.resources(obj[field], f"{path}.{field}")
                defined[field] = frozenset(self.mapping(obj[field], f"{path}.{field}"))
                self.warnings.extend(
                    f"{self.source}: {path}.{field}.{name}: not a resource name Volcano "
                    "counts (no pod can ask for it; an extended resource is qualified, "
                    "such as example.com/gpu): it bounds nothing"
                    for name in quota.scalars if not counted_by_volcano(name))
            weight = self.typed(obj, "weight", int, 1, path)
            if not 0 <= weight <= 65535:
                # The API server takes 1 to 65535; 0 stays readable, as Volcano's own
                # unit tests build queues of weight 0.
                raise self.fail(f"{path}.weight", f"must be between 1 and 65535 (0 is read "
                                                  f"too), not {weight}")
            out[name] = QueueInfo(
                name=name,
                weight=weight,
                capability=resources["capability"],
                deserved=resources["deserved"],
                guarantee=resources["guarantee"],
                reclaimable=self.typed(obj, "reclaimable", bool, True, path),
                parent=self.typed(obj, "parent", str, "", path),
                priority=self.typed(obj, "priority", int, 0, path),
                state=self.enum(obj, "state", states, QueueState.OPEN, path),
                annotations=self.string_map(obj.get("annotations"), f"{path}.annotations"),
                affinity=self.queue_affinity(obj.get("affinity"), f"{path}.affinity"),
                creation_time=self.time_value(obj["createdAt"], f"{path}.createdAt")
                if obj.get("createdAt") is not None else GO_ZERO_TIME,
                defined=defined,
            )
        if "default" not in out:
            out["default"] = QueueInfo("default", creation_time=GO_ZERO_TIME)
        if ROOT_QUEUE not in out:
            out[ROOT_QUEUE] = QueueInfo(ROOT_QUEUE, reclaimable=False, creation_time=GO_ZERO_TIME)
        return out

    def queue_affinity(self, raw: Any, path: str) -> NodeGroupAffinity | None:
        if raw is None:
            return None
        obj = self.mapping(raw, path)
        self.keys(obj, {"nodeGroupAffinity", "nodeGroupAntiAffinity"}, path)
        lists: dict[str, tuple[str, ...]] = {}
        for key, prefix in (("nodeGroupAffinity", ""), ("nodeGroupAntiAffinity", "anti_")):
            sub = self.mapping(obj.get(key), f"{path}.{key}")
            req = "requiredDuringSchedulingIgnoredDuringExecution"
            pref = "preferredDuringSchedulingIgnoredDuringExecution"
            self.keys(sub, {req, pref}, f"{path}.{key}")
            for field, name in ((req, "required"), (pref, "preferred")):
                where = f"{path}.{key}.{field}"
                groups = self.seq(sub.get(field), where)
                for g, group in enumerate(groups):
                    # A number reads as the group's name (YAML reads "1" as 1); a list
                    # or nothing is no group.
                    if isinstance(group, (list, dict)) or group is None \
                            or isinstance(group, bool):
                        raise self.fail(f"{where}[{g}]",
                                        f"must be a node group name, not {_kind(group)}")
                lists[f"{prefix}{name}"] = tuple(str(g) for g in groups)
        return NodeGroupAffinity(**lists)

    def nodes(self, raw: Any) -> dict[str, NodeInfo]:
        out: dict[str, NodeInfo] = {}
        for i, item in self.items(raw, "nodes"):
            node = self.plain_node(item)
            if node is None or node.name in out:
                node = self.node(i, item, out)
            out[node.name] = node
        return out

    def plain_node(self, obj: Any) -> NodeInfo | None:
        """The node a plain entry describes, built as :meth:`node` builds it but without
        its bookkeeping; None when the entry is anything but plain, for :meth:`node`.

        Plain: only the keys of ``_PLAIN_NODE_KEYS``, each of its exact type and valid.
        Nothing here raises.
        """
        if type(obj) is not dict or not obj.keys() <= _PLAIN_NODE_KEYS:
            return None
        name = obj.get("name")
        if type(name) is not str or not name:
            return None
        allocatable = self.shared_resources(obj.get("allocatable"), counted_only=True)
        labels = _plain_strings(obj.get("labels"))
        if allocatable is None or labels is None:
            return None
        capacity = None
        if obj.get("capacity") is not None:
            capacity = self.shared_resources(obj["capacity"], counted_only=True)
            if capacity is None:
                return None
        # NodeInfo.create copies the (shared) resources and the labels.
        return NodeInfo.create(name, allocatable, capacity=capacity, labels=labels)

    def node(self, i: int, item: Any, seen: Mapping[str, NodeInfo]) -> NodeInfo:
        """Entry ``i`` of ``nodes``, every field checked."""
        path = f"nodes[{i}]"
        obj = self.mapping(item, path)
        name = self.name(obj, path)
        path = f"{path} ({name})"
        self.keys(obj, {"name", "allocatable", "capacity", "labels", "annotations", "taints",
                        "unschedulable", "ready", "images", "usage", "numaTopology"}, path)
        self.unique(seen, name, path, "node")
        allocatable = self.counted(
            self.resources(obj.get("allocatable"), f"{path}.allocatable"),
            f"{path}.allocatable", "node")
        capacity = (self.counted(self.resources(obj["capacity"], f"{path}.capacity"),
                                 f"{path}.capacity", "node")
                    if obj.get("capacity") is not None else None)
        taints = []
        for t, raw_taint in enumerate(self.seq(obj.get("taints"), f"{path}.taints")):
            tpath = f"{path}.taints[{t}]"
            taint = self.mapping(raw_taint, tpath)
            self.keys(taint, {"key", "value", "effect"}, tpath)
            if not isinstance(taint.get("key"), str):
                raise self.fail(f"{tpath}.key", "is required")
            effect = self.enum(taint, "effect", {e: e for e in _EFFECTS}, "NoSchedule", tpath)
            taints.append(Taint(taint["key"], self.text(taint, "value", tpath), effect))
        images = {}
        for img, size in self.mapping(obj.get("images"), f"{path}.images").items():
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise self.fail(f"{path}.images.{img}",
                                f"must be a size in bytes (a whole number >= 0), not {size!r}")
            images[str(img)] = size
        annotations = self.string_map(obj.get("annotations"), f"{path}.annotations")
        extra = self.oversubscription(annotations, f"{path}.annotations")
        if extra is not None:
            capacity = (capacity or allocatable).clone().add(extra)
            allocatable = allocatable.clone().add(extra)
            for field, figures in (("allocatable", allocatable), ("capacity", capacity)):
                below = figures.unmeasurable()
                if below is not None:
                    # Volcano would schedule on a negative node (nothing fits); a node
                    # of the cache is never below 0: the annotation is the mistake.
                    key = (OVERSUBSCRIPTION_CPU if below[0] == CPU
                           else OVERSUBSCRIPTION_MEMORY)
                    amount = (f"{below[1]:g}m" if below[0] == CPU
                              else f"{below[1]:g} bytes")
                    raise self.fail(f"{path}.annotations.{key}",
                                    f"takes away more than the node's {field} "
                                    f"({below[0]} would be {amount})")
        problem = why_no_vgpus(annotations, allocatable)
        if problem is not None:
            self.warnings.append(
                f"{self.source}: {path}.annotations.{NODE_REGISTER_ANNOTATION}: {problem}; "
                "the node has no vGPUs (as in Volcano)")
        self.warn_node_devices(annotations, path)
        return NodeInfo.create(
            name, allocatable, capacity=capacity,
            labels=self.string_map(obj.get("labels"), f"{path}.labels"),
            annotations=annotations,
            taints=tuple(taints),
            unschedulable=self.typed(obj, "unschedulable", bool, False, path),
            ready=self.typed(obj, "ready", bool, True, path),
            images=images,
            usage=self.node_usage(obj.get("usage"), f"{path}.usage"),
            numa_topology=self.node_numa_topology(obj.get("numaTopology"),
                                                  f"{path}.numaTopology"),
        )

    def oversubscription(self, annotations: Mapping[str, str], path: str) -> Resource | None:
        """What a node's ``volcano.sh/oversubscription-cpu`` (milli-cpu) and
        ``-memory`` (bytes) annotations add to its allocatable, capacity and idle, as
        Volcano's ``NewNodeInfo`` adds them (Go's ``ParseFloat``: a value that is no
        number adds 0, a negative one takes away); an infinite or NaN one is ignored,
        with a warning."""
        extra, ignored = node_oversubscription(annotations)
        for key, text in ignored:
            self.warnings.append(f"{self.source}: {path}.{key}: {text!r} is not an amount "
                                 "the node can add; ignored")
        return extra

    def node_usage(self, raw: Any, path: str) -> NodeUsage | None:
        """``usage: {cpuAvg: {PERIOD: PERCENT}, memoryAvg: {...}, metricsTime: TIME}``."""
        if raw is None:
            return None
        obj = self.mapping(raw, path)
        self.keys(obj, {"cpuAvg", "memoryAvg", "metricsTime"}, path)
        averages: list[dict[str, float]] = []
        for key in ("cpuAvg", "memoryAvg"):
            out: dict[str, float] = {}
            for period, value in self.mapping(obj.get(key), f"{path}.{key}").items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) \
                        or not 0 <= value <= 100:
                    raise self.fail(f"{path}.{key}.{period}", "must be a percentage (0 to 100)")
                out[str(period)] = float(value)
            averages.append(out)
        metrics_time = (self.time_value(obj["metricsTime"], f"{path}.metricsTime")
                        if obj.get("metricsTime") is not None else None)
        return NodeUsage(averages[0], averages[1], metrics_time)

    def node_numa_topology(self, raw: Any, path: str) -> NumaTopology | None:
        """``numaTopology: {policies, resReserved, numares, cpuDetail}``: the spec of
        Volcano's ``Numatopology`` resource for the node."""
        if raw is None:
            return None
        obj = self.mapping(raw, path)
        self.keys(obj, set(NUMA_TOPOLOGY_KEYS), path)
        policies = self.mapping(obj.get("policies"), f"{path}.policies")
        self.keys(policies, set(_NUMA_POLICIES), f"{path}.policies")
        chosen = {name: self.enum(policies, name, {c: c for c in choices}, "",
                                  f"{path}.policies")
                  for name, choices in _NUMA_POLICIES.items()}
        raw_reserved = self.mapping(obj.get("resReserved"), f"{path}.resReserved")
        reserved = self.resources(raw_reserved, f"{path}.resReserved").to_dict()
        others = sorted(str(name) for name in raw_reserved if name not in _RESERVABLE)
        if others:
            # Volcano's ParseResourceList refuses the whole list for one other name,
            # and its cache then keeps no reservation at all.
            self.warnings.append(
                f"{self.source}: {path}.resReserved: cannot reserve {quote(others[0])} "
                "resource (only cpu, memory and ephemeral-storage); no reservation is read, "
                "as in Volcano")
            reserved = {}
        cpus = self.numa_cpus(obj.get("cpuDetail"), f"{path}.cpuDetail")
        resources = self.numa_resources(obj.get("numares"), f"{path}.numares", cpus)
        uids, names = self.numa_pod_allocations(obj.get("podAllocations"),
                                                f"{path}.podAllocations")
        return NumaTopology(cpus, resources, chosen[CPU_MANAGER_POLICY],
                            chosen[TOPOLOGY_MANAGER_POLICY], reserved,
                            assigned_pod_uids=uids, assigned_pod_names=names)

    def numa_pod_allocations(self, raw: Any, path: str
                             ) -> tuple[frozenset[str], frozenset[str]]:
        """``podAllocations: [{uid, name, namespace, containerAllocations}]``: the pods
        the exporter reports (their uids, and their ``namespace/name``; what each
        container holds is not read)."""
        uids: set[str] = set()
        names: set[str] = set()
        for i, item in self.items(raw, path):
            entry_path = f"{path}[{i}]"
            entry = self.mapping(item, entry_path)
            self.keys(entry, {"uid", "name", "namespace", "containerAllocations"}, entry_path)
            uid = self.typed(entry, "uid", str, "", entry_path)
            name = self.typed(entry, "name", str, "", entry_path)
            namespace = self.typed(entry, "namespace", str, "", entry_path)
            if uid:
                uids.add(uid)
            if name:
                names.add(f"{namespace}/{name}")
        return frozenset(uids), frozenset(names)

    def numa_cpus(self, raw: Any, path: str) -> CpuDetails:
        """``cpuDetail: {CPU ID: {numa: N, socket: S, core: C}}`` (an id left out is 0)."""
        cpus: dict[int, CPUInfo] = {}
        for key, raw_cpu in self.mapping(raw, path).items():
            cpath = f"{path}.{key}"
            cpu_id = _cpu_id(key)
            if cpu_id is None:
                raise self.fail(cpath, "a CPU id must be a non-negative integer")
            cpu = self.mapping(raw_cpu, cpath)
            self.keys(cpu, {"numa", "socket", "core"}, cpath)
            ids = {field: self.typed(cpu, field, int, 0, cpath)
                   for field in ("numa", "socket", "core")}
            for field, value in ids.items():
                if value < 0:
                    raise self.fail(f"{cpath}.{field}", "must not be negative")
            if ids["numa"] >= MAX_NUMA_NODES:
                raise self.fail(f"{cpath}.numa", f"must be below {MAX_NUMA_NODES}")
            cpus[cpu_id] = CPUInfo(**ids)
        return CpuDetails(cpus)

    def numa_resources(self, raw: Any, path: str,
                       cpus: CpuDetails) -> dict[str, NumaResource]:
        """``numares: {RESOURCE: {allocatable: CPUSET, capacity: N}}``; the free CPUs
        must be described in ``cpuDetail``."""
        resources: dict[str, NumaResource] = {}
        for name, raw_res in self.mapping(raw, path).items():
            rpath = f"{path}.{name}"
            res = self.mapping(raw_res, rpath)
            self.keys(res, {"allocatable", "capacity"}, rpath)
            text = self.typed(res, "allocatable", (str, int), "", rpath)
            try:
                allocatable = parse_cpuset(str(text))
            except ValueError as exc:
                raise self.fail(f"{rpath}.allocatable", str(exc)) from None
            capacity = self.typed(res, "capacity", int, 0, rpath)
            if capacity < 0:
                raise self.fail(f"{rpath}.capacity", "must not be negative")
            unknown = allocatable - cpus.cpus() if name == "cpu" else frozenset()
            if unknown:
                raise self.fail(f"{rpath}.allocatable", f"CPU(s) {format_cpuset(unknown)} "
                                "not described in cpuDetail")
            resources[str(name)] = NumaResource(allocatable, capacity)
        return resources

    def jobs(self, raw: Any, classes: Mapping[str, PriorityClass],
             queues: Mapping[str, QueueInfo]) -> dict[str, JobInfo]:
        out: dict[str, JobInfo] = {}
        default_priority = next((c.value for c in classes.values() if c.global_default), 0)
        for i, item in self.items(raw, "jobs"):
            job = self.plain_job(item, classes, default_priority)
            if job is None or job.uid in out:
                job = self.job(i, item, classes, default_priority, out)
            out[job.uid] = job
        return out

    def plain_job(self, obj: Any, classes: Mapping[str, PriorityClass],
                  default_priority: int) -> JobInfo | None:
        """The job a plain entry describes, built as :meth:`job` builds it but without
        its bookkeeping; None when the entry is anything but plain, for :meth:`job`.

        Plain: only the keys of ``_PLAIN_JOB_KEYS``, each of its exact type and valid,
        the priority class (if any) known. Nothing here raises or warns.
        """
        if type(obj) is not dict or not obj.keys() <= _PLAIN_JOB_KEYS:
            return None
        name = obj.get("name")
        namespace = obj.get("namespace", "default")
        queue = obj.get("queue", "default")
        min_member = obj.get("minMember", 0)
        raw_phase = obj.get("phase", PodGroupPhase.PENDING.value)
        phase = _POD_GROUP_PHASES.get(raw_phase) if type(raw_phase) is str else None
        class_name = obj.get("priorityClassName", "")
        if not (type(name) is str and name and type(namespace) is str and type(queue) is str
                and type(min_member) is int and min_member >= 0 and phase is not None
                and type(class_name) is str):
            return None
        priority = default_priority
        if class_name:
            if class_name not in classes:
                return None
            priority = classes[class_name].value
        texts = self.shared_texts
        namespace = texts.setdefault(namespace, namespace)
        queue = texts.setdefault(queue, queue)
        class_name = texts.setdefault(class_name, class_name)
        min_resources = None
        raw_minimum = obj.get("minResources")
        if raw_minimum is not None:
            shared = self.shared_resources(raw_minimum)
            if shared is None:
                return None
            min_resources = shared  # read-only once built, as every pod group's
        podgroup = PodGroup(name=name, namespace=namespace, queue=queue,
                            min_member=min_member, min_resources=min_resources, phase=phase,
                            priority_class_name=class_name, creation_time=GO_ZERO_TIME)
        return JobInfo.from_podgroup(podgroup, priority=priority)

    def job(self, i: int, item: Any, classes: Mapping[str, PriorityClass],
            default_priority: int, seen: Mapping[str, JobInfo]) -> JobInfo:
        """Entry ``i`` of ``jobs``, every field checked."""
        obj, name, namespace, path = self.namespaced(item, f"jobs[{i}]")
        uid = f"{namespace}/{name}"
        self.keys(obj, {"name", "namespace", "queue", "minMember", "minTaskMember",
                        "minResources", "phase", "priorityClassName", "annotations",
                        "labels", "createdAt", "networkTopology", "subGroupPolicy",
                        "running", "succeeded", "failed", "conditions"}, path)
        self.unique(seen, uid, path, "job")
        min_task = {}
        for role, count in self.mapping(obj.get("minTaskMember"),
                                        f"{path}.minTaskMember").items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise self.fail(f"{path}.minTaskMember.{role}",
                                f"must be a non-negative integer, not {count!r}")
            min_task[str(role)] = count
        min_member = self.typed(obj, "minMember", int, 0, path)
        if min_member < 0:
            raise self.fail(f"{path}.minMember", f"must not be negative, not {min_member}")
        class_name = self.typed(obj, "priorityClassName", str, "", path)
        priority = default_priority
        if class_name:
            if class_name in classes:
                priority = classes[class_name].value
            else:
                self.warnings.append(
                    f"{self.source}: {path}.priorityClassName: no priority class "
                    f"{class_name!r}; the job's priority is {priority} (the global default, "
                    "else 0)")
        podgroup = PodGroup(
            name=name, namespace=namespace,
            queue=self.typed(obj, "queue", str, "default", path),
            min_member=min_member, min_task_member=min_task or NO_COUNTS,
            min_resources=(self.resources(obj["minResources"], f"{path}.minResources")
                           if obj.get("minResources") is not None else None),
            phase=self.enum(obj, "phase", _POD_GROUP_PHASES, PodGroupPhase.PENDING, path),
            priority_class_name=class_name,
            annotations=self.string_map(obj.get("annotations"),
                                        f"{path}.annotations") or NO_LABELS,
            labels=self.string_map(obj.get("labels"), f"{path}.labels") or NO_LABELS,
            creation_time=self.time_value(obj["createdAt"], f"{path}.createdAt")
            if obj.get("createdAt") is not None else GO_ZERO_TIME,
            network_topology=self.network_topology(obj.get("networkTopology"),
                                                   f"{path}.networkTopology"),
            sub_group_policies=self.sub_group_policies(obj.get("subGroupPolicy"),
                                                       f"{path}.subGroupPolicy"),
        )
        # The status a previous session (Volcano's job updater) wrote: what this one's
        # close compares with before it records a Scheduled event.
        for field in ("running", "succeeded", "failed"):
            count = self.typed(obj, field, int, 0, path)
            if count < 0:
                raise self.fail(f"{path}.{field}", f"must not be negative, not {count}")
            setattr(podgroup, field, count)
        podgroup.conditions = self.pod_group_conditions(obj.get("conditions"),
                                                        f"{path}.conditions")
        job = JobInfo.from_podgroup(podgroup, priority=priority)
        for key in SLA_WAITING_TIME_ANNOTATIONS:
            text = podgroup.annotations.get(key)
            if text is not None and waiting_time_from(text) is None:
                self.warnings.append(f"{self.source}: {path}.annotations.{key}: "
                                     f"{text!r} is not a positive Go duration; ignored")
        text = podgroup.annotations.get(REQUESTED_RUNTIME_ANNOTATION)
        if text is not None and job.requested_runtime is None:
            self.warnings.append(f"{self.source}: {path}.annotations."
                                 f"{REQUESTED_RUNTIME_ANNOTATION}: {text!r} is neither seconds "
                                 "nor a Go duration; the job states no requested run time")
        return job

    def pod_group_conditions(self, raw: Any, path: str) -> list[PodGroupCondition]:
        """A pod group's ``conditions`` as its status holds them: ``{type, status,
        reason, message}`` (type Unschedulable or Scheduled)."""
        out: list[PodGroupCondition] = []
        for i, item in enumerate(self.seq(raw, path)):
            where = f"{path}[{i}]"
            obj = self.mapping(item, where)
            self.keys(obj, {"type", "status", "reason", "message"}, where)
            if obj.get("type") is None:
                raise self.fail(f"{where}.type", "is required")
            kind = self.enum(obj, "type", _CONDITION_TYPES, PodGroupConditionType.SCHEDULED,
                             where)
            out.append(PodGroupCondition(
                kind, self.typed(obj, "status", str, "True", where),
                self.typed(obj, "reason", str, "", where),
                self.typed(obj, "message", str, "", where)))
        return out

    def tasks(self, raw: Any, classes: Mapping[str, PriorityClass],
              jobs: Mapping[str, JobInfo], nodes: Mapping[str, NodeInfo]) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        seen: dict[str, None] = {}
        default_class = next((c for c in classes.values() if c.global_default), None)
        for i, item in self.items(raw, "tasks"):
            task = self.plain_task(item, classes, default_class, jobs)
            if task is None or task.uid in seen:
                task = self.task(i, item, classes=classes, default_class=default_class,
                                 jobs=jobs, nodes=nodes, seen=seen)
            seen[task.uid] = None
            out.append(task)
        return out

    def plain_task(self, obj: Any, classes: Mapping[str, PriorityClass],
                   default_class: PriorityClass | None,
                   jobs: Mapping[str, JobInfo]) -> TaskInfo | None:
        """The task a plain entry describes, built as :meth:`task` builds it but without
        its bookkeeping; None when the entry is anything but plain, for :meth:`task`.

        Plain: a pending task with only the keys of ``_PLAIN_TASK_KEYS``, each of its
        exact type, whose job and priority class exist and whose requests parse (the
        bulk of a large scenario). Nothing here raises or warns.
        """
        if type(obj) is not dict or not obj.keys() <= _PLAIN_TASK_KEYS:
            return None
        name = obj.get("name")
        namespace = obj.get("namespace", "default")
        job_name = obj.get("job")
        role = obj.get("role", "")
        class_name = obj.get("priorityClassName", "")
        if not (type(name) is str and name and type(namespace) is str
                and type(job_name) is str and job_name
                and type(role) is str and type(class_name) is str):
            return None
        job = jobs.get(f"{namespace}/{job_name}")
        if job is None:
            return None
        job_uid = job.uid
        pclass = default_class
        if class_name:
            pclass = classes.get(class_name)
            if pclass is None:
                return None
        requests = self.shared_resources(obj.get("requests"), counted_only=True)
        if requests is None or _asks_none_explicitly(obj.get("requests"), requests):
            return None  # no request shape, or kube-scheduler's non-zero figures differ
        texts = self.shared_texts
        namespace = texts.setdefault(namespace, namespace)
        class_name = texts.setdefault(class_name, class_name)
        # Every field keeps its default but the creation time (Volcano's zero time, as
        # without createdAt).
        task = TaskInfo.create(
            namespace, name, job_uid, requests, role=role,
            priority=pclass.value if pclass is not None else 1,
            priority_class_name=class_name,
            preemption_policy=pclass.preemption_policy if pclass else "PreemptLowerPriority",
            creation_time=GO_ZERO_TIME,
        )
        # TaskInfo.create made the task a vector of its own (the shared requests plus
        # the pod); the first task of each shape lends its vector to the others.
        # ``requests`` lives as long as the parser (in shared_quantities): its id is
        # a stable key.
        vector = self.shared_task_requests.setdefault(id(requests), task.resreq)
        task.resreq = task.init_resreq = vector
        return task

    def task(self, i: int, item: Any, *, classes: Mapping[str, PriorityClass],
             default_class: PriorityClass | None, jobs: Mapping[str, JobInfo],
             nodes: Mapping[str, NodeInfo], seen: Mapping[str, None]) -> TaskInfo:
        """Entry ``i`` of ``tasks``, every field checked."""
        obj, name, namespace, path = self.namespaced(item, f"tasks[{i}]")
        uid = f"{namespace}/{name}"
        self.keys(obj, _TASK_KEYS, path)
        self.unique(seen, uid, path, "task")
        job_name = obj.get("job")
        node = self.typed(obj, "node", str, "", path)
        if node and node not in nodes:
            raise self.fail(f"{path}.node", f"no node {node!r}")
        phase = self.typed(obj, "phase", str, "Pending", path)
        if phase not in _PHASES:
            raise self.fail(f"{path}.phase",
                            f"{phase!r} is not one of {', '.join(sorted(_PHASES))}")
        deleting = self.typed(obj, "deleting", bool, False, path)
        status = _task_status(phase, deleting, node)
        if job_name is None and node and status != TaskStatus.PENDING:
            # A pod no pod group holds (another scheduler's): its node's, nobody's job.
            job_uid = ""
        elif not isinstance(job_name, str) or not job_name:
            raise self.fail(f"{path}.job", "a task needs its job (pod group name), unless "
                            "it is a pod on a node that no pod group holds")
        else:
            job_uid = f"{namespace}/{job_name}"
            if job_uid not in jobs:
                raise self.fail(f"{path}.job",
                                f"no job {job_name!r} in namespace {namespace!r}")
        class_name = self.typed(obj, "priorityClassName", str, "", path)
        pclass = classes.get(class_name) if class_name else default_class
        if class_name and class_name not in classes:
            self.warnings.append(f"{self.source}: {path}.priorityClassName: no priority "
                                 f"class {class_name!r}")
            pclass = default_class
        if "priority" in obj and obj["priority"] is not None:
            priority = self.typed(obj, "priority", int, 1, path)
        else:
            priority = pclass.value if pclass is not None else 1
        policy = self.enum(obj, "preemptionPolicy", _POLICIES,
                           pclass.preemption_policy if pclass else "PreemptLowerPriority",
                           path)
        tolerations = []
        raw_tolerations = obj.get("tolerations")
        for t, raw_tol in enumerate(self.seq(raw_tolerations, f"{path}.tolerations")
                                    if raw_tolerations is not None else ()):
            tpath = f"{path}.tolerations[{t}]"
            tol = self.mapping(raw_tol, tpath)
            self.keys(tol, {"key", "operator", "value", "effect", "tolerationSeconds"}, tpath)
            # An empty operator is Equal, as Kubernetes reads it.
            operator = self.enum(tol, "operator",
                                 {"Equal": "Equal", "Exists": "Exists", "": "Equal"},
                                 "Equal", tpath)
            effect = self.enum(tol, "effect", {"": "", **{e: e for e in _EFFECTS}}, "", tpath)
            key, value = self.text(tol, "key", tpath), self.text(tol, "value", tpath)
            # What the API server refuses in a toleration.
            if operator == "Exists" and value:
                raise self.fail(f"{tpath}.value", "must be empty when the operator is Exists")
            if not key and operator != "Exists":
                raise self.fail(f"{tpath}.operator", "must be Exists when the key is empty")
            tolerations.append(Toleration(key, operator, value, effect))
        labels = self.string_map(obj.get("labels"), f"{path}.labels")
        affinity = obj.get("affinity")
        parsed_affinity = None
        if affinity is not None:
            affinity = self.mapping(affinity, f"{path}.affinity")
            self.keys(affinity, {"nodeAffinity", "podAffinity", "podAntiAffinity"},
                      f"{path}.affinity")
            try:
                parsed_affinity = parse_affinity(affinity, labels)
            except AffinityError as exc:
                raise self.fail(f"{path}.affinity.{exc.path}", exc.problem) from exc
        spread: tuple[SpreadConstraint, ...] = ()
        if obj.get("topologySpreadConstraints") is not None:
            spread_path = f"{path}.topologySpreadConstraints"
            try:
                spread = parse_topology_spread(
                    self.seq(obj["topologySpreadConstraints"], spread_path), labels)
            except TopologySpreadError as exc:
                raise self.fail(f"{spread_path}{exc.path}", exc.problem) from exc
        raw_ports = obj.get("hostPorts")
        ports = self.host_ports(self.seq(raw_ports, f"{path}.hostPorts")
                                if raw_ports is not None else (), f"{path}.hostPorts")
        requests = self.counted(self.resources(obj.get("requests"), f"{path}.requests"),
                                f"{path}.requests", "pod")
        init = (self.counted(self.resources(obj["initRequests"], f"{path}.initRequests"),
                             f"{path}.initRequests", "pod")
                if obj.get("initRequests") is not None else None)
        annotations = self.string_map(obj.get("annotations"), f"{path}.annotations")
        unreadable = unreadable_devices(annotations.get(ASSIGNED_IDS_ANNOTATION, ""))
        if unreadable:
            self.warnings.append(
                f"{self.source}: {path}.annotations.{ASSIGNED_IDS_ANNOTATION}: "
                f"{', '.join(map(repr, unreadable))} name no device (UUID,type,memory,cores "
                "with whole numbers); skipped, as Volcano skips them")
        self.warn_task_devices(annotations, path)
        # Volcano reads a pod's task spec from its volcano.sh/task-spec annotation,
        # or label; ``role`` is this format's shorthand for it.
        role = self.typed(obj, "role", str, "", path)
        if role and TASK_SPEC_KEY not in annotations and labels.get(TASK_SPEC_KEY) == role:
            # A given role stands for the annotation Volcano's job controller writes
            # beside the label; with the label alone, some plugins (task-topology)
            # would not see it.
            annotations = {**annotations, TASK_SPEC_KEY: role}
        spec = task_spec_of(annotations, labels)
        if spec:
            if role and role != spec:
                where = "annotation" if annotations.get(TASK_SPEC_KEY) else "label"
                raise self.fail(f"{path}.role", f"{role!r} is not the pod's "
                                f"{TASK_SPEC_KEY} {where} {spec!r}")
            role = spec
        # The pod's uid: the last tie-break of Volcano's task order (CompareTask).
        uid = self.typed(obj, "uid", str, "", path)
        task = TaskInfo.create(
            namespace, name, job_uid, requests, init_requests=init,
            status=status, node_name=node if status != TaskStatus.PENDING else "",
            priority=priority, role=role,
            labels=labels,
            annotations=annotations,
            node_selector=self.string_map(obj.get("nodeSelector"),
                                          f"{path}.nodeSelector") or NO_LABELS,
            affinity=affinity, topology_spread=spread, tolerations=tuple(tolerations),
            host_ports=tuple(ports),
            images=tuple(str(x) for x in self.seq(obj["images"], f"{path}.images"))
            if obj.get("images") is not None else (),
            priority_class_name=class_name, preemption_policy=policy,
            creation_time=self.time_value(obj["createdAt"], f"{path}.createdAt")
            if obj.get("createdAt") is not None else GO_ZERO_TIME,
            scheduler_name=self.typed(obj, "schedulerName", str, "", path),
            nominated_node=self._nominated(obj, path, nodes),
            resource_claims=self._pod_claims(obj, path),
            scheduling_gates=self._scheduling_gates(obj, path, node),
            nonzero_request=self._nonzero_request(obj, path)
            or _derived_nonzero_request(obj.get("requests"), requests,
                                        obj.get("initRequests"), init),
            preempted_by_scheduler=self.typed(obj, "preemptedByScheduler", bool, False, path),
            deleting=deleting,
            **({"order_uid": uid} if uid else {}),
        )
        if parsed_affinity is not None:
            # What sessions read from it (the task's labels are a copy of ``labels``).
            task.affinity_read = (task.affinity, task.labels, parsed_affinity)
        if task.node_name and GPU_INDEX_ANNOTATION in annotations and gpu_ask(
                requests, strict=False) is not None:
            # The GPUs a placed pod holds, where a host writes TaskInfo.gpu_devices.
            task.gpu_devices = tuple(gpu_index(annotations) or ())
        if obj.get("startTime") is not None:
            if not task.node_name:
                raise self.fail(f"{path}.startTime", "only a task on a node has a start time")
            task.start_time = self.time_value(obj["startTime"], f"{path}.startTime")
        if obj.get("scheduledCondition") is not None:
            # The pod's PodScheduled condition (status False) a previous session wrote:
            # the same one again records no FailedScheduling event.
            where = f"{path}.scheduledCondition"
            condition = self.mapping(obj["scheduledCondition"], where)
            self.keys(condition, {"reason", "message"}, where)
            task.scheduling_condition = (self.typed(condition, "reason", str, "", where),
                                         self.typed(condition, "message", str, "", where))
        return task

    def warn_node_devices(self, annotations: Mapping[str, str], path: str) -> None:
        """Say which device annotations of a node Volcano cannot read (it logs them and
        goes on): an Ascend register it cannot decode, an unhealthy GPU id no number."""
        for key, text in annotations.items():
            if key.startswith(REGISTER_PREFIX):
                try:
                    read_register(text)
                except ValueError as exc:
                    self.warnings.append(
                        f"{self.source}: {path}.annotations.{key}: {exc}; the node has no "
                        f"{key[len(REGISTER_PREFIX):]} cards (as in Volcano)")
        unhealthy = annotations.get(UNHEALTHY_ANNOTATION)
        refused = [part for part in (unhealthy.split(",") if unhealthy is not None else ())
                   if not parse_int(part, 64)[1]]
        if refused:
            self.warnings.append(
                f"{self.source}: {path}.annotations.{UNHEALTHY_ANNOTATION}: "
                f"{', '.join(map(repr, refused))} name no card (comma-separated whole "
                "numbers); skipped, as Volcano skips them")

    def warn_task_devices(self, annotations: Mapping[str, str], path: str) -> None:
        """Say which device annotations of a pod Volcano cannot read: the pod is then
        counted on none of the cards they name, which another pod may be given."""
        for key, text in annotations.items():
            if key.startswith("hami.io/") and key.endswith(ALLOCATED_SUFFIX):
                try:
                    decode_devices(text)
                except ValueError as exc:
                    self.warnings.append(
                        f"{self.source}: {path}.annotations.{key}: {exc}; the pod is "
                        "counted on none of its cards (as in Volcano)")
        if GPU_INDEX_ANNOTATION in annotations and gpu_index(annotations) is None:
            self.warnings.append(
                f"{self.source}: {path}.annotations.{GPU_INDEX_ANNOTATION}: "
                f"{annotations[GPU_INDEX_ANNOTATION]!r} is not comma-separated card "
                "numbers; the pod is counted on no card (as in Volcano)")

    def _nonzero_request(self, obj: Mapping[str, Any], path: str) -> tuple[int, int] | None:
        """``nonZeroRequests``: the cpu and memory kube-scheduler's resource scores
        count for the pod, both given (see :attr:`TaskInfo.nonzero_request`)."""
        raw = obj.get("nonZeroRequests")
        if raw is None:
            return None
        where = f"{path}.nonZeroRequests"
        given = self.mapping(raw, where)
        self.keys(given, {"cpu", "memory"}, where)
        for name in ("cpu", "memory"):
            if name not in given:
                raise self.fail(where, f"needs {name} (cpu and memory both)")
        amounts = self.resources(given, where)
        return math.ceil(amounts.milli_cpu), math.ceil(amounts.memory)

    def _scheduling_gates(self, obj: Mapping[str, Any], path: str,
                          node: str) -> tuple[str, ...]:
        """``schedulingGates``: gate names (or ``{name: ...}`` as in a pod), each once,
        on a pod on no node (it may be being deleted), as the API server admits them."""
        raw = obj.get("schedulingGates")
        if raw is None:
            return ()
        where = f"{path}.schedulingGates"
        gates: list[str] = []
        for i, entry in enumerate(self.seq(raw, where)):
            gate = entry
            if isinstance(entry, Mapping):
                self.keys(entry, {"name"}, f"{where}[{i}]")
                gate = entry.get("name")
            if not isinstance(gate, str) or not gate:
                raise self.fail(f"{where}[{i}]", f"{gate!r} is not a gate name")
            if gate in gates:
                raise self.fail(f"{where}[{i}]", f"gate {gate!r} is given twice")
            gates.append(gate)
        if gates and node:
            raise self.fail(where, "only a pod not yet scheduled has scheduling gates")
        return tuple(gates)

    def _pod_claims(self, obj: Mapping[str, Any], path: str) -> tuple[PodClaim, ...]:
        if obj.get("resourceClaims") is None:
            return ()
        try:
            return parse_pod_claims(obj["resourceClaims"], f"{path}.resourceClaims",
                                    obj.get("resourceClaimStatuses"))
        except DraObjectError as exc:
            raise self.fail(exc.path, exc.problem) from None

    def _nominated(self, obj: Mapping[str, Any], path: str, nodes: Mapping[str, NodeInfo]
                   ) -> str:
        name = self.typed(obj, "nominatedNodeName", str, "", path)
        if name and name not in nodes:
            raise self.fail(f"{path}.nominatedNodeName", f"no node {name!r}")
        return name

    def disrupted_pods(self, raw: Any, path: str) -> frozenset[str]:
        """A budget's ``disruptedPods``: pod names, as a list or as Kubernetes' status
        map (pod name to the time of its eviction, read by :meth:`recently_disrupted`)."""
        if raw is None:
            return frozenset()
        names = list(self.mapping(raw, path)) if isinstance(raw, Mapping) else self.seq(raw, path)
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise self.fail(f"{path}[{i}]", f"must be a pod name, not {name!r}")
        return frozenset(names)

    def recently_disrupted(self, raw: Any, path: str) -> frozenset[str]:
        """The pods of ``disruptedPods`` the disruption controller does not count as
        healthy: those disrupted less than ``DeletionTimeout`` (2 minutes) before
        ``now``; every pod of a list, which gives no time."""
        if not isinstance(raw, Mapping):
            return self.disrupted_pods(raw, path)
        return frozenset(
            str(name) for name, when in raw.items()
            if self.time_value(when, f"{path}.{name}")  # "-30s" reads against now
            + PDB_DELETION_TIMEOUT > self.now)

    def pdbs(self, raw: Any, tasks: list[TaskInfo]) -> list[PodDisruptionBudget]:
        out = []
        seen: dict[str, None] = {}
        for i, item in enumerate(self.seq(raw, "pdbs")):
            obj, name, namespace, path = self.namespaced(item, f"pdbs[{i}]")
            self.keys(obj, {"name", "namespace", "selector", "matchExpressions", "minAvailable",
                            "maxUnavailable", "disruptionsAllowed", "disruptedPods"}, path)
            self.unique(seen, f"{namespace}/{name}", path, "pdb")
            seen[f"{namespace}/{name}"] = None
            selector = self.string_map(obj.get("selector"), f"{path}.selector")
            expressions: tuple[Requirement, ...] = ()
            if obj.get("matchExpressions") is not None:
                try:
                    expressions = parse_label_selector(
                        {"matchExpressions": obj["matchExpressions"]}, path).requirements
                except AffinityError as exc:
                    raise self.fail(exc.path, exc.problem) from exc
            budget = PodDisruptionBudget(name, namespace, selector, 0,
                                         match_expressions=expressions,
                                         disrupted_pods=self.disrupted_pods(
                                             obj.get("disruptedPods"),
                                             f"{path}.disruptedPods"))
            given = [k for k in ("minAvailable", "maxUnavailable", "disruptionsAllowed")
                     if obj.get(k) is not None]
            if len(given) != 1:
                raise self.fail(path, "give exactly one of minAvailable, maxUnavailable, "
                                      "disruptionsAllowed")
            matching = [t for t in tasks if budget.matches(t.namespace, t.labels)]
            # Kubernetes' disruption controller does not count a pod it recorded as
            # disrupted less than DeletionTimeout ago (its eviction is on its way).
            leaving = self.recently_disrupted(obj.get("disruptedPods"),
                                              f"{path}.disruptedPods")
            healthy = sum(1 for t in matching
                          if t.status == TaskStatus.RUNNING and t.name not in leaving)
            key = given[0]
            if key == "disruptionsAllowed":
                allowed = self.typed(obj, key, int, 0, path)
                if allowed < 0:
                    raise self.fail(f"{path}.{key}", f"must not be negative, not {allowed}")
                budget.disruptions_allowed = allowed
            else:
                self.count_or_percent(obj[key], len(matching), f"{path}.{key}")
                if key == "minAvailable":
                    budget.min_available = obj[key]
                else:
                    budget.max_unavailable = obj[key]
                budget.disruptions_allowed = budget.allowed_for(len(matching), healthy) or 0
                # The status the controller writes with that count keeps only the recent
                # disruptions of matching pods not being deleted (buildDisruptedPodMap).
                budget.disrupted_pods = frozenset(
                    t.name for t in matching if t.name in leaving and not t.deleting)
            out.append(budget)
        return out

    def count_or_percent(self, value: Any, total: int, path: str) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if isinstance(value, str):
            # As Kubernetes validates a budget: digits and "%", at most 100%.
            match = re.fullmatch(r"([0-9]+)%", value)
            if match and int(match[1]) <= 100:
                return math.ceil(int(match[1]) * total / 100)
        raise self.fail(path, f"{value!r} is not a count or a percentage up to 100%")

    def quotas(self, raw: Any) -> list[ResourceQuota]:
        out = []
        seen: dict[str, None] = {}
        for i, item in enumerate(self.seq(raw, "resourceQuotas")):
            obj, name, namespace, path = self.namespaced(item, f"resourceQuotas[{i}]")
            self.keys(obj, {"name", "namespace", "hard", "used"}, path)
            self.unique(seen, f"{namespace}/{name}", path, "resource quota")
            seen[f"{namespace}/{name}"] = None
            hard = self.resources(obj.get("hard"), f"{path}.hard")
            used = self.resources(obj.get("used"), f"{path}.used")
            raw_hard = self.mapping(obj.get("hard"), f"{path}.hard")
            raw_used = self.mapping(obj.get("used"), f"{path}.used")
            out.append(ResourceQuota(
                name, namespace, hard, used, frozenset(raw_hard), frozenset(raw_used),
                hard_texts={str(k): canonical_text(v) for k, v in raw_hard.items()},
                used_texts={str(k): canonical_text(v) for k, v in raw_used.items()}))
        return out

    def faults(self, raw: Any, tasks: list[TaskInfo]) -> frozenset[str]:
        """``faults: {bindFailures: [NS/NAME, ...]}``: binds the cache will refuse."""
        if raw is None:
            return frozenset()
        obj = self.mapping(raw, "faults")
        self.keys(obj, {"bindFailures"}, "faults")
        known = {task.uid for task in tasks}
        refused: set[str] = set()
        for i, item in enumerate(self.seq(obj.get("bindFailures"), "faults.bindFailures")):
            path = f"faults.bindFailures[{i}]"
            if not isinstance(item, str):
                raise self.fail(path, f"must be a task id (namespace/name), not {_kind(item)}")
            if item not in known:
                hint = "" if "/" in item else " (a task id is namespace/name)"
                raise self.fail(path, f"no task {item!r}{hint}")
            refused.add(item)
        return frozenset(refused)

    def expect(self, raw: Any, jobs: Mapping[str, JobInfo]) -> Mapping[str, Any]:
        obj = self.mapping(raw, "expect")
        self.keys(obj, EXPECT_KEYS, "expect", extensions=True)
        wrong = misshapen_expectation(obj)
        if wrong is not None:
            raise self.fail(f"expect.{wrong}", f"has the wrong shape: {obj[wrong]!r}")
        unknown = unknown_in_expectation(obj, jobs)
        if unknown is not None:
            raise self.fail(f"expect.{unknown[0]}", unknown[1])
        return {key: _whole_counts(value) if key != "scores" else value
                for key, value in obj.items()}


_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: What Volcano's ParseResourceList takes in a Numatopology's resReserved.
_RESERVABLE = frozenset({"cpu", "memory", "ephemeral-storage"})
#: The keys of a node's ``numaTopology``: the parts of a Numatopology's spec read.
NUMA_TOPOLOGY_KEYS = ("policies", "resReserved", "numares", "cpuDetail", "podAllocations")
#: The kubelet's policies a ``numaTopology`` may name, by policy name.
_NUMA_POLICIES = {
    CPU_MANAGER_POLICY: ("none", "static"),
    TOPOLOGY_MANAGER_POLICY: ("none", "best-effort", "restricted", "single-numa-node"),
}
_POLICIES = {"PreemptLowerPriority": "PreemptLowerPriority", "Never": "Never"}
_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed", "Unknown"})
# The keys a task, job or node may have and still take the plain (fast) path.
_PLAIN_TASK_KEYS = frozenset({"name", "namespace", "job", "role", "requests", "priorityClassName"})
_PLAIN_JOB_KEYS = frozenset({"name", "namespace", "queue", "minMember", "phase",
                             "priorityClassName", "minResources"})
_PLAIN_NODE_KEYS = frozenset({"name", "allocatable", "capacity", "labels"})
#: Kubernetes' disruption controller's DeletionTimeout: how long a pod recorded in a
#: budget's disruptedPods is expected to take to go.
PDB_DELETION_TIMEOUT = 120.0
_POD_GROUP_PHASES = {p.value: p for p in PodGroupPhase}
_CONDITION_TYPES = {t.value: t for t in PodGroupConditionType}
#: Task statuses as the decisions name them (``taskStatusCounts``).
_STATUS_NAMES = tuple(str(status) for status in TaskStatus)
_TASK_KEYS = frozenset({
    "name", "namespace", "job", "role", "node", "phase", "deleting", "requests", "initRequests",
    "priority", "priorityClassName", "preemptionPolicy", "labels", "annotations", "nodeSelector",
    "tolerations", "affinity", "hostPorts", "images", "createdAt", "schedulerName",
    "nominatedNodeName", "topologySpreadConstraints", "startTime", "resourceClaims",
    "resourceClaimStatuses", "schedulingGates", "nonZeroRequests", "preemptedByScheduler",
    "uid", "scheduledCondition",
})


def _asks_none_explicitly(raw: Any, requests: Resource) -> bool:
    """Whether the requests name cpu or memory with an amount of 0 (kube-scheduler's
    scores count that 0, where a request left out counts 100m or 200Mi)."""
    return isinstance(raw, Mapping) and (
        ("cpu" in raw and requests.milli_cpu == 0) or ("memory" in raw and requests.memory == 0))


def _derived_nonzero_request(raw: Any, requests: Resource, raw_init: Any,
                             init: Resource | None) -> tuple[int, int] | None:
    """The cpu and memory kube-scheduler's resource scores count for a task whose
    ``requests`` are one container and ``initRequests`` one init container: each
    container's own figure, 100m or 200Mi for one it leaves out (a 0 it names stays
    0), the larger of the two (kube's ``NonMissingContainerRequests``). None when
    that is what :func:`~batchsched.kube.pod_view.nonzero_request` works out anyway."""
    def own(given: Any, amounts: Resource) -> tuple[int, int]:
        names = given if isinstance(given, Mapping) else {}
        return (kube_int(amounts.milli_cpu) if "cpu" in names else DEFAULT_MILLI_CPU_REQUEST,
                kube_int(amounts.memory) if "memory" in names else DEFAULT_MEMORY_REQUEST)

    cpu, memory = own(raw, requests)
    if init is not None:
        init_cpu, init_memory = own(raw_init, init)
        cpu, memory = max(cpu, init_cpu), max(memory, init_memory)
    derived = (cpu, memory)
    fallback = (kube_int(requests.milli_cpu) or DEFAULT_MILLI_CPU_REQUEST,
                kube_int(requests.memory) or DEFAULT_MEMORY_REQUEST)
    return None if derived == fallback else derived


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


#: The first and last whole seconds of RFC 3339 (0001-01-01T00:00:00Z, Go's zero time,
#: and 9999-12-31T23:59:59Z), in seconds since the epoch.
_FIRST_SECOND = -62135596800.0
_LAST_SECOND = 253402300799.0


def _whole_counts(value: Any) -> Any:
    """``value`` with every whole float (a count written ``3.0``, which the shapes take)
    as an int: what ``check`` compares and says is then the count."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_counts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_counts(item) for item in value]
    return value


def _is_count(value: Any) -> bool:
    """A whole number >= 0 (``1.0`` too: YAML and JSON writers may spell one so)."""
    if isinstance(value, float):
        return value.is_integer() and value >= 0
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_score(value: Any) -> bool:
    """A finite number, or a string of one (YAML reads ``1e2`` as a string; the
    comparison reads it with ``float``, as the shared conformance tool does)."""
    if not isinstance(value, str) and not _is_number(value):
        return False
    try:
        return math.isfinite(float(value))
    except (ValueError, OverflowError):
        return False


def _is_mapping(value: Any) -> bool:
    return isinstance(value, Mapping)


def _map_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A mapping of string keys to checked values; at the top of an expectation, nothing
    (an empty expectation) too, which :func:`_top` allows."""
    return lambda value: isinstance(value, Mapping) and all(
        isinstance(key, str) and check(item) for key, item in value.items())


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _is_quantity(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    try:
        parse_quantity(value)
    except QuantityError:
        return False
    return True


def _is_queue_status(value: Any) -> bool:
    """A queue's status as ``--output json`` writes it: ``allocated`` quantities and
    ``podGroups`` counts by phase, either left out."""
    return isinstance(value, Mapping) and set(value) <= {"allocated", "podGroups"} and (
        value.get("allocated") is None or _map_of(_is_quantity)(value["allocated"])) and (
        value.get("podGroups") is None or _map_of(_is_count)(value["podGroups"]))


def _is_event(value: Any) -> bool:
    """An event as ``--output json`` writes it: its object, type, reason and message."""
    return isinstance(value, Mapping) and set(value) == set(EVENT_FIELDS) and all(
        isinstance(value[key], str) for key in EVENT_FIELDS)

_EXPECT_SHAPES: dict[str, Callable[[Any], bool]] = {
    "binds": _map_of(_is_str),
    "bindCount": _is_count,
    "evicted": _list_of(_is_str),
    "evictCount": _is_count,
    # job -> the nodes its pipelined tasks may be on, or (as --output json writes it)
    # job -> task -> node, compared exactly.
    "pipelined": _map_of(lambda v: _list_of(_is_str)(v) or _map_of(_is_str)(v)),
    "podGroupPhases": _map_of(_is_str),
    "taskStatusCounts": _map_of(_map_of(_is_count)),
    "scores": _map_of(_map_of(_is_score)),
    "bindFailures": _list_of(_is_str),
    "nominated": _map_of(_is_str),
    "gpuDevices": _map_of(_list_of(_is_count)),
    "vgpuDevices": _map_of(_list_of(_list_of(_is_mapping))),
    "vnpuDevices": _map_of(_list_of(_is_mapping)),
    "claimAllocations": _map_of(_list_of(_is_mapping)),
    "queueStatus": _map_of(_is_queue_status),
    "events": _list_of(_is_event),
    "x-nodeBindCounts": _map_of(_is_count),
    "x-jobBindCounts": _map_of(lambda v: _is_count(v) or _list_of(_is_count)(v)),
}


def missing_queue_warning(source: str, job: str, queue: str) -> str:
    """What loading says of a job whose queue the scenario does not declare."""
    return (f"{source}: job {job}: queue {queue!r} does not exist; the job is left out of "
            "the session (as Volcano does)")


def unknown_in_expectation(expect: Mapping[str, Any],
                           jobs: Collection[str]) -> tuple[str, str] | None:
    """The first job, task status or pod group phase ``expect`` names that does not
    exist, as (its path under ``expect``, why), or None: a key checked only where
    present would let a typo pass (a job misspelt expecting 0 Pending tasks)."""
    for key in ("podGroupPhases", "taskStatusCounts", "x-jobBindCounts"):
        for uid in expect.get(key) or {}:
            if uid not in jobs:
                hint = "" if "/" in uid else " (a job id is namespace/name)"
                return f"{key}.{uid}", f"no job {uid!r}{hint}"
    for uid, counts in (expect.get("taskStatusCounts") or {}).items():
        for status in counts or {}:
            if status not in _STATUS_NAMES:
                return (f"taskStatusCounts.{uid}.{status}",
                        f"not a task status (known: {', '.join(_STATUS_NAMES)})")
    for uid, phase in (expect.get("podGroupPhases") or {}).items():
        if phase not in _POD_GROUP_PHASES:
            return (f"podGroupPhases.{uid}", f"{phase!r} is not a pod group phase (known: "
                    f"{', '.join(_POD_GROUP_PHASES)})")
    return None


def misshapen_expectation(expect: Mapping[str, Any]) -> str | None:
    """The first key of ``expect`` whose value has not the shape the scenario format
    gives it (a map of job ids to phases, a count...), or None. A key given empty
    (``binds:``) expects nothing there; below it, nothing is no value to compare with,
    and neither is it for a count (``evictCount:``)."""
    for key, check in _EXPECT_SHAPES.items():
        if key in expect and (expect[key] is not None or check is _is_count) \
                and not check(expect[key]):
            return key
    return None


def _task_status(phase: str, deleting: bool, node: str) -> TaskStatus:
    if phase in ("Running", "Pending") and deleting:
        return TaskStatus.RELEASING
    if phase == "Running":
        return TaskStatus.RUNNING
    if phase == "Pending":
        return TaskStatus.BOUND if node else TaskStatus.PENDING
    return TaskStatus.parse(phase)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _plain_strings(value: Any) -> dict[str, str] | None:
    """``value`` itself when :meth:`_Parser.string_map` would return an equal copy of it
    (nothing, or a dict of strings to strings), else None."""
    if value is None:
        return {}
    if type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items()):
        return value
    return None


def _cpu_id(key: Any) -> int | None:
    """A ``cpuDetail`` key as a CPU id (YAML reads ``0:`` as a number, the resource
    writes ``"0"``); None when it is not one."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key if key >= 0 else None
    if isinstance(key, str) and key.isascii() and key.isdigit():
        return int(key)
    return None


#: A number of seconds as text, unsigned (YAML 1.1 leaves ``1.7e9`` unread: it wants
#: a dot and a signed exponent); signed text is a duration from ``now``.
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", re.ASCII)


def _looks_like_date(text: str) -> bool:
    return bool(re.match(r"[+-]?\d{4}-\d{2}-\d{2}", text))


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "a number",
            float: "a number", bool: "a boolean", type(None): "nothing"}.get(
                type(value), type(value).__name__)


def _names(kinds: tuple[type, ...]) -> str:
    words = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)
