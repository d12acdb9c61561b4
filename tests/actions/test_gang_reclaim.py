"""gangreclaim: every case of Volcano's gangreclaim_test.go, and the action's own behaviours.

Volcano's cases map as follows:

* ``TestPickDomainsFromGradients_MaxDomainsAndDedup``, ``..._Fallback``:
  :func:`test_pick_domains_caps_and_dedups`, :func:`test_pick_domains_falls_back`;
* ``TestParseArguments``: :func:`test_arguments_are_read`;
* ``TestParseArguments_InvalidMaxDomainsFallsBackToDefault`` (zero, negative):
  :func:`test_max_domains_not_positive_falls_back`;
* ``TestSelectDomainVictims_ReclaimableCrossQueueOnly``,
  ``..._RespectVictimJobPreemptable``, ``..._AllowVictimJobWhenPreemptableUnset``:
  the scenarios ``data/gang/gangreclaim-0[0-2]-*.yaml`` (the whole action, through
  the same path as ``batchsched check``), and the bundle selection itself in
  :func:`test_select_bundles_as_volcano_unit_tests`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from action_support import Outcome, make_registry, run_document

from batchsched.actions.gang_eviction import CLUSTER_DOMAIN, DEFAULT_MAX_DOMAINS, pick_domains
from batchsched.actions.gang_reclaim import GangReclaimAction
from batchsched.api.queue import QueueInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.scenario import check_scenario, load_scenario, parse_scenario

DATA = Path(__file__).parent / "data" / "gang"
SCENARIOS = sorted(DATA.glob("gangreclaim-*.yaml"))
_registry = Registry(autoload=False)


class _NoPreemptivePlugin:
    """``test-no-preemptive``: a queue annotated ``test/preemptive: "false"`` may not
    reclaim for any task."""

    name = "test-no-preemptive"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        def preemptive(queue: QueueInfo, _task: TaskInfo) -> bool:
            return queue.annotations.get("test/preemptive") != "false"

        ssn.add_preemptive_fn(self.name, preemptive)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _Plugins:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec(_NoPreemptivePlugin.name, _NoPreemptivePlugin)]


REGISTRY = make_registry()
REGISTRY.register(_Plugins(), name="gang-reclaim-test-plugins")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    result = check_scenario(load_scenario(path), registry=_registry)
    assert result.passed, "\n".join(result.differences)


def test_scenarios_are_there() -> None:
    assert len(SCENARIOS) == 6


# -- arguments and domains ---------------------------------------------------------------


def test_arguments_are_read() -> None:
    action = GangReclaimAction(Arguments({"maxDomains": 5, "allowWholeBundle": False}))
    assert (action.max_domains, action.allow_whole_bundle) == (5, False)


@pytest.mark.parametrize("value", [0, -1], ids=["zero", "negative"])
def test_max_domains_not_positive_falls_back(value: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        action = GangReclaimAction(Arguments({"maxDomains": value}))
    assert action.max_domains == DEFAULT_MAX_DOMAINS
    assert "gangreclaim" in caplog.text


@pytest.mark.parametrize("value", ["x", "1", 2.5, 3.0, False])
def test_max_domains_not_a_yaml_integer_keeps_the_default(
        value: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Volcano's GetInt reads a YAML integer only: "1" or 3.0 keep the default 8."""
    with caplog.at_level("WARNING", logger="batchsched"):
        action = GangReclaimAction(Arguments({"maxDomains": value}))
    assert action.max_domains == 8
    assert "maxDomains" in caplog.text


def test_pick_domains_caps_and_dedups() -> None:
    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 3) == ["d1", "d2", "d3"]


def test_pick_domains_falls_back() -> None:
    assert pick_domains([[]], 8, CLUSTER_DOMAIN) == [CLUSTER_DOMAIN]


# -- Volcano's selectDomainBundles cases, on the bundle selection itself ------------------


def _session(document: dict[str, Any]) -> Session:
    scenario = parse_scenario(document)
    return Session.open(scenario.build_cache(), scenario.configuration, registry=_registry)


def _document(victims: list[dict[str, Any]], queues: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": 1, "name": "select",
        "config": {"actions": "", "tiers": [{"plugins": [{"name": "gang"}]}]},
        "queues": [{"name": "q1"}, *queues],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "pods": 10}}],
        "jobs": [{"name": "reclaimer", "namespace": "ns", "queue": "q1", "minMember": 1,
                  "phase": "Inqueue"}, *victims],
        "tasks": [{"name": "reclaimer", "namespace": "ns", "job": "reclaimer",
                   "requests": {"cpu": 1}}]
        + [{"name": v["name"], "namespace": "ns", "job": v["name"], "node": "n1",
            "phase": "Running", "priority": 10, "requests": {"cpu": 1}} for v in victims],
    }


def _selected(document: dict[str, Any]) -> list[str]:
    ssn = _session(document)
    try:
        action = GangReclaimAction(Arguments({"allowWholeBundle": True}))
        bundles = action.select_bundles(ssn, ssn.jobs["ns/reclaimer"],
                                        Resource.from_mapping({"cpu": 1}), ssn.node_list)
        return [task.uid for bundle in bundles for task in bundle.tasks]
    finally:
        ssn.close()


def test_select_bundles_as_volcano_unit_tests() -> None:
    # ReclaimableCrossQueueOnly.
    assert _selected(_document(
        [{"name": "victim", "namespace": "ns", "queue": "q2", "phase": "Running"},
         {"name": "other", "namespace": "ns", "queue": "q3", "phase": "Running"}],
        [{"name": "q2", "reclaimable": True}, {"name": "q3", "reclaimable": False}],
    )) == ["ns/victim"]
    # RespectVictimJobPreemptable.
    assert _selected(_document(
        [{"name": "victim", "namespace": "ns", "queue": "q2", "phase": "Running",
          "annotations": {"volcano.sh/preemptable": "false"}}],
        [{"name": "q2", "reclaimable": True}],
    )) == []
    # AllowVictimJobWhenPreemptableUnset.
    assert _selected(_document(
        [{"name": "victim", "namespace": "ns", "queue": "q2", "phase": "Running"}],
        [{"name": "q2", "reclaimable": True}],
    )) == ["ns/victim"]


def test_tasks_of_the_reclaimers_own_queue_are_no_candidates() -> None:
    assert _selected(_document(
        [{"name": "mate", "namespace": "ns", "queue": "q1", "phase": "Running"}], [],
    )) == []


# -- behaviours of the whole action -------------------------------------------------------


def run(queues: str, *, plugins: str = "") -> Outcome:
    return run_document(f"""
config:
  actions: gangreclaim
  tiers:
    - plugins: [{{name: gang}}{plugins}]
queues: {queues}
nodes: [{{name: n1, allocatable: {{cpu: 2, pods: 10}}}}]
jobs:
  - {{name: r, namespace: ns, queue: q1, minMember: 1, phase: Inqueue}}
  - {{name: a, namespace: ns, queue: q2, phase: Running}}
  - {{name: b, namespace: ns, queue: q3, phase: Running}}
tasks:
  - {{name: r1, namespace: ns, job: r, requests: {{cpu: 1}}}}
  - {{name: a1, namespace: ns, job: a, node: n1, phase: Running, requests: {{cpu: 1}}}}
  - {{name: b1, namespace: ns, job: b, node: n1, phase: Running, requests: {{cpu: 1}}}}
""", registry=REGISTRY)


def evicted(outcome: Outcome) -> list[str]:
    return sorted(e.task for e in outcome.cache.evictions)


def test_victim_queue_order_picks_the_queue() -> None:
    # Without a victim-queue order plugin, victim queues go in reverse queue order
    # (q3 after q2 in queue order), so q3's task is taken.
    outcome = run("[{name: q1}, {name: q2}, {name: q3}]")
    assert evicted(outcome) == ["ns/b1"]
    assert outcome.status("ns/r1") is TaskStatus.PIPELINED
    [on_pod] = outcome.events("ns/b1", "Evict")
    assert on_pod.message == "Pod is evicted, because of gangreclaim"
    [on_group] = outcome.events("ns/b", "Evict")
    assert on_group.message == "gangreclaim"


def test_an_overused_queue_does_not_reclaim() -> None:
    outcome = run("[{name: q1, annotations: {test/overused: 'true'}}, {name: q2}, {name: q3}]",
                  plugins=", {name: test-overused}")
    assert evicted(outcome) == []


def test_a_queue_that_may_not_reclaim_does_not() -> None:
    outcome = run("[{name: q1, annotations: {test/preemptive: 'false'}}, {name: q2}, {name: q3}]",
                  plugins=", {name: test-no-preemptive}")
    assert evicted(outcome) == []
    assert outcome.status("ns/r1") is TaskStatus.PENDING


def test_no_reclaimable_queue_no_eviction() -> None:
    outcome = run("[{name: q1}, {name: q2, reclaimable: false}, {name: q3, reclaimable: false}]")
    assert evicted(outcome) == []


SHARE = """
version: 1
now: 0
config: {actions: "", tiers: [{plugins: [{name: proportion}]}]}
queues: [{name: q1}, {name: q2}]
nodes: [{name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}]
jobs:
- {name: held, queue: q2, minMember: 1, phase: Running}
- {name: wants, queue: q1, minMember: 2, phase: Inqueue}
tasks:
- {name: h1, job: held, node: n1, phase: Running, requests: {cpu: 4, memory: 1Gi}}
- {name: w1, job: wants, requests: {cpu: 1500m, memory: 1Gi}}
- {name: w2, job: wants, requests: {cpu: 1500m, memory: 1Gi}}
"""


def test_a_gang_s_tasks_are_judged_together_as_volcano_does() -> None:
    """q1 deserves 2 cpu: each 1.5-cpu task fits, the two together do not
    (Volcano's Preemptive(queue, candidates) sums their requests)."""
    import yaml

    parsed = parse_scenario(yaml.safe_load(SHARE), source="<test>")
    ssn = Session.open(parsed.to_cluster(), parsed.configuration)
    queue = ssn.queues["q1"]
    pending = list(ssn.jobs["default/wants"].tasks.values())
    assert all(ssn.preemptive(queue, task) for task in pending)
    assert not ssn.preemptive_all(queue, pending)
    assert ssn.preemptive_all(queue, pending[:1])


def test_a_preemptive_function_without_a_many_form_judges_tasks_one_by_one() -> None:
    import yaml

    seen: list[str] = []

    class Judge:
        name = "judge"

        def __init__(self, arguments: Arguments) -> None:
            pass

        def on_session_open(self, ssn: Session) -> None:
            def one(queue: QueueInfo, task: TaskInfo) -> bool:
                seen.append(task.name)
                return task.name != "w2"

            ssn.add_preemptive_fn(self.name, one)

        def on_session_close(self, ssn: Session) -> None:
            pass

    class Provider:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("judge", Judge)]

    registry = Registry(autoload=False)
    registry.register(Provider(), name="judge-provider")
    doc = yaml.safe_load(SHARE)
    doc["config"]["tiers"] = [{"plugins": [{"name": "judge"}]}]
    parsed = parse_scenario(doc, source="<test>")
    ssn = Session.open(parsed.to_cluster(), parsed.configuration, registry=registry)
    w1, w2 = sorted(ssn.jobs["default/wants"].tasks.values(), key=lambda task: task.name)
    assert ssn.preemptive_all(ssn.queues["q1"], [w1])
    assert not ssn.preemptive_all(ssn.queues["q1"], [w1, w2])
    assert seen == ["w1", "w1", "w2"]
