"""allocate: scenario tests for behaviours the conformance corpus does not pin down."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import pytest
import yaml
from action_support import REGISTRY, Outcome, make_registry, run_document

from batchsched.actions.allocate import AllocateAction
from batchsched.actions.placement import Placement, ScalarNodeSelector
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import PodGroupPhase, TaskStatus
from batchsched.errors import NodeOrderError
from batchsched.framework.session import Session
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.scenario import parse_scenario

GANG_AND_SELECTOR = """
config:
  actions: allocate
  tiers:
    - plugins: [{name: gang}]
    - plugins: [{name: test-selector}, {name: test-label-score}]
"""


def run(body: str, config: str = GANG_AND_SELECTOR) -> Outcome:
    return run_document(config + body)


# -- pipelining onto future idle -------------------------------------------------------------

RELEASING_N1 = """
queues: [{name: q1}]
jobs:
  - {name: old, namespace: c1, queue: q1, minMember: 0, phase: Running}
  - {name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Inqueue}
tasks:
  - {name: r1, namespace: c1, job: old, node: n1, phase: Running, deleting: true,
     requests: {cpu: 2}}
"""


def test_a_task_fitting_only_in_future_idle_is_pipelined_not_bound() -> None:
    outcome = run(RELEASING_N1 + """
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 2}}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
""")
    assert outcome.binds == {}
    assert outcome.status("c1/p1") == TaskStatus.PIPELINED
    assert outcome.task("c1/p1").node_name == "n1"
    [event] = outcome.events("c1/p1", "FailedScheduling")
    assert event.message == ("Pod c1/p1 can possibly be assigned to n1, once resource is "
                             "released and minAvailable is satisfied")


def test_a_node_with_idle_room_wins_over_a_better_scored_node_with_future_room_only() -> None:
    outcome = run(RELEASING_N1 + """
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 2}}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}, labels: {score: "100"}}
  - {name: n2, allocatable: {cpu: 2, pods: 10}, labels: {score: "0"}}
""")
    assert outcome.binds == {"c1/p1": "n2"}


def test_a_pipelined_gang_keeps_its_places_without_binding() -> None:
    # pg1 needs two tasks: one fits n2 now, the other only n1 once r1 is gone. The gang
    # is pipelined, not ready: nothing binds, but both places stay taken, so pg2's task
    # finds no room on n2.
    outcome = run("""
queues: [{name: q1}]
jobs:
  - {name: old, namespace: c1, queue: q1, minMember: 0, phase: Running}
  - {name: pg1, namespace: c1, queue: q1, minMember: 2, phase: Inqueue,
     createdAt: "2024-01-01T00:00:00Z"}
  - {name: pg2, namespace: c1, queue: q1, minMember: 1, phase: Inqueue,
     createdAt: "2024-01-01T00:00:01Z"}
tasks:
  - {name: r1, namespace: c1, job: old, node: n1, phase: Running, deleting: true,
     requests: {cpu: 2}}
  - {name: a1, namespace: c1, job: pg1, requests: {cpu: 2}}
  - {name: a2, namespace: c1, job: pg1, requests: {cpu: 2}}
  - {name: b1, namespace: c1, job: pg2, requests: {cpu: 2}}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
  - {name: n2, allocatable: {cpu: 2, pods: 10}}
""")
    assert outcome.binds == {}
    assert outcome.status("c1/a1") == TaskStatus.ALLOCATED
    assert outcome.task("c1/a1").node_name == "n2"
    assert outcome.status("c1/a2") == TaskStatus.PIPELINED
    assert outcome.task("c1/a2").node_name == "n1"
    assert str(outcome.job("c1/pg2").nodes_fit_errors["c1/b1"]) == (
        "0/2 nodes are unavailable: 2 Insufficient cpu."
    )


# -- fit errors and their wording -------------------------------------------------------------

def test_a_task_that_fits_nowhere_records_volcanos_fit_error_summary() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Inqueue}]
tasks: [{name: p1, namespace: c1, job: pg1, requests: {cpu: 2}}]
nodes:
  - {name: n1, allocatable: {cpu: 1, pods: 10}}
  - {name: n2, allocatable: {cpu: 1, pods: 10}}
  - {name: n3, allocatable: {cpu: 1, pods: 10}}
""")
    message = "0/3 nodes are unavailable: 3 Insufficient cpu."
    assert str(outcome.job("c1/pg1").nodes_fit_errors["c1/p1"]) == message
    [event] = outcome.events("c1/p1", "FailedScheduling")
    assert (event.type, event.message) == ("Warning", message)
    [job_event] = outcome.events("c1/pg1", "Unschedulable")
    assert job_event.message.endswith(f"Origin reason is p1: {message}")


def test_a_node_without_a_pods_allocatable_has_room_for_no_task() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Inqueue}]
tasks: [{name: p1, namespace: c1, job: pg1, requests: {cpu: 1}}]
nodes: [{name: n1, allocatable: {cpu: 4}}]
""")
    assert outcome.binds == {}
    assert str(outcome.job("c1/pg1").nodes_fit_errors["c1/p1"]) == (
        "0/1 nodes are unavailable: 1 Insufficient pods."
    )


# -- per-role shortcut and the continue/stop rule ----------------------------------------------

def test_once_a_role_failed_its_other_tasks_are_skipped_with_volcanos_message() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Inqueue}]
tasks:
  - {name: m1, namespace: c1, job: pg1, role: master, requests: {cpu: 1}}
  - {name: w1, namespace: c1, job: pg1, role: worker, requests: {cpu: 1},
     nodeSelector: {zone: nowhere}}
  - {name: w2, namespace: c1, job: pg1, role: worker, requests: {cpu: 1}}
  - {name: x1, namespace: c1, job: pg1, requests: {cpu: 1}, nodeSelector: {zone: nowhere}}
  - {name: x2, namespace: c1, job: pg1, requests: {cpu: 1}, nodeSelector: {zone: nowhere}}
nodes: [{name: n1, allocatable: {cpu: 8, pods: 10}}]
""")
    errors = outcome.job("c1/pg1").nodes_fit_errors
    assert outcome.binds == {"c1/m1": "n1"}
    # w2 would fit, but its role already failed in this session.
    skip = "Task w2 with role spec worker has already predicated failed, skip"
    assert str(errors["c1/w2"]) == skip
    assert [e.message for e in outcome.events("c1/w2", "FailedScheduling")] == [skip]
    # Tasks without a role are never skipped that way: each one is tried.
    selector = "0/1 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector."
    assert str(errors["c1/x1"]) == str(errors["c1/x2"]) == selector


GANG_OF_THREE = """
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: %d, phase: Inqueue}]
tasks:
  - {name: t1, namespace: c1, job: pg1, requests: {cpu: 1}}
  - {name: t2, namespace: c1, job: pg1, requests: {cpu: 1}, nodeSelector: {zone: nowhere}}
  - {name: t3, namespace: c1, job: pg1, requests: {cpu: 1}}
nodes: [{name: n1, allocatable: {cpu: 8, pods: 10}}]
"""


def test_a_gang_needing_every_task_stops_at_the_first_failure_and_binds_nothing() -> None:
    outcome = run(GANG_OF_THREE % 3)
    assert outcome.binds == {}
    errors = outcome.job("c1/pg1").nodes_fit_errors
    assert "c1/t2" in errors
    assert "c1/t3" not in errors  # never tried
    assert {outcome.status(f"c1/t{i}") for i in (1, 2, 3)} == {TaskStatus.PENDING}


def test_a_gang_with_spare_tasks_goes_on_after_a_failure() -> None:
    outcome = run(GANG_OF_THREE % 2)
    assert outcome.binds == {"c1/t1": "n1", "c1/t3": "n1"}


# -- predicate-error cache (predicateErrorCacheEnable) -------------------------------------------

CACHE_CASE = """
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 2, phase: Inqueue}]
tasks:
  - {name: w1, namespace: c1, job: pg1, role: worker, requests: {cpu: 3}}
  - {name: w2, namespace: c1, job: pg1, role: worker, requests: {cpu: 1}}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
  - {name: n2, allocatable: {cpu: 3, pods: 10}}
"""


def test_the_error_cache_makes_a_role_skip_nodes_an_earlier_task_failed_on() -> None:
    # w1 failed on n1 (too small for it) and took n2; with the cache w2 does not try n1
    # again, so the gang cannot complete - Volcano's behaviour with its default setting.
    outcome = run(CACHE_CASE)
    assert outcome.binds == {}
    assert str(outcome.job("c1/pg1").nodes_fit_errors["c1/w2"]) == (
        "0/2 nodes are unavailable: 2 Insufficient cpu."
    )


def test_without_the_error_cache_every_node_is_tried_again() -> None:
    config = GANG_AND_SELECTOR + """
  configurations:
    - {name: allocate, arguments: {predicateErrorCacheEnable: false}}
"""
    outcome = run(CACHE_CASE, config)
    assert outcome.binds == {"c1/w1": "n2", "c1/w2": "n1"}


# -- deterministic tie break -------------------------------------------------------------------

TIE = """
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 0, phase: Inqueue}]
tasks:
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 1}}
nodes:
  - {name: n3, allocatable: {cpu: 4, pods: 10}, labels: {score: "%s"}}
  - {name: n1, allocatable: {cpu: 4, pods: 10}, labels: {score: "%s"}}
  - {name: n2, allocatable: {cpu: 4, pods: 10}, labels: {score: "%s"}}
"""


def test_equal_scores_go_to_the_first_node_in_session_node_order() -> None:
    assert run(TIE % (5, 5, 5)).binds == {"c1/p1": "n3"}
    assert run(TIE % (1, 5, 5)).binds == {"c1/p1": "n1"}


def test_the_highest_score_wins() -> None:
    assert run(TIE % (5, 1, 9)).binds == {"c1/p1": "n2"}


# -- what allocate leaves alone, and what it admits -----------------------------------------------

def test_best_effort_tasks_are_left_to_backfill() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 0, phase: Inqueue}]
tasks:
  - {name: be, namespace: c1, job: pg1}
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 1}}
nodes: [{name: n1, allocatable: {cpu: 4, pods: 10}}]
""")
    assert outcome.binds == {"c1/p1": "n1"}
    assert outcome.status("c1/be") == TaskStatus.PENDING
    # Allocate never tried it, but the session's close gives every pending pod its
    # condition, as Volcano's cache does: the job's fit error.
    [event] = outcome.events("c1/be", "FailedScheduling")
    assert event.message == ("pod group is ready, 0 minAvailable, 1 Binding, 1 Pending; "
                             "Pending: 1 Unschedulable")


def test_without_enqueue_pending_pod_groups_are_treated_as_inqueue() -> None:
    outcome = run("""
queues: [{name: q1}]
jobs: [{name: pg1, namespace: c1, queue: q1, minMember: 1}]
tasks: [{name: p1, namespace: c1, job: pg1, requests: {cpu: 1}}]
nodes: [{name: n1, allocatable: {cpu: 4, pods: 10}}]
""")
    assert outcome.binds == {"c1/p1": "n1"}
    # Binding does not count as scheduled at close, so the group reads Inqueue.
    assert outcome.job("c1/pg1").podgroup.phase == PodGroupPhase.INQUEUE


def test_an_overused_queue_is_skipped() -> None:
    config = """
config:
  actions: allocate
  tiers:
    - plugins: [{name: test-overused}, {name: test-selector}]
"""
    outcome = run("""
queues:
  - {name: q1, annotations: {test/overused: "true"}}
  - {name: q2}
jobs:
  - {name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Inqueue}
  - {name: pg2, namespace: c1, queue: q2, minMember: 1, phase: Inqueue}
tasks:
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 1}}
  - {name: p2, namespace: c1, job: pg2, requests: {cpu: 1}}
nodes: [{name: n1, allocatable: {cpu: 4, pods: 10}}]
""", config)
    assert outcome.binds == {"c1/p2": "n1"}


def test_queues_are_re_ranked_after_every_round() -> None:
    # proportion orders queues by share: after q1 places one task, q2 has the lower
    # share and goes next, so the two queues take turns, one task per round.
    config = """
config:
  actions: allocate
  tiers:
    - plugins: [{name: proportion}, {name: test-selector}]
"""
    outcome = run("""
queues: [{name: q1}, {name: q2}]
jobs:
  - {name: pa, namespace: c1, queue: q1, minMember: 0, phase: Inqueue}
  - {name: pb, namespace: c1, queue: q2, minMember: 0, phase: Inqueue}
tasks:
  - {name: a1, namespace: c1, job: pa, requests: {cpu: 1}}
  - {name: a2, namespace: c1, job: pa, requests: {cpu: 1}}
  - {name: b1, namespace: c1, job: pb, requests: {cpu: 1}}
  - {name: b2, namespace: c1, job: pb, requests: {cpu: 1}}
nodes: [{name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}]
""", config)
    assert outcome.bind_order == ["c1/a1", "c1/b1", "c1/a2", "c1/b2"]


# -- the worked example of docs/actions.md ------------------------------------------------------

DOC_EXAMPLE = """
queues: [{name: q1}]
jobs:
  - {name: old, namespace: c1, queue: q1, minMember: 0, phase: Running}
  - {name: pg1, namespace: c1, queue: q1, minMember: 2, phase: Inqueue}
tasks:
  - {name: p0, namespace: c1, job: pg1, requests: {cpu: 1}}
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 2}}
  - {name: p2, namespace: c1, job: pg1, requests: {cpu: 2}}
nodes:
  - {name: n1, allocatable: {cpu: 2, pods: 10}}
  - {name: n2, allocatable: {cpu: 2, pods: 10}}
"""


def test_the_documented_example() -> None:
    outcome = run(DOC_EXAMPLE)
    assert outcome.binds == {"c1/p0": "n1", "c1/p1": "n2"}
    assert str(outcome.job("c1/pg1").nodes_fit_errors["c1/p2"]) == (
        "0/2 nodes are unavailable: 2 Insufficient cpu."
    )


def test_the_documented_example_with_a_releasing_task_on_n2() -> None:
    releasing = ("tasks:\n  - {name: r1, namespace: c1, job: old, node: n2, phase: Running,"
                 " deleting: true, requests: {cpu: 2}}\n")
    outcome = run(DOC_EXAMPLE.replace("tasks:\n", releasing))
    assert outcome.binds == {}
    assert (outcome.status("c1/p0"), outcome.task("c1/p0").node_name) == (
        TaskStatus.ALLOCATED, "n1")
    assert (outcome.status("c1/p1"), outcome.task("c1/p1").node_name) == (
        TaskStatus.PIPELINED, "n2")


# -- the node choice is replaceable ------------------------------------------------------------

def test_another_node_selector_can_be_plugged_in() -> None:
    class LastNode(ScalarNodeSelector):
        """Takes the reference answer's candidates but always the last node."""

        def for_allocate(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Placement:
            return Placement(nodes[-1], self.feasible_nodes(task, nodes, lambda t, n: None)[1])

    document = yaml.safe_load(textwrap.dedent(GANG_AND_SELECTOR + TIE % (5, 5, 5)))
    document.update(version=1, name="selector")
    scenario = parse_scenario(document)
    cache = scenario.build_cache()
    ssn = Session.open(cache, scenario.configuration, registry=REGISTRY)
    action = AllocateAction()
    action.node_selector_factory = LastNode
    action.execute(ssn)
    assert {b.task: b.node for b in cache.binds} == {"c1/p1": "n2"}


@pytest.mark.parametrize("fast_path", ["0", "1"])
def test_no_node_to_find_places_nothing_on_either_path(
        monkeypatch: pytest.MonkeyPatch, fast_path: str) -> None:
    # Volcano's CalculateNumOfFeasibleNodesToFind can give 0 (minNodesToFind 0, a 1%
    # share of 2 nodes); PredicateNodes then ends at the first feasible node with none
    # stored. The vectorised path divided by it.
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
    from batchsched.scenario import run_scenario

    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast_path)
    doc = yaml.safe_load("""
version: 1
name: no node to find
config:
  actions: "allocate, backfill"
  nodesToFind: {minNodesToFind: 0, percentageOfNodesToFind: 1}
  tiers:
    - plugins: [{name: priority}, {name: gang}, {name: conformance}]
    - plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
queues: [{name: q1, weight: 1}]
nodes:
  - {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
  - {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs: [{name: j, namespace: ns, queue: q1, minMember: 1, phase: Inqueue}]
tasks:
  - {name: a, namespace: ns, job: j, requests: {cpu: 1}}
  - {name: b, namespace: ns, job: j}
""")
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {}


@pytest.mark.parametrize("fast_path", ["0", "1"])
def test_a_partial_scan_passes_the_feasible_node_that_ended_it(
        monkeypatch: pytest.MonkeyPatch, fast_path: str) -> None:
    # Volcano's PredicateNodes keeps 100 of 200 feasible nodes and stops at the 101st,
    # which it examines and drops: the next task's scan starts past it. n100 (twice as
    # big, so the best score) is that node for the first task: no Volcano run gives it
    # to the second.
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
    from batchsched.scenario import run_scenario

    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast_path)
    nodes = [{"name": f"n{i:03d}", "allocatable": {
        "cpu": 8 if i == 100 else 4, "memory": "16Gi" if i == 100 else "8Gi", "pods": 110}}
        for i in range(200)]
    doc = {
        "version": 1, "name": "scan stopper",
        "config": {"actions": "allocate", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                         {"name": "nodeorder"}]}]},
        "queues": [{"name": "q1"}], "nodes": nodes,
        "jobs": [{"name": "g", "namespace": "ns", "queue": "q1", "minMember": 2,
                  "phase": "Inqueue"}],
        "tasks": [{"name": f"t{i}", "namespace": "ns", "job": "g", "requests": {"cpu": 1}}
                  for i in range(2)],
    }
    binds = run_scenario(parse_scenario(doc, source="<test>")).binds
    assert binds["ns/t1"] != "n100"


# -- a node-order function that cannot score --------------------------------------------------


class _CannotScoreFirstPlugin:
    """Its batch node order fails for task ``p0`` (an extender whose prioritize call
    failed, say) and scores every other task."""

    name = "test-cannot-score"

    def __init__(self, arguments: object) -> None:
        pass

    def on_session_open(self, ssn: Session) -> None:
        def batch(task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
            if task.name == "p0":
                raise NodeOrderError("prioritize failed", plugin=self.name)
            return {}

        ssn.add_batch_node_order_fn(self.name, batch)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _CannotScoreHooks:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec(_CannotScoreFirstPlugin.name, _CannotScoreFirstPlugin)]


def test_a_task_whose_nodes_cannot_be_scored_is_passed_over_without_a_fit_error() -> None:
    """Volcano's allocate: nodes passed the predicates but PrioritizeNodes failed, so
    no best node; the task is skipped (``continue``) with no fit error recorded, and
    the next task of its role is still tried (a fit error would have made
    allocate skip the role's other tasks)."""
    registry = make_registry()
    registry.register(_CannotScoreHooks(), name="cannot-score-test")
    outcome = run_document("""
        config:
          actions: allocate
          tiers:
            - plugins: [{name: gang}, {name: test-cannot-score}]
        queues: [{name: q1}]
        nodes:
          - {name: n1, allocatable: {cpu: 4, pods: 10}}
          - {name: n2, allocatable: {cpu: 4, pods: 10}}
        jobs:
          - {name: pg1, namespace: c1, queue: q1, minMember: 1, phase: Inqueue}
        tasks:
          - {name: p0, namespace: c1, job: pg1, role: worker, requests: {cpu: 1}}
          - {name: p1, namespace: c1, job: pg1, role: worker, requests: {cpu: 1}}
        """, registry=registry)
    assert outcome.binds == {"c1/p1": "n1"}
    assert "c1/p0" not in outcome.job("c1/pg1").nodes_fit_errors
