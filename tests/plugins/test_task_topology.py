"""task-topology: Volcano's cases, then rules a user sees.

Transcribed from volcano-sh/volcano (Apache-2.0), pkg/scheduler/plugins/task-topology:

* topology_test.go, ``Test_readTopologyFromPgAnnotations``: its seven cases
  (correct annotation; role names containing ``-``; no annotation; invalid
  annotation; a task name the job does not have; a duplicate name; redundant
  punctuation), read from the pod groups of scenarios;
* taskunbound_test.go, ``TestBucket_TaskUnbound_IsInverseOfTaskBound`` and
  ``TestJobManager_TaskUnbound_IsInverseOfTaskBound`` (a bucket, then a job's
  buckets, return to their state when a placed task is taken off again), and
  ``TestStatementRollbackRestoresTaskTopologyState`` (discard, failed allocation,
  discarded eviction) on scenario sessions.

Volcano's nil groups are empty tuples here, and its error messages name the
annotation too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pytest

from batchsched.api.job import JobInfo
from batchsched.api.task import TaskInfo
from batchsched.errors import SchedulingError
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.plugins.task_topology import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    TASK_ORDER_ANNOTATION,
    Bucket,
    InvalidTopologyError,
    JobTopology,
    TaskTopology,
    TaskTopologyPlugin,
    read_topology,
)
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scenario.runner import Decisions

PLUGIN = "task-topology"


class _Provider:
    @hookimpl
    def batchsched_register_plugins(self) -> Iterable[PluginSpec]:
        return [PluginSpec(PLUGIN, TaskTopologyPlugin)]


def registry() -> Registry:
    """The default registry, taught the plugin if it does not know it yet."""
    registry = Registry(autoload=False)
    if PLUGIN not in registry.plugins:
        registry.register(_Provider(), name="task-topology-test")
    return registry


def scenario(
    tasks: list[dict[str, Any]],
    annotations: dict[str, str] | None = None,
    *,
    plugins: list[dict[str, Any]] | None = None,
    nodes: Iterable[str] = ("n1", "n2"),
    node_cpu: int = 4,
    job: str = "job1",
    namespace: str = "default",
    min_member: int = 1,
) -> dict[str, Any]:
    """One job of ``tasks`` (name, role, optional node/phase/cpu) on ``nodes``."""
    tiers = [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
             {"plugins": [{"name": "predicates"}, *(plugins or [])]}]
    job_doc: dict[str, Any] = {"name": job, "namespace": namespace, "minMember": min_member,
                               "phase": "Inqueue"}
    if annotations is not None:
        job_doc["annotations"] = annotations
    return {
        "version": 1, "name": "task-topology",
        "config": {"actions": "enqueue, allocate", "tiers": tiers},
        "nodes": [{"name": name, "allocatable": {"cpu": node_cpu, "memory": "8Gi", "pods": 10}}
                  for name in nodes],
        "jobs": [job_doc],
        "tasks": [{"namespace": namespace, "job": job, "requests": {"cpu": 1, "memory": "1Gi"},
                   **task} for task in tasks],
    }


def run(doc: dict[str, Any], *, scores: bool = False) -> Decisions:
    return run_scenario(parse_scenario(doc, source="<test>"), scores=scores,
                        registry=registry())


def the_job(doc: dict[str, Any]) -> JobInfo:
    (job,) = parse_scenario(doc, source="<test>").to_cluster().jobs.values()
    return job


def open_session(doc: dict[str, Any]) -> Session:
    parsed = parse_scenario(doc, source="<test>")
    return Session.open(parsed.to_cluster(), parsed.configuration, registry=registry())


TOPOLOGY = [{"name": PLUGIN}]

# -- topology_test.go: Test_readTopologyFromPgAnnotations ---------------------------------

TF_ROLES = [("job1-ps-0", "ps"), ("job1-ps-1", "ps"), ("job1-worker-0", "worker"),
            ("job1-worker-1", "worker"), ("job1-chief-0", "chief"),
            ("job1-evaluator-0", "evaluator")]
DASHED_ROLES = [("job1-ps-some-0", "ps-some"), ("job1-ps-some-1", "ps-some"),
                ("job1-worker-another-some-0", "worker-another-some"),
                ("job1-worker-another-some-1", "worker-another-some"),
                ("job1-chief-kk-0", "chief-kk"), ("job1-evaluator-tt-0", "evaluator-tt")]


def annotated(roles: list[tuple[str, str]], affinity: str, anti_affinity: str,
              order: str) -> dict[str, Any]:
    return scenario([{"name": name, "role": role} for name, role in roles],
                    {AFFINITY_ANNOTATION: affinity, ANTI_AFFINITY_ANNOTATION: anti_affinity,
                     TASK_ORDER_ANNOTATION: order})


READ_CASES = {
    "correct annotation": (
        annotated(TF_ROLES, "ps,worker;ps,chief", "ps;worker,chief", "ps,worker,chief,evaluator"),
        TaskTopology((("ps", "worker"), ("ps", "chief")), (("ps",), ("worker", "chief")),
                     ("ps", "worker", "chief", "evaluator"))),
    "correct annotation with tasks whose names contain `-`": (
        annotated(DASHED_ROLES, "ps-some,worker-another-some;ps-some,chief-kk",
                  "ps-some;worker-another-some,chief-kk",
                  "ps-some,worker-another-some,chief-kk,evaluator-tt"),
        TaskTopology((("ps-some", "worker-another-some"), ("ps-some", "chief-kk")),
                     (("ps-some",), ("worker-another-some", "chief-kk")),
                     ("ps-some", "worker-another-some", "chief-kk", "evaluator-tt"))),
    "nil annotation": (scenario([]), None),
    "redundant punctuations": (
        annotated(TF_ROLES, "ps,worker;ps,,chief,;", "ps;worker,chief;;;",
                  "ps,worker,chief,evaluator,,,"),
        TaskTopology((("ps", "worker"), ("ps", "", "chief", ""), ("",)),
                     (("ps",), ("worker", "chief"), ("",), ("",), ("",)),
                     ("ps", "worker", "chief", "evaluator", "", "", ""))),
}


@pytest.mark.parametrize("case", sorted(READ_CASES))
def test_read_topology_from_pod_group_annotations(case: str) -> None:
    doc, expected = READ_CASES[case]
    assert read_topology(the_job(doc)) == expected


PS_WORKER = TF_ROLES[:4]
INVALID_CASES = {
    "invalid annotation": (
        annotated(TF_ROLES, "$%GF$^trtqwrg^", "ps;worker,chief;#@FGEW^vfa897bgs;;",
                  "ps,worker,chief,evaluator,,,"),
        f"{AFFINITY_ANNOTATION}: task '$%GF$^trtqwrg^' does not exist in job default/job1"),
    "invalid task name": (
        annotated(PS_WORKER, "ps,worker", "ps", "ps,worker,chief"),
        f"{TASK_ORDER_ANNOTATION}: task 'chief' does not exist in job default/job1"),
    "duplicate task name": (
        annotated(PS_WORKER, "ps,worker", "ps,ps", "ps,worker"),
        f"{ANTI_AFFINITY_ANNOTATION}: task 'ps' is duplicate in job default/job1"),
}


@pytest.mark.parametrize("case", sorted(INVALID_CASES))
def test_invalid_annotations_are_reported(case: str) -> None:
    doc, message = INVALID_CASES[case]
    with pytest.raises(InvalidTopologyError) as raised:
        read_topology(the_job(doc))
    assert str(raised.value) == message


# -- taskunbound_test.go ----------------------------------------------------------------


def bucket_state(bucket: Bucket) -> tuple[object, ...]:
    return (set(bucket.pending), dict(bucket.role_counts), bucket.request_score,
            bucket.request.to_dict(), bucket.placed_count, dict(bucket.placed_on))


def manager_state(manager: JobTopology) -> tuple[object, ...]:
    return ([bucket_state(b) for b in manager.buckets],
            {node: dict(roles) for node, roles in manager.roles_on_node.items()})


def single_ps_task() -> tuple[JobInfo, TaskInfo]:
    job = the_job(scenario([{"name": "pod-u1", "role": "ps"}], {AFFINITY_ANNOTATION: "ps"}))
    (task,) = job.tasks.values()
    return job, task


def test_bucket_task_unbound_is_inverse_of_task_bound() -> None:
    """TestBucket_TaskUnbound_IsInverseOfTaskBound."""
    _, task = single_ps_task()
    bucket = Bucket(0)
    bucket.add(task)
    before = bucket_state(bucket)

    task.node_name = "node-a"
    bucket.task_placed(task)
    assert bucket.placed_count == 1
    assert bucket.placed_on == {"node-a": 1}
    assert task.uid not in bucket.pending

    bucket.task_unplaced(task)
    assert bucket_state(bucket) == before


def test_job_manager_task_unbound_is_inverse_of_task_bound() -> None:
    """TestJobManager_TaskUnbound_IsInverseOfTaskBound."""
    job, task = single_ps_task()
    manager = JobTopology(job.uid, TaskTopology(affinity=(("ps",),)))
    manager.build(job.tasks.values())
    before = manager_state(manager)

    task.node_name = "node-a"
    manager.task_placed(task)
    assert manager.roles_on_node["node-a"]["ps"] == 1

    manager.task_unplaced(task)
    assert manager_state(manager) == before


def rollback_session(with_bound_task: bool) -> tuple[Session, JobTopology, list[TaskInfo]]:
    """newRollbackSession: two workers of pg1 (self affinity), one of them possibly
    running on n1."""
    tasks: list[dict[str, Any]] = [{"name": "worker-0", "role": "worker"},
                                   {"name": "worker-1", "role": "worker"}]
    if with_bound_task:
        tasks[0].update(node="n1", phase="Running")
    doc = scenario(tasks, {AFFINITY_ANNOTATION: "worker"}, plugins=TOPOLOGY, nodes=["n1"],
                   job="pg1", namespace="ns1", min_member=2)
    doc["queues"] = [{"name": "q1", "weight": 1}]
    doc["jobs"][0]["queue"] = "q1"
    ssn = open_session(doc)
    manager = ssn.plugins[PLUGIN].jobs["ns1/pg1"]
    return ssn, manager, sorted(ssn.jobs["ns1/pg1"].tasks.values(), key=lambda t: t.name)


def test_statement_discard_restores_task_topology_state() -> None:
    """TestStatementRollbackRestoresTaskTopologyState: discard."""
    ssn, manager, tasks = rollback_session(with_bound_task=False)
    before = manager_state(manager)
    statement = Statement(ssn)
    for task in tasks:
        statement.allocate(task, "n1")
    assert manager.roles_on_node["n1"]["worker"] == len(tasks)

    statement.discard()
    assert manager_state(manager) == before
    statement.discard()
    assert manager_state(manager) == before
    ssn.close()


def test_failed_allocation_leaves_task_topology_state_alone() -> None:
    """TestStatementRollbackRestoresTaskTopologyState: failed allocation."""
    ssn, manager, tasks = rollback_session(with_bound_task=False)
    before = manager_state(manager)
    with pytest.raises(SchedulingError):
        Statement(ssn).allocate(tasks[0], "missing")
    assert manager_state(manager) == before
    ssn.close()


def test_discarded_eviction_restores_task_topology_state() -> None:
    """TestStatementRollbackRestoresTaskTopologyState: discard eviction."""
    ssn, manager, tasks = rollback_session(with_bound_task=True)
    before = manager_state(manager)
    bound = next(task for task in tasks if task.node_name)
    statement = Statement(ssn)
    statement.evict(bound, "test")
    statement.discard()
    assert manager_state(manager) == before
    ssn.close()


# -- our own: what a user sees --------------------------------------------------------


def test_self_anti_affinity_spreads_the_tasks_of_a_role() -> None:
    tasks = [{"name": "ps-0", "role": "ps"}, {"name": "ps-1", "role": "ps"}]
    annotations = {ANTI_AFFINITY_ANNOTATION: "ps"}
    assert run(scenario(tasks, annotations)).binds == {"default/ps-0": "n1",
                                                       "default/ps-1": "n1"}
    assert run(scenario(tasks, annotations, plugins=TOPOLOGY)).binds == {
        "default/ps-0": "n1", "default/ps-1": "n2"}


@pytest.mark.parametrize("order", [None, "ps,worker"])
def test_each_parameter_server_gets_its_worker_beside_it(order: str | None) -> None:
    """docs/plugins/task-topology.md, worked example (with the task order annotation)."""
    tasks = [{"name": f"{role}-{i}", "role": role} for role in ("ps", "worker") for i in (0, 1)]
    annotations = {AFFINITY_ANNOTATION: "ps,worker", ANTI_AFFINITY_ANNOTATION: "ps"}
    if order is not None:
        annotations[TASK_ORDER_ANNOTATION] = order
    decisions = run(scenario(tasks, annotations, plugins=TOPOLOGY), scores=True)
    assert decisions.binds == {"default/ps-0": "n1", "default/worker-0": "n1",
                               "default/ps-1": "n2", "default/worker-1": "n2"}
    # Before any placement every task of a bucket of two scores 2 on either node.
    assert decisions.scores is not None
    assert decisions.scores["default/ps-0"] == {"n1": 100.0, "n2": 100.0}


def test_the_weight_scales_the_score() -> None:
    tasks = [{"name": "ps-0", "role": "ps"}, {"name": "ps-1", "role": "ps"},
             {"name": "ps-2", "role": "ps", "node": "n1", "phase": "Running"}]
    plugins = [{"name": PLUGIN, "arguments": {"task-topology.weight": 10}}]
    decisions = run(scenario(tasks, {ANTI_AFFINITY_ANNOTATION: "ps"}, plugins=plugins),
                    scores=True)
    assert decisions.scores is not None
    # ps-0 is alone in its bucket (largest bucket: 1): 1 pending task, and -1 on n1,
    # where a ps runs.
    assert decisions.scores["default/ps-0"] == {"n1": 0.0, "n2": 1000.0}
    # Then ps-1 meets a ps on either node: 0 on both, and the first node wins.
    assert decisions.binds == {"default/ps-0": "n2", "default/ps-1": "n1"}


def test_a_weight_past_int64_wraps_the_score_as_go_does() -> None:
    """Volcano multiplies the score and the weight as Go ints (``score * p.weight``):
    2 * 2**62 wraps to -2**63, so every node opens at the lowest score; after ps-0 is
    placed, ps-1 scores 1 * 2**62 beside it (positive) and wraps on the other node, and
    goes beside it, anti-affinity notwithstanding."""
    tasks = [{"name": f"{role}-{i}", "role": role} for role in ("ps", "worker") for i in (0, 1)]
    annotations = {AFFINITY_ANNOTATION: "ps,worker", ANTI_AFFINITY_ANNOTATION: "ps"}
    plugins = [{"name": PLUGIN, "arguments": {"task-topology.weight": 2**62}}]
    decisions = run(scenario(tasks, annotations, plugins=plugins), scores=True)
    assert decisions.scores is not None
    assert decisions.scores["default/ps-0"] == {"n1": -(2.0**63) * 50, "n2": -(2.0**63) * 50}
    assert decisions.binds["default/ps-1"] == decisions.binds["default/ps-0"]


def test_tasks_in_buckets_go_first() -> None:
    tasks = [{"name": "a-evaluator", "role": "evaluator"}, {"name": "z-ps", "role": "ps"}]
    annotations = {ANTI_AFFINITY_ANNOTATION: "ps"}
    assert run(scenario(tasks, annotations, nodes=["n1"], node_cpu=1)).binds == {
        "default/a-evaluator": "n1"}
    assert run(scenario(tasks, annotations, plugins=TOPOLOGY, nodes=["n1"],
                        node_cpu=1)).binds == {"default/z-ps": "n1"}


def test_the_task_order_annotation_orders_a_bucket() -> None:
    tasks = [{"name": "ps-0", "role": "ps"}, {"name": "worker-0", "role": "worker"}]
    affinity = {AFFINITY_ANNOTATION: "ps,worker"}
    assert run(scenario(tasks, affinity, plugins=TOPOLOGY, nodes=["n1"],
                        node_cpu=1)).binds == {"default/ps-0": "n1"}
    ordered = {**affinity, TASK_ORDER_ANNOTATION: "worker,ps"}
    assert run(scenario(tasks, ordered, plugins=TOPOLOGY, nodes=["n1"],
                        node_cpu=1)).binds == {"default/worker-0": "n1"}


def test_a_malformed_annotation_leaves_the_job_alone(caplog: pytest.LogCaptureFixture) -> None:
    tasks = [{"name": "ps-0", "role": "ps"}, {"name": "ps-1", "role": "ps"}]
    doc = scenario(tasks, {ANTI_AFFINITY_ANNOTATION: "ps;chief"}, plugins=TOPOLOGY)
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        assert run(doc).binds == {"default/ps-0": "n1", "default/ps-1": "n1"}
        ssn = open_session(doc)
    assert ssn.plugins[PLUGIN].jobs == {}
    ssn.close()
    assert "task 'chief' does not exist in job default/job1" in caplog.text


def test_the_plugin_reads_only_its_weight(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        plugin = TaskTopologyPlugin(Arguments({"task-topology.weight": 3, "weight": 2}))
    assert plugin.weight == 3
    assert "ignoring argument(s) 'weight'" in caplog.text
    # Volcano's GetInt reads a YAML integer only: a quoted one is not read.
    assert TaskTopologyPlugin(Arguments({"task-topology.weight": "3"})).weight == 1


def test_a_role_given_only_by_the_pod_label_puts_no_task_in_a_bucket() -> None:
    """Volcano's task-topology reads the spec from the pod's ``volcano.sh/task-spec``
    annotation only (``getTaskName``): pods labelled ``ps`` without the annotation are
    out of bucket, score nothing, and binpack packs both on the fuller node."""
    def document(where: str) -> dict[str, Any]:
        return {
            "version": 1, "name": "task-topology label",
            "config": {"actions": "allocate", "tiers": [{"plugins": [
                {"name": "binpack"},
                {"name": PLUGIN, "arguments": {"task-topology.weight": 10}}]}]},
            "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "8Gi", "pods": 10}},
                      {"name": "n2", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
            "jobs": [{"name": "tf", "minMember": 1, "phase": "Inqueue",
                      "annotations": {ANTI_AFFINITY_ANNOTATION: "ps"}}],
            "tasks": [{"name": f"ps-{i}", "job": "tf", where: {"volcano.sh/task-spec": "ps"},
                       "requests": {"cpu": 1}} for i in (0, 1)],
        }

    assert run(document("labels")).binds == {"default/ps-0": "n1", "default/ps-1": "n1"}
    # With the annotation, self anti-affinity spreads them.
    assert run(document("annotations")).binds == {"default/ps-0": "n1", "default/ps-1": "n2"}


@pytest.mark.parametrize("label", [False, True])
def test_a_role_given_with_the_equal_label_is_the_pod_s_task_spec(label: bool) -> None:
    """A job controller's pod carries the task-spec annotation and label; a scenario's
    ``role`` stands for the annotation, the label beside it or not."""
    from batchsched.scenario import parse_scenario, run_scenario

    extra = {"labels": {"volcano.sh/task-spec": "w"}} if label else {}
    doc = {"version": 1, "name": "tt",
           "config": {"actions": "enqueue, allocate", "tiers": [{"plugins": [
               {"name": "gang"}, {"name": "predicates"}, {"name": "task-topology"}]}]},
           "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 8, "memory": "8Gi", "pods": 10}}
                     for i in (1, 2)],
           "jobs": [{"name": "j", "minMember": 2,
                     "annotations": {"volcano.sh/task-topology-anti-affinity": "w"}}],
           "tasks": [{"name": f"w{i}", "job": "j", "role": "w", "requests": {"cpu": 1}, **extra}
                     for i in (0, 1)]}
    binds = run_scenario(parse_scenario(doc, source="<test>")).binds
    assert binds == {"default/w0": "n1", "default/w1": "n2"}  # kept apart either way
