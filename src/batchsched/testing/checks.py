"""Checks a plugin author runs on their own plugin (and we run on every built-in one).

>>> # from batchsched.testing.checks import check_plugin
>>> # check_plugin("my-plugin")        # raises AssertionError listing what failed
>>> # import pytest
>>> # @pytest.mark.parametrize("check", plugin_checks("my-plugin"), ids=str)
>>> # def test_my_plugin(check): check()

Each check opens sessions on small generated clusters (fixed seeds) with a
configuration naming only the plugin, every enable flag at its default, and
verifies properties every plugin must have whatever it decides:

* its job, queue and task orderings are antisymmetric and transitive;
* its enqueue and pipeline votes are -1, 0 or 1;
* its node scores are finite numbers;
* its predicates and scores do not change the session's state;
* it decides the same way twice on the same input (no hidden randomness);
* a second session on the same cluster sees the same answers (nothing leaks
  from one session to the next);
* its column forms (:mod:`batchsched.columnar.forms`), if it registers any, give
  exactly its scalar functions' answers on every node.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from batchsched.actions.node_search import ALLOCATE_FAILING_CODES
from batchsched.api.cluster import ClusterInfo, PriorityClass
from batchsched.api.fit import FitError
from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import PodGroupPhase, TaskStatus
from batchsched.columnar import forms
from batchsched.columnar.forms import VectorFallback
from batchsched.columnar.node_columns import Candidates, NodeColumns
from batchsched.conf import PluginOption, SchedulerConfiguration, Tier
from batchsched.errors import PluginError
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry, default_registry
from batchsched.framework.session import Session
from batchsched.kube.taints import Taint, Toleration

__all__ = ["PluginCheck", "check_plugin", "generated_cluster", "plugin_checks"]

SEEDS = (1, 2, 3)


@attrs.frozen
class PluginCheck:
    """One named check of one plugin; call it to run it."""

    plugin: str
    name: str
    run: Callable[[], None]

    def __call__(self) -> None:
        self.run()

    def __str__(self) -> str:
        return f"{self.plugin}:{self.name}"


def generated_cluster(seed: int) -> ClusterInfo:
    """A small mixed cluster: nodes of two shapes (GPUs on odd nodes, a taint on one),
    queues under a root (one with a capability, one with a guarantee), jobs in several
    phases with pending and running tasks (some with node selectors or tolerations),
    two priority classes."""
    rng = random.Random(seed)
    nodes: dict[str, NodeInfo] = {}
    for i in range(4):
        gpu = {"nvidia.com/gpu": 4} if i % 2 else {}
        alloc = Resource.from_mapping({"cpu": rng.choice([4, 8]), "memory": "16Gi", "pods": 20,
                                       **gpu})
        taints = (Taint("dedicated", "gpu", "NoSchedule"),) if i == 3 else ()
        nodes[f"n{i}"] = NodeInfo.create(f"n{i}", alloc, labels={"zone": f"z{i % 2}"},
                                         taints=taints)
    queues = {
        "root": QueueInfo("root"),
        "default": QueueInfo("default", parent="root"),
        "qa": QueueInfo("qa", weight=2, parent="root",
                        capability=Resource.from_mapping({"cpu": 10, "memory": "40Gi"})),
        "qb": QueueInfo("qb", weight=1, parent="root",
                        guarantee=Resource.from_mapping({"cpu": 1})),
    }
    classes = {"low": PriorityClass("low", 10), "high": PriorityClass("high", 1000)}
    jobs: dict[str, JobInfo] = {}
    node_names = sorted(nodes)
    for j in range(6):
        queue = ("qa", "qb", "default")[j % 3]
        phase = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING)[j % 3]
        pclass = rng.choice(["low", "high"])
        podgroup = PodGroup(f"job{j}", "ns", queue=queue, min_member=rng.randint(1, 3),
                            phase=phase, priority_class_name=pclass,
                            min_resources=Resource.from_mapping({"cpu": 1}) if j % 2 else None,
                            creation_time=float(j))
        job = JobInfo.from_podgroup(podgroup, priority=classes[pclass].value)
        for t in range(rng.randint(1, 4)):
            running = phase == PodGroupPhase.RUNNING and t < 2
            request = Resource.from_mapping({"cpu": rng.choice(["500m", 1, 2]),
                                             "memory": rng.choice(["1Gi", "2Gi"])})
            task = TaskInfo.create(
                "ns", f"job{j}-task-{t}", job.uid, request,
                status=TaskStatus.RUNNING if running else TaskStatus.PENDING,
                node_name=rng.choice(node_names) if running else "",
                priority=rng.choice([1, 10, 100]), labels={"app": f"job{j}"},
                creation_time=float(t),
                node_selector={"zone": "z0"} if rng.random() < 0.3 else {},
                tolerations=(Toleration("dedicated", "Equal", "gpu", "NoSchedule"),)
                if rng.random() < 0.3 else (),
            )
            job.add_task(task)
            if running:
                nodes[task.node_name].add_task(task)
        jobs[job.uid] = job
    return ClusterInfo(nodes=nodes, jobs=jobs, queues=queues, priority_classes=classes,
                       now=1_700_000_000.0)


def _open(plugin: str, arguments: Arguments, registry: Registry, seed: int) -> Session:
    configuration = SchedulerConfiguration(
        actions=(), tiers=(Tier((PluginOption(plugin, arguments=arguments),)),),
        source=f"<checks of {plugin}>",
    )
    return Session.open(generated_cluster(seed), configuration, registry=registry)


def _state(ssn: Session) -> Any:
    """What a session's readers see of its jobs, tasks, nodes and queues, comparable:
    a predicate or a score that changes any of it is no read-only answer."""
    def amounts(resource: Any) -> Any:
        return None if resource is None else sorted(resource.to_dict().items())

    def texts(mapping: Any) -> Any:
        return sorted(dict(mapping).items())

    jobs = sorted(
        (uid, job.queue, job.priority, job.min_available, texts(job.task_min_available),
         str(job.podgroup.phase), amounts(job.allocated),
         sorted((t.uid, str(t.status), t.node_name, t.priority, amounts(t.resreq),
                 texts(t.labels), texts(t.annotations)) for t in job.tasks.values()))
        for uid, job in ssn.jobs.items()
    )
    nodes = sorted(
        (n.name, amounts(n.allocatable), amounts(n.idle), amounts(n.used),
         amounts(n.releasing), amounts(n.pipelined), sorted(n.tasks), texts(n.labels),
         texts(n.annotations), repr(n.taints), n.unschedulable)
        for n in ssn.nodes.values()
    )
    queues = sorted(
        (q.name, q.weight, q.priority, str(q.state), q.reclaimable, amounts(q.capability),
         amounts(q.deserved), amounts(q.guarantee))
        for q in ssn.queues.values()
    )
    return jobs, nodes, queues


def _answers(ssn: Session) -> Any:
    """Everything the plugin answers on this session, in a comparable form."""
    tasks = [t for job in sorted(ssn.jobs.values(), key=lambda j: j.uid)
             for t in sorted(job.tasks.values(), key=lambda t: t.uid)]
    jobs = sorted(ssn.jobs.values(), key=lambda j: j.uid)
    queues = sorted(ssn.queues.values(), key=lambda q: q.name)
    out: dict[str, Any] = {
        "job_order": [ssn.job_order_compare(a, b) for a, b in itertools.product(jobs, jobs)],
        "queue_order": [ssn.queue_order_fn(a, b) for a, b in itertools.product(queues, queues)],
        "task_order": [ssn.task_compare(a, b) for a, b in itertools.product(tasks, tasks)],
        "ready": [ssn.job_ready(j) for j in jobs],
        "valid": [ssn.job_valid(j) for j in jobs],
        "enqueueable": [ssn.job_enqueueable(j) for j in jobs],
        "pipelined": [ssn.job_pipelined(j) for j in jobs],
        "starving": [ssn.job_starving(j) for j in jobs],
        "overused": [ssn.overused(q) for q in queues],
    }
    predicate: list[Any] = []
    scores: list[Any] = []
    for task in tasks:
        for node in ssn.node_list:
            with ssn.for_report():
                err = ssn.predicate(task, node)
            predicate.append(None if err is None else err.reasons)
            try:
                scores.append(ssn.node_order(task, node))
            except FitError:
                scores.append(None)
        scores.append(sorted(ssn.batch_node_order(task, list(ssn.node_list)).items()))
    out["predicate"] = predicate
    out["scores"] = scores
    return out


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)


def _check_orderings(ssn: Session, plugin: str) -> None:
    subjects: dict[str, list[Any]] = {
        "job_order": sorted(ssn.jobs.values(), key=lambda j: j.uid),
        "queue_order": sorted(ssn.queues.values(), key=lambda q: q.name),
        "task_order": [t for j in ssn.jobs.values() for t in j.tasks.values()][:12],
    }
    for point, items in subjects.items():
        fn = ssn.registered(point).get(plugin)
        if fn is None:
            continue
        cmp = {(i, k): _sign(fn(a, b)) for (i, a), (k, b)
               in itertools.product(enumerate(items), repeat=2)}
        for (i, k), value in cmp.items():
            assert value == -cmp[(k, i)], (
                f"{plugin}: {point} is not antisymmetric on {items[i]!r} and {items[k]!r}")
        for i, k, m in itertools.permutations(range(len(items)), 3):
            if cmp[(i, k)] < 0 and cmp[(k, m)] < 0:
                assert cmp[(i, m)] < 0, (
                    f"{plugin}: {point} is not transitive on {items[i]!r}, {items[k]!r}, "
                    f"{items[m]!r}")


def _check_votes_and_scores(ssn: Session, plugin: str) -> None:
    for point in ("job_enqueueable", "job_pipelined"):
        fn = ssn.registered(point).get(plugin)
        if fn is None:
            continue
        for job in ssn.jobs.values():
            assert fn(job) in (-1, 0, 1), f"{plugin}: {point} voted {fn(job)!r} for {job.uid}"
    order = ssn.registered("node_order").get(plugin)
    batch = ssn.registered("batch_node_order").get(plugin)
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if order is not None:
                for node in ssn.node_list:
                    try:
                        value = order(task, node)
                    except FitError:
                        continue
                    assert isinstance(value, (int, float)) and math.isfinite(value), (
                        f"{plugin}: node_order gave {value!r} for {task.uid} on {node.name}")
            if batch is not None:
                for name, value in (batch(task, list(ssn.node_list)) or {}).items():
                    assert math.isfinite(value), (
                        f"{plugin}: batch_node_order gave {value!r} for {task.uid} on {name}")


def _check_column_forms(ssn: Session, plugin: str) -> None:
    variants = {point: forms.registered(ssn, point).get(plugin) for point in forms.VECTOR_POINTS}
    if not any(variants.values()):
        return
    columns = NodeColumns.of(ssn)
    columns.sync()
    nodes = list(columns.nodes)
    everyone = Candidates(np.arange(len(nodes)))
    tasks = [t for job in sorted(ssn.jobs.values(), key=lambda j: j.uid)
             for t in sorted(job.tasks.values(), key=lambda t: t.uid)][:12]
    for task in tasks:
        for point, variant in variants.items():
            if variant is None:
                continue
            try:
                answer = (variant(task, columns) if point == "predicate"
                          else variant(task, columns, everyone))
            except VectorFallback:
                continue  # the scalar path answers for this task: nothing to compare
            # What the fast path refuses, the check reports.
            try:
                if point != "predicate":
                    answer = forms.checked_scores(plugin, f"vector {point.replace('_', ' ')}",
                                                  answer, len(nodes))
                elif answer is not None:
                    forms.check_mask(plugin, answer, len(nodes))
            except PluginError as malformed:
                raise AssertionError(f"{plugin}: {malformed}") from None
            scalar = ssn.registered(point).get(plugin)
            for i, node in enumerate(nodes):
                # A plain mask cannot say "harmless" (an error that stops the chain of
                # predicates without failing the node): it then disagrees.
                expected = _scalar_says(ssn, point, scalar, task, node, nodes=nodes)
                got = _column_says(point, answer, i)
                assert expected == got, (
                    f"{plugin}: the column form of {point} answers {got!r} for {task.uid} on "
                    f"{node.name}, its scalar function {expected!r}")


def _scalar_says(ssn: Session, point: str, scalar: Any, task: TaskInfo, node: NodeInfo, *,
                 nodes: list[NodeInfo]) -> Any:
    """A scalar function's answer for one node, in the terms of :func:`_column_says`."""
    if point == "predicate":
        err: FitError | None = None
        if scalar is not None:
            with ssn.for_report():
                try:
                    err = scalar(task, node)
                except FitError as raised:
                    err = raised
        if err is None:
            return "passes"
        fails = any(status.code in ALLOCATE_FAILING_CODES for status in err.statuses)
        return "fails" if fails else "harmless"
    if scalar is None:
        return 0.0
    if point == "node_order":
        try:
            return float(scalar(task, node))
        except FitError:
            return None  # no score, a column form's NaN
    return float((scalar(task, nodes) or {}).get(node.name, 0.0))


def _column_says(point: str, answer: Any, i: int) -> Any:
    """A column form's answer for node ``i``: "passes", "harmless" or "fails" for a
    predicate; a float, or None for NaN (no score), for a score."""
    if point == "predicate":
        if answer is None:
            return "passes"
        if isinstance(answer, tuple):
            ok, harmless = answer
            return "passes" if ok[i] else "harmless" if harmless[i] else "fails"
        return "passes" if answer[i] else "fails"
    value = float(answer) if isinstance(answer, (int, float)) else float(answer[i])
    return None if math.isnan(value) else value  # to the last bit otherwise


def plugin_checks(
    plugin: str, *, arguments: Arguments | dict[str, Any] | None = None,
    registry: Registry | None = None,
) -> list[PluginCheck]:
    """The checks of one plugin, for ``pytest.mark.parametrize`` (a list: pytest takes
    no other iterable there)."""
    args = arguments if isinstance(arguments, Arguments) else Arguments(arguments or {})
    reg = registry or default_registry()

    def orderings() -> None:
        for seed in SEEDS:
            _check_orderings(_open(plugin, args, reg, seed), plugin)

    def votes_and_scores() -> None:
        for seed in SEEDS:
            _check_votes_and_scores(_open(plugin, args, reg, seed), plugin)

    def read_only() -> None:
        for seed in SEEDS:
            ssn = _open(plugin, args, reg, seed)
            before = _state(ssn)
            _answers(ssn)
            assert _state(ssn) == before, f"{plugin}: answering changed the session's state"

    def deterministic() -> None:
        for seed in SEEDS:
            first = _answers(_open(plugin, args, reg, seed))
            assert first == _answers(_open(plugin, args, reg, seed)), (
                f"{plugin}: two sessions on the same cluster answered differently")

    def no_leak_between_sessions() -> None:
        for seed in SEEDS:
            ssn = _open(plugin, args, reg, seed)
            first = _answers(ssn)
            ssn.close()
            again = _open(plugin, args, reg, seed)
            assert _answers(again) == first, (
                f"{plugin}: a session after a closed one answered differently")

    def column_forms_agree() -> None:
        for seed in SEEDS:
            _check_column_forms(_open(plugin, args, reg, seed), plugin)

    return [PluginCheck(plugin, name, run) for name, run in (
        ("orderings", orderings), ("votes_and_scores", votes_and_scores),
        ("read_only", read_only), ("deterministic", deterministic),
        ("no_leak_between_sessions", no_leak_between_sessions),
        ("column_forms_agree", column_forms_agree))]


def check_plugin(plugin: str, *, arguments: Arguments | dict[str, Any] | None = None,
                 registry: Registry | None = None) -> None:
    """Run every check; raise one AssertionError listing all that failed."""
    failures = []
    for check in plugin_checks(plugin, arguments=arguments, registry=registry):
        try:
            check()
        except AssertionError as exc:
            failures.append(f"{check}: {exc}")
    if failures:
        raise AssertionError("plugin checks failed:\n  " + "\n  ".join(failures))
