"""Helpers for the fast-path agreement tests: test plugins with vectorised variants,
random scenario documents, and running one scenario with a chosen node selector.

The test plugins exercise every part of the vectorised protocol:

* ``vt-predicate``: pod count against the node's ``pods`` (Unschedulable), a task
  label ``avoid`` naming a node ``group`` label it refuses (UnschedulableAndUnresolvable),
  and a harmless FitError (a Success status) on nodes labelled ``harmless: "yes"``;
  tasks labelled ``scalar-only: "yes"`` make the variant decline (VectorFallback);
* ``vt-order``: a float node-order score from used cpu and idle memory; nodes labelled
  ``unscored: "yes"`` raise FitError (left unscored);
* ``vt-batch``: idle memory per task on the node, normalised over the candidates;
* ``vt-best``: a best-node plugin naming the last of several nodes sharing the top score;
* ``vt-scalar-only``: a node-order plugin without a variant (forces the scalar path).
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from batchsched import columnar
from batchsched.actions.allocate import AllocateAction
from batchsched.actions.backfill import BackfillAction
from batchsched.actions.placement import NodeSelector, ScalarNodeSelector
from batchsched.api.fit import FitError, FitStatus
from batchsched.api.node import NodeInfo
from batchsched.api.resource import PODS
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.node_columns import BoolArray, Candidates, FloatArray, NodeColumns
from batchsched.columnar.selector import VectorNodeSelector, fast_path_available
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.scenario import parse_scenario
from batchsched.scenario.runner import Decisions, run_scenario

GIB = 1073741824.0


class _Plugin:
    name = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_close(self, ssn: Session) -> None:
        pass


def _label_mask(columns: NodeColumns, key: str, value: str) -> BoolArray:
    return np.fromiter((node.labels.get(key) == value for node in columns.nodes),
                       dtype=np.bool_, count=len(columns))


class VectorPredicatePlugin(_Plugin):
    name = "vt-predicate"

    def on_session_open(self, ssn: Session) -> None:
        masks: dict[tuple[str, str], BoolArray] = {}

        def label_mask(columns: NodeColumns, key: str, value: str) -> BoolArray:
            mask = masks.get((key, value))
            if mask is None:
                mask = masks[(key, value)] = _label_mask(columns, key, value)
            return mask

        def predicate(task: TaskInfo, node: NodeInfo) -> FitError | None:
            statuses = []
            if len(node.tasks) >= node.max_task_num:
                statuses.append(FitStatus(FitStatusCode.UNSCHEDULABLE,
                                          "node(s) pod number exceeded", self.name))
            avoid = task.labels.get("avoid")
            if avoid and node.labels.get("group") == avoid:
                statuses.append(FitStatus(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                          "node(s) in an avoided group", self.name))
            if not statuses and node.labels.get("harmless") == "yes":
                statuses.append(FitStatus(FitStatusCode.SUCCESS, "just a note", self.name))
            if statuses:
                return FitError(task.namespace, task.name, node.name, statuses)
            return None

        def vector(task: TaskInfo, columns: NodeColumns) -> tuple[BoolArray, BoolArray]:
            if task.labels.get("scalar-only") == "yes":
                raise VectorFallback("this task's rules are scalar only")
            pods = np.floor(columns.allocatable[columns.dimension_index[PODS]])
            passes = columns.task_count < pods
            avoid = task.labels.get("avoid")
            if avoid:
                passes &= ~label_mask(columns, "group", avoid)
            harmless = label_mask(columns, "harmless", "yes")
            return passes & ~harmless, passes & harmless

        def template(task: TaskInfo) -> tuple[object, ...] | None:
            if task.labels.get("scalar-only") == "yes":
                return None
            return (task.labels.get("avoid"),)

        ssn.add_predicate_fn(self.name, predicate)
        columnar.add_predicate_fn(ssn, self.name, vector)
        columnar.add_template_fn(ssn, self.name, template)


class VectorOrderPlugin(_Plugin):
    name = "vt-order"

    def on_session_open(self, ssn: Session) -> None:
        unscored: list[BoolArray] = []

        def score(task: TaskInfo, node: NodeInfo) -> float:
            if node.labels.get("unscored") == "yes":
                raise FitError.of(task.namespace, task.name, node.name, "no score here")
            return ((node.used.milli_cpu + task.resreq.milli_cpu)
                    / (node.allocatable.milli_cpu + 1.0) * 7.3
                    + node.idle.memory / GIB * 0.37)

        def vector(task: TaskInfo, columns: NodeColumns, candidates: Candidates) -> FloatArray:
            if not unscored:
                unscored.append(_label_mask(columns, "unscored", "yes"))
            used, alloc = candidates.pick(columns.used[0]), candidates.pick(columns.allocatable[0])
            idle = candidates.pick(columns.idle[1])
            out: FloatArray = ((used + task.resreq.milli_cpu) / (alloc + 1.0) * 7.3
                               + idle / GIB * 0.37)
            return np.where(candidates.pick(unscored[0]), np.nan, out)

        ssn.add_node_order_fn(self.name, score)
        columnar.add_node_order_fn(ssn, self.name, vector)
        columnar.add_template_fn(ssn, self.name, lambda task: (task.resreq.milli_cpu,))


class VectorBatchPlugin(_Plugin):
    name = "vt-batch"

    def on_session_open(self, ssn: Session) -> None:
        def batch(task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
            raw = [node.idle.memory / (1 + len(node.tasks)) for node in nodes]
            top = max([0.0, *raw])
            return {node.name: (value / top * 10.0 if top > 0 else 0.0)
                    for node, value in zip(nodes, raw, strict=True)}

        def vector(task: TaskInfo, columns: NodeColumns, candidates: Candidates) -> FloatArray:
            raw = candidates.pick(columns.idle[1]) / (1 + candidates.pick(columns.task_count))
            top = max(0.0, float(raw.max()))
            if top > 0:
                return raw / top * 10.0  # type: ignore[no-any-return]
            return np.zeros(len(candidates))

        ssn.add_batch_node_order_fn(self.name, batch)
        columnar.add_batch_node_order_fn(ssn, self.name, vector)
        # Normalised over the candidates: no node's score stands on its own.
        columnar.add_template_fn(ssn, self.name, lambda task: None)


class BestNodePlugin(_Plugin):
    name = "vt-best"

    def on_session_open(self, ssn: Session) -> None:
        def best(task: TaskInfo, scores: dict[float, list[NodeInfo]]) -> NodeInfo | None:
            top = scores[max(scores)]
            return top[-1] if len(top) > 1 else None

        ssn.add_best_node_fn(self.name, best)


class ScalarOnlyPlugin(_Plugin):
    name = "vt-scalar-only"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda task, node: float(len(node.tasks)))


TEST_PLUGINS = (VectorPredicatePlugin, VectorOrderPlugin, VectorBatchPlugin, BestNodePlugin,
                ScalarOnlyPlugin)


class _Hooks:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec(cls.name, cls) for cls in TEST_PLUGINS]


def make_registry() -> Registry:
    registry = Registry(autoload=False)
    registry.register(_Hooks(), name="fast-path-test-plugins")
    return registry


REGISTRY = make_registry()


# -- running one scenario with a chosen selector -------------------------------------------------


SELECTORS: list[VectorNodeSelector] = []


def strict_vector_selector(ssn: Session, error_cache_enabled: bool = True) -> NodeSelector:
    """The vectorised selector, failing the test if the session does not allow it (the
    selectors built are kept in ``SELECTORS`` for inspection)."""
    assert fast_path_available(ssn), "the session's node plugins are not all vectorised"
    chosen = VectorNodeSelector(ssn, error_cache_enabled)
    SELECTORS.append(chosen)
    return chosen


@contextlib.contextmanager
def selector(factory: Callable[[Session, bool], NodeSelector]) -> Iterator[None]:
    """Make allocate and backfill build their node selector with ``factory``."""
    saved = AllocateAction.node_selector_factory, BackfillAction.node_selector_factory
    AllocateAction.node_selector_factory = factory  # type: ignore[assignment]
    BackfillAction.node_selector_factory = factory  # type: ignore[assignment]
    try:
        yield
    finally:
        AllocateAction.node_selector_factory, BackfillAction.node_selector_factory = saved


def decide(document: dict[str, Any], factory: Callable[[Session, bool], NodeSelector],
           registry: Registry = REGISTRY) -> Decisions:
    scenario = parse_scenario(document, source="<fast path test>")
    with selector(factory):
        return run_scenario(scenario, scores=False, registry=registry)


def decide_both(
    document: dict[str, Any], registry: Registry = REGISTRY
) -> tuple[Decisions, Decisions]:
    """(reference decisions, fast-path decisions) for one scenario."""
    return (decide(document, ScalarNodeSelector, registry),
            decide(document, strict_vector_selector, registry))


# -- random scenarios -----------------------------------------------------------------------


def random_document(
    seed: int, *, nodes: int, jobs: int, plugins: list[dict[str, Any]],
    actions: str = "allocate, backfill", error_cache: bool = True,
    extra_node: Callable[[random.Random, dict[str, Any]], None] | None = None,
    extra_task: Callable[[random.Random, dict[str, Any]], None] | None = None,
    running: float = 0.35, deleting: float = 0.4, roles: float = 0.3, job_size: int = 6,
    uniform_jobs: bool = False,
) -> dict[str, Any]:
    """A random cluster and workload; ``plugins`` form the second tier. ``running`` is
    the share of tasks already on a node, ``deleting`` the share of those being
    deleted (Releasing), ``roles`` the share of tasks with a role."""
    rng = random.Random(seed)
    # Some clusters are roomy, most are tight enough for failures and pipelining.
    sizes = rng.choice([[1, 2, "1500m"], [1, 2, 4, "1500m"], [2, 4, 8]])
    node_docs: list[dict[str, Any]] = []
    for i in range(nodes):
        allocatable: dict[str, Any] = {"cpu": rng.choice(sizes),
                                       "memory": f"{rng.choice([1, 2, 4, 8])}Gi",
                                       "pods": rng.choice([0, 1, 2, 3, 5, 110])}
        if rng.random() < 0.2:
            allocatable["nvidia.com/gpu"] = rng.choice([1, 2, 4])
        labels = {"group": rng.choice("abc")}
        if rng.random() < 0.1:
            labels["harmless"] = "yes"
        if rng.random() < 0.1:
            labels["unscored"] = "yes"
        doc: dict[str, Any] = {"name": f"n{i:03d}", "allocatable": allocatable, "labels": labels}
        if extra_node is not None:
            extra_node(rng, doc)
        node_docs.append(doc)
    queues = [{"name": f"q{i}", "weight": rng.randint(1, 3)} for i in range(rng.randint(1, 3))]
    job_docs: list[dict[str, Any]] = []
    task_docs: list[dict[str, Any]] = []
    for j in range(jobs):
        size = rng.randint(1, job_size)
        name = f"pg{j:02d}"
        job_docs.append({"name": name, "namespace": "ns", "queue": rng.choice(queues)["name"],
                         "minMember": rng.randint(0, size),
                         "phase": rng.choice(["Inqueue", "Inqueue", "Pending", "Running"]),
                         "priorityClassName": rng.choice(["low", "high"])})
        template = _random_requests(rng)
        job_labels = {"avoid": rng.choice("abc")} if rng.random() < 0.3 else {}
        for t in range(size):
            requests = template if uniform_jobs or rng.random() < 0.7 else _random_requests(rng)
            task: dict[str, Any] = {"name": f"{name}-t-{t}", "namespace": "ns", "job": name}
            if requests:
                task["requests"] = requests
            if rng.random() < roles:
                task["role"] = rng.choice(["ps", "worker"])
            labels: dict[str, str] = {}
            if uniform_jobs:
                labels = dict(job_labels)
            else:
                if rng.random() < 0.3:
                    labels["avoid"] = rng.choice("abc")
                if rng.random() < 0.05:
                    labels["scalar-only"] = "yes"
            if labels:
                task["labels"] = labels
            if extra_task is not None:
                extra_task(rng, task)
            if node_docs and rng.random() < running:
                task["node"] = rng.choice(node_docs)["name"]
                task["phase"] = "Running"
                task["deleting"] = rng.random() < deleting
            task_docs.append(task)
    config: dict[str, Any] = {
        "actions": actions,
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": plugins}],
    }
    if not error_cache:
        config["configurations"] = [
            {"name": "allocate", "arguments": {"predicateErrorCacheEnable": False}}]
    return {"version": 1, "name": f"random fast path {seed}", "config": config,
            "priorityClasses": [{"name": "low", "value": 10}, {"name": "high", "value": 1000}],
            "queues": queues, "nodes": node_docs, "jobs": job_docs, "tasks": task_docs,
            "now": "2024-01-01T00:00:00Z"}


def _random_requests(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.08:
        return {}
    requests: dict[str, Any] = {"cpu": rng.choice(["100m", "500m", 1, 2, 3, "1500m"]),
                                "memory": f"{rng.choice([128, 512, 1024, 3000])}Mi"}
    if rng.random() < 0.15:
        requests["nvidia.com/gpu"] = rng.choice([1, 2])
    return requests


def assert_same_decisions(reference: Decisions, fast: Decisions) -> None:
    assert fast.binds == reference.binds
    assert list(fast.binds) == list(reference.binds)
    assert fast.pipelined == reference.pipelined
    assert fast.evicted == reference.evicted
    assert fast.task_status_counts == reference.task_status_counts
    assert fast.pod_group_phases == reference.pod_group_phases
    assert fast.events == reference.events


def close(left: float, right: float) -> bool:
    return math.isclose(left, right, rel_tol=0.0, abs_tol=1e-9)


# -- Kubernetes-shaped extras for the built-in node plugins ----------------------------------

_TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "slow", "value": "yes", "effect": "PreferNoSchedule"},
    {"key": "flaky", "effect": "PreferNoSchedule"},
    {"key": "draining", "effect": "NoExecute"},
]
_TOLERATIONS = [
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "slow", "operator": "Exists"},
    {"operator": "Exists", "effect": "PreferNoSchedule"},
    {"key": "draining", "operator": "Exists", "effect": "NoExecute"},
]


def kube_node(rng: random.Random, doc: dict[str, Any]) -> None:
    """Zones, hostnames, taints, cordons, images and measured load on a node."""
    doc["labels"]["kubernetes.io/hostname"] = doc["name"]
    doc["labels"]["zone"] = rng.choice(["z0", "z1", "z2"])
    if rng.random() < 0.2:
        doc["taints"] = rng.sample(_TAINTS, rng.randint(1, 2))
    if rng.random() < 0.05:
        doc["unschedulable"] = True
    if rng.random() < 0.3:
        doc["images"] = {name: rng.choice([50, 300, 900]) * 1048576
                         for name in rng.sample(["nginx", "busybox:1.36", "repo/app:v2"], 2)}
    if rng.random() < 0.5:  # measured load, for the usage plugin
        doc["usage"] = {"cpuAvg": {"10m": rng.choice([10, 50, 79.5, 85])},
                        "memoryAvg": {"10m": rng.choice([20, 60, 81])},
                        "metricsTime": rng.choice(["-1m", "-10m"])}


def _pod_term(rng: random.Random) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": rng.choice(["web", "db"])}},
            "topologyKey": rng.choice(["zone", "kubernetes.io/hostname", "group"])}


def kube_task(rng: random.Random, task: dict[str, Any]) -> None:
    """Selectors, tolerations, node and pod (anti-)affinity, host ports, images."""
    labels = task.setdefault("labels", {})
    labels.pop("avoid", None)
    labels.pop("scalar-only", None)
    if rng.random() < 0.5:
        labels["app"] = rng.choice(["web", "db", "batch"])
    if rng.random() < 0.1:
        task["nodeSelector"] = {"zone": rng.choice(["z0", "z1"])}
    if rng.random() < 0.25:
        task["tolerations"] = rng.sample(_TOLERATIONS, rng.randint(1, 2))
    affinity: dict[str, Any] = {}
    if rng.random() < 0.15:
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "group", "operator": "In", "values": rng.sample("abc", 2)}]}]}}
    if rng.random() < 0.2:
        affinity.setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [rng.choice(["z0", "z1", "z2"])]}]}}]
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.12:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [_pod_term(rng)]}
        if rng.random() < 0.15:
            affinity.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_term(rng)}]
    if affinity:
        task["affinity"] = affinity
    if rng.random() < 0.08:
        task["hostPorts"] = [rng.choice([8080, 9090, {"port": 8080, "protocol": "UDP"}])]
    if rng.random() < 0.2:
        task["images"] = rng.sample(["nginx", "nginx:latest", "busybox:1.36", "repo/app:v2"], 2)
    if rng.random() < 0.3:
        task["annotations"] = {"volcano.sh/template-uid": task["job"]}


def volcano_default_with_binpack(**arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The second tier of Volcano's default configuration, plus binpack."""
    return [{"name": "overcommit"}, {"name": "drf"},
            {"name": "predicates", "arguments": arguments.get("predicates", {})},
            {"name": "proportion"},
            {"name": "nodeorder", "arguments": arguments.get("nodeorder", {})},
            {"name": "binpack", "arguments": arguments.get("binpack", {})}]
