"""gangpreempt: every case of Volcano's gangpreempt_test.go, and the action's own behaviours.

Volcano's cases map as follows:

* ``TestPickDomainsFromGradients_MaxDomainsAndDedup``, ``..._Fallback``:
  :func:`test_pick_domains_caps_and_dedups`, :func:`test_pick_domains_falls_back`;
* ``TestParseArguments``: :func:`test_arguments_are_read`;
* ``TestParseArguments_InvalidMaxDomainsFallsBackToDefault`` (zero, negative):
  :func:`test_max_domains_not_positive_falls_back`;
* ``TestSelectDomainVictims_RespectAllowWholeBundle``,
  ``..._RespectVictimJobPreemptable``, ``..._AllowVictimJobWhenPreemptableUnset``:
  the scenarios ``data/gang/gangpreempt-0[0-3]-*.yaml`` (the whole action, through
  the same path as ``batchsched check``), and the bundle selection itself in
  :func:`test_select_bundles_as_volcano_unit_tests`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from action_support import Outcome, run_document

from batchsched.actions.gang_eviction import (
    CLUSTER_DOMAIN,
    DEFAULT_MAX_DOMAINS,
    BundleKind,
    candidate_domains,
    job_bundles,
    pick_domains,
)
from batchsched.actions.gang_preempt import GangPreemptAction
from batchsched.api.resource import Resource
from batchsched.api.types import TaskStatus
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.scenario import check_scenario, load_scenario, parse_scenario

DATA = Path(__file__).parent / "data" / "gang"
SCENARIOS = sorted(DATA.glob("gangpreempt-*.yaml"))
_registry = Registry(autoload=False)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    result = check_scenario(load_scenario(path), registry=_registry)
    assert result.passed, "\n".join(result.differences)


def test_scenarios_are_there() -> None:
    assert len(SCENARIOS) == 11


# -- arguments and domains ---------------------------------------------------------------


def test_arguments_are_read() -> None:
    action = GangPreemptAction(Arguments({"maxDomains": 3, "allowWholeBundle": False}))
    assert (action.max_domains, action.allow_whole_bundle) == (3, False)


def test_defaults() -> None:
    action = GangPreemptAction()
    assert (action.max_domains, action.allow_whole_bundle) == (DEFAULT_MAX_DOMAINS, True)


@pytest.mark.parametrize("value", [0, -1], ids=["zero", "negative"])
def test_max_domains_not_positive_falls_back(value: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        action = GangPreemptAction(Arguments({"maxDomains": value}))
    assert action.max_domains == DEFAULT_MAX_DOMAINS
    assert "maxDomains" in caplog.text


@pytest.mark.parametrize("value", ["ten", "1", 1.5, True, [3]])
def test_max_domains_not_a_yaml_integer_keeps_the_default(
        value: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Volcano's GetInt: anything but a YAML integer keeps the default, logged."""
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        action = GangPreemptAction(Arguments({"maxDomains": value}))
    assert action.max_domains == 8
    assert "maxDomains" in caplog.text


def test_unreadable_allow_whole_bundle_keeps_the_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        action = GangPreemptAction(Arguments({"allowWholeBundle": "maybe"}))
    assert action.allow_whole_bundle is True
    assert "allowWholeBundle" in caplog.text


def test_an_unreadable_argument_in_a_scenario_runs_with_the_default(
        caplog: pytest.LogCaptureFixture) -> None:
    body = _scenario(allow_whole=True)
    body["config"]["configurations"] = [{"name": "gangpreempt",
                                        "arguments": {"maxDomains": "many"}}]
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        run_document(yaml.safe_dump(body))
    assert "argument 'maxDomains' = 'many' is not an integer; using 8" in caplog.text


def test_pick_domains_caps_and_dedups() -> None:
    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 2) == ["d1", "d2"]


def test_pick_domains_falls_back() -> None:
    assert pick_domains([], 8, CLUSTER_DOMAIN) == [CLUSTER_DOMAIN]
    assert pick_domains([], 8) == []


def two_racks(topology: dict[str, Any] | None, *, plugin: bool = True) -> dict[str, Any]:
    """Two racks of two one-CPU nodes (row over both), every node held by a low-priority
    job of minMember 0; a two-task high-priority job waits."""
    member = lambda kind, name: {"type": kind, "selector": {"exactMatch": {"name": name}}}  # noqa: E731
    preemptor: dict[str, Any] = {"name": "train", "namespace": "ns", "queue": "q1",
                                 "minMember": 2, "phase": "Inqueue",
                                 "priorityClassName": "high"}
    if topology is not None:
        preemptor["networkTopology"] = topology
    plugins = [{"name": "priority"}, {"name": "gang"}]
    if plugin:
        plugins.append({"name": "network-topology-aware"})
    nodes = ["a1", "a2", "b1", "b2"]
    return {
        "version": 1, "name": "gangpreempt within hypernodes",
        "config": {"actions": "gangpreempt", "tiers": [{"plugins": plugins}]},
        "priorityClasses": [{"name": "high", "value": 100}, {"name": "low", "value": 10}],
        "queues": [{"name": "q1"}],
        "nodes": [{"name": n, "allocatable": {"cpu": 1, "pods": 10}} for n in nodes],
        "hyperNodes": [
            {"name": "rack-a", "tier": 1, "members": [member("Node", "a1"), member("Node", "a2")]},
            {"name": "rack-b", "tier": 1, "members": [member("Node", "b1"), member("Node", "b2")]},
            {"name": "row", "tier": 2, "members": [member("HyperNode", "rack-a"),
                                                   member("HyperNode", "rack-b")]}],
        # Victim jobs low-1..4 on a1, b1, a2, b2: the gang actions take the last in job
        # order first (low-4, low-3), one in each rack.
        "jobs": [preemptor] + [
            {"name": f"low-{i}", "namespace": "ns", "queue": "q1", "minMember": 0,
             "phase": "Running", "priorityClassName": "low"} for i in range(1, 5)],
        "tasks": [{"name": f"t{i}", "namespace": "ns", "job": "train", "requests": {"cpu": 1}}
                  for i in range(2)] + [
            {"name": f"v-{n}", "namespace": "ns", "job": f"low-{i}", "node": n,
             "phase": "Running", "requests": {"cpu": 1}}
            for i, n in enumerate(("a1", "b1", "a2", "b2"), start=1)],
    }


def open_two_racks(topology: dict[str, Any] | None, *, plugin: bool = True) -> Session:
    parsed = parse_scenario(two_racks(topology, plugin=plugin), source="<test>")
    return Session.open(parsed.build_cache(), parsed.configuration, registry=_registry)


def test_without_hyper_nodes_the_cluster_is_the_only_domain() -> None:
    ssn = open_two_racks(None, plugin=False)
    job = ssn.jobs["ns/train"]
    assert candidate_domains(ssn, job, 1) == candidate_domains(ssn, job, 8) == [CLUSTER_DOMAIN]


def test_a_job_without_a_topology_scans_the_cluster() -> None:
    ssn = open_two_racks(None)
    assert candidate_domains(ssn, ssn.jobs["ns/train"], 8) == [CLUSTER_DOMAIN]


def test_a_job_whose_sub_job_is_hard_has_no_cluster_fallback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Volcano's GetCandidateDomains falls back on the whole cluster, when the gradients
    # give no hypernode (none eligible), only for a job that ContainsHardTopology()
    # says is not hard, and that counts its sub-jobs' topologies too.
    document = two_racks(None)
    document["jobs"][0]["subGroupPolicy"] = [{
        "name": "workers", "matchLabelKeys": ["role"], "subGroupSize": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}]
    for task in document["tasks"][:2]:
        task["labels"] = {"role": "worker"}
    parsed = parse_scenario(document, source="<test>")
    ssn = Session.open(parsed.build_cache(), parsed.configuration, registry=_registry)
    monkeypatch.setattr(ssn, "hyper_node_gradient", lambda *_: [])
    assert candidate_domains(ssn, ssn.jobs["ns/train"], 8) == []
    flat = open_two_racks(None)
    monkeypatch.setattr(flat, "hyper_node_gradient", lambda *_: [])
    assert candidate_domains(flat, flat.jobs["ns/train"], 8) == [CLUSTER_DOMAIN]


def test_a_hard_job_scans_its_eviction_gradient_highest_tier_first() -> None:
    ssn = open_two_racks({"mode": "hard", "highestTierAllowed": 2})
    job = ssn.jobs["ns/train"]
    assert candidate_domains(ssn, job, 8) == ["row", "rack-a", "rack-b"]
    assert candidate_domains(ssn, job, 2) == ["row", "rack-a"]
    tier_one = open_two_racks({"mode": "hard", "highestTierAllowed": 1})
    assert candidate_domains(tier_one, tier_one.jobs["ns/train"], 8) == ["rack-a", "rack-b"]


def test_a_hard_job_evicts_and_lands_within_one_hypernode() -> None:
    # Without a topology the victims are one per rack; confined to tier 1, both victims
    # and both tasks are in one rack: the first domain of the gradient, rack-a.
    flat = run_document(yaml.safe_dump(two_racks(None)))
    assert sorted(e.task for e in flat.cache.evictions) == ["ns/v-a2", "ns/v-b2"]
    outcome = run_document(yaml.safe_dump(two_racks({"mode": "hard", "highestTierAllowed": 1})))
    evicted = sorted(e.task for e in outcome.cache.evictions)
    assert evicted == ["ns/v-a1", "ns/v-a2"]
    placed = {outcome.task(f"ns/t{i}").node_name for i in range(2)}
    assert placed == {"a1", "a2"}


def test_a_hard_job_with_no_room_in_any_allowed_hypernode_evicts_nothing() -> None:
    doc = two_racks({"mode": "hard", "highestTierAllowed": 1})
    doc["tasks"].append({"name": "t2", "namespace": "ns", "job": "train", "requests": {"cpu": 1}})
    doc["jobs"][0]["minMember"] = 3
    outcome = run_document(yaml.safe_dump(doc))
    assert outcome.cache.evictions == []


# -- Volcano's selectDomainBundles cases, on the bundle selection itself ------------------


def _scenario(*, allow_whole: bool, victim_min: int = 1,
              victim_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    victim: dict[str, Any] = {"name": "victim", "namespace": "ns", "queue": "q1",
                              "minMember": victim_min, "phase": "Running",
                              "priorityClassName": "low"}
    if victim_annotations is not None:
        victim["annotations"] = victim_annotations
    return {
        "version": 1, "name": "select",
        "config": {"actions": "gangpreempt", "tiers": [{"plugins": [{"name": "gang"}]}],
                   "configurations": [{"name": "gangpreempt",
                                       "arguments": {"allowWholeBundle": allow_whole}}]},
        "priorityClasses": [{"name": "high", "value": 100}, {"name": "low", "value": 10}],
        "queues": [{"name": "q1"}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 1, "pods": 10}}],
        "jobs": [{"name": "preemptor", "namespace": "ns", "queue": "q1", "minMember": 1,
                  "phase": "Inqueue", "priorityClassName": "high"}, victim],
        "tasks": [
            {"name": "preemptor", "namespace": "ns", "job": "preemptor", "priority": 100,
             "requests": {"cpu": 1}},
            {"name": "victim", "namespace": "ns", "job": "victim", "node": "n1",
             "phase": "Running", "priority": 10, "requests": {"cpu": 1}},
        ],
    }


def _selected(document: dict[str, Any], allow_whole: bool) -> list[str]:
    scenario = parse_scenario(document)
    ssn = Session.open(scenario.build_cache(), scenario.configuration, registry=_registry)
    try:
        action = GangPreemptAction(Arguments({"allowWholeBundle": allow_whole}))
        job = ssn.jobs["ns/preemptor"]
        need = Resource.from_mapping({"cpu": 1})
        bundles = action.select_bundles(ssn, job, need, ssn.node_list)
        return [task.uid for bundle in bundles for task in bundle.tasks]
    finally:
        ssn.close()


def test_select_bundles_as_volcano_unit_tests() -> None:
    # RespectAllowWholeBundle: minMember 1 and one running task, so a whole bundle only.
    assert _selected(_scenario(allow_whole=False), False) == []
    assert _selected(_scenario(allow_whole=True), True) == ["ns/victim"]
    # RespectVictimJobPreemptable.
    refused = _scenario(allow_whole=True, victim_min=0,
                        victim_annotations={"volcano.sh/preemptable": "false"})
    assert _selected(refused, True) == []
    # AllowVictimJobWhenPreemptableUnset.
    assert _selected(_scenario(allow_whole=True, victim_min=0, victim_annotations={}),
                     True) == ["ns/victim"]


# -- behaviours of the whole action -------------------------------------------------------

CONFIG = """
config:
  actions: gangpreempt
  tiers:
    - plugins: [{name: gang}, {name: priority}]
priorityClasses:
  - {name: high, value: 100}
  - {name: mid, value: 50}
  - {name: low, value: 10}
queues: [{name: q1}, {name: q2}]
"""


def run(body: str) -> Outcome:
    return run_document(CONFIG + body)


def evicted(outcome: Outcome) -> list[str]:
    return sorted(e.task for e in outcome.cache.evictions)


def test_a_safe_victim_goes_before_breaking_a_gang() -> None:
    # a (minMember 1) has a task to spare; b (minMember 1) has none. b is the lower job
    # in reverse job order, but a's safe bundle ranks before any whole bundle.
    outcome = run("""
nodes: [{name: n1, allocatable: {cpu: 3, pods: 10}}]
jobs:
  - {name: p, namespace: ns, queue: q1, minMember: 1, phase: Inqueue, priorityClassName: high}
  - {name: a, namespace: ns, queue: q1, minMember: 1, phase: Running, priorityClassName: mid}
  - {name: b, namespace: ns, queue: q1, minMember: 1, phase: Running, priorityClassName: low}
tasks:
  - {name: p1, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: a1, namespace: ns, job: a, node: n1, phase: Running, priority: 5, requests: {cpu: 1}}
  - {name: a2, namespace: ns, job: a, node: n1, phase: Running, priority: 1, requests: {cpu: 1}}
  - {name: b1, namespace: ns, job: b, node: n1, phase: Running, requests: {cpu: 1}}
""")
    assert evicted(outcome) == ["ns/a2"]  # the lower task priority of a's tasks
    assert outcome.status("ns/p1") is TaskStatus.PIPELINED
    [on_pod] = outcome.events("ns/a2", "Evict")
    assert (on_pod.type, on_pod.message) == ("Warning", "Pod is evicted, because of gangpreempt")
    [on_group] = outcome.events("ns/a", "Evict")
    assert (on_group.type, on_group.message) == ("Normal", "gangpreempt")


def test_bundles_accumulate_until_every_pending_task_is_placed() -> None:
    # The preemptor gang needs 2 CPU on 1-CPU nodes: two victims, on two nodes.
    outcome = run("""
nodes:
  - {name: n1, allocatable: {cpu: 1, pods: 10}}
  - {name: n2, allocatable: {cpu: 1, pods: 10}}
jobs:
  - {name: p, namespace: ns, queue: q1, minMember: 2, phase: Inqueue, priorityClassName: high}
  - {name: a, namespace: ns, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: b, namespace: ns, queue: q1, minMember: 0, phase: Running, priorityClassName: mid}
tasks:
  - {name: p1, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: p2, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: a1, namespace: ns, job: a, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: b1, namespace: ns, job: b, node: n2, phase: Running, requests: {cpu: 1}}
""")
    assert evicted(outcome) == ["ns/a1", "ns/b1"]
    assert {outcome.task("ns/p1").node_name, outcome.task("ns/p2").node_name} == {"n1", "n2"}


def test_all_or_nothing_when_the_gang_cannot_be_placed() -> None:
    # Only one lower-priority victim: the 2-task gang cannot be placed, nothing is evicted.
    outcome = run("""
nodes:
  - {name: n1, allocatable: {cpu: 1, pods: 10}}
  - {name: n2, allocatable: {cpu: 1, pods: 10}}
jobs:
  - {name: p, namespace: ns, queue: q1, minMember: 2, phase: Inqueue, priorityClassName: mid}
  - {name: a, namespace: ns, queue: q1, minMember: 0, phase: Running, priorityClassName: low}
  - {name: h, namespace: ns, queue: q1, minMember: 0, phase: Running, priorityClassName: high}
tasks:
  - {name: p1, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: p2, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: a1, namespace: ns, job: a, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: h1, namespace: ns, job: h, node: n2, phase: Running, requests: {cpu: 1}}
""")
    assert evicted(outcome) == []
    assert outcome.status("ns/p1") is TaskStatus.PENDING
    assert outcome.status("ns/a1") is TaskStatus.RUNNING


def test_other_queues_and_equal_priorities_give_no_victims() -> None:
    outcome = run("""
nodes: [{name: n1, allocatable: {cpu: 2, pods: 10}}]
jobs:
  - {name: p, namespace: ns, queue: q1, minMember: 1, phase: Inqueue, priorityClassName: mid}
  - {name: same, namespace: ns, queue: q1, phase: Running, priorityClassName: mid}
  - {name: other, namespace: ns, queue: q2, phase: Running, priorityClassName: low}
tasks:
  - {name: p1, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: s1, namespace: ns, job: same, node: n1, phase: Running, requests: {cpu: 1}}
  - {name: o1, namespace: ns, job: other, node: n1, phase: Running, requests: {cpu: 1}}
""")
    assert evicted(outcome) == []


def test_a_pending_pod_group_does_not_preempt() -> None:
    outcome = run("""
nodes: [{name: n1, allocatable: {cpu: 1, pods: 10}}]
jobs:
  - {name: p, namespace: ns, queue: q1, minMember: 1, phase: Pending, priorityClassName: high}
  - {name: a, namespace: ns, queue: q1, phase: Running, priorityClassName: low}
tasks:
  - {name: p1, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: a1, namespace: ns, job: a, node: n1, phase: Running, requests: {cpu: 1}}
""")
    assert evicted(outcome) == []


def test_job_bundles_respect_role_minimums() -> None:
    document = {
        "version": 1, "name": "roles",
        "config": {"actions": "", "tiers": [{"plugins": [{"name": "gang"}]}]},
        "queues": [{"name": "q1"}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "pods": 10}}],
        "jobs": [{"name": "j", "namespace": "ns", "queue": "q1", "minMember": 2,
                  "minTaskMember": {"ps": 1, "worker": 1}, "phase": "Running"}],
        "tasks": [{"name": n, "namespace": "ns", "job": "j", "role": r, "node": "n1",
                   "phase": "Running", "requests": {"cpu": 1}}
                  for n, r in (("ps0", "ps"), ("w0", "worker"), ("w1", "worker"))],
    }
    scenario = parse_scenario(document)
    ssn = Session.open(scenario.build_cache(), scenario.configuration, registry=_registry)
    try:
        job = ssn.jobs["ns/j"]
        bundles = job_bundles(job, job.tasks.values())
        by_kind = {b.kind: sorted(t.uid for t in b.tasks) for b in bundles}
        # One task over minMember: one worker may go; the ps (its role's last) and the
        # other worker break the gang.
        assert by_kind == {BundleKind.SAFE: ["ns/w0"], BundleKind.WHOLE: ["ns/ps0", "ns/w1"]}
    finally:
        ssn.close()


def test_the_first_bundle_goes_even_when_idle_alone_would_do() -> None:
    # Volcano's rule: victims are taken a bundle at a time *before* the room check, so
    # a starving job with enough idle still evicts the first ranked bundle.
    outcome = run("""
nodes: [{name: n1, allocatable: {cpu: 2, pods: 10}}]
jobs:
  - {name: p, namespace: ns, queue: q1, minMember: 1, phase: Inqueue, priorityClassName: high}
  - {name: a, namespace: ns, queue: q1, phase: Running, priorityClassName: low}
tasks:
  - {name: p1, namespace: ns, job: p, requests: {cpu: 1}}
  - {name: a1, namespace: ns, job: a, node: n1, phase: Running, requests: {cpu: 1}}
""")
    assert evicted(outcome) == ["ns/a1"]
    assert outcome.task("ns/p1").node_name == "n1"


# -- Volcano's bundle_test.go sub-job cases (CreateJobBundles) ----------------------------


def _sub_group_job(min_member: int, groups: dict[str, tuple[int, int]],
                   tasks: list[tuple[str, str, str, int]],
                   task_min: dict[str, int] | None = None) -> Any:
    """A running job whose policies are ``groups`` (policy -> (size, minSubGroups)) and
    whose tasks are (name, policy, sub-job value, priority); each task's role is its
    policy's name, as in Volcano's test (master / worker)."""
    from batchsched.api import JobInfo, PodGroup, TaskInfo
    from batchsched.api.sub_job import SubGroupPolicy

    policies = tuple(SubGroupPolicy(name, sub_group_size=size, min_sub_groups=minimum,
                                    match_label_keys=(f"{name}-id",))
                     for name, (size, minimum) in groups.items())
    pg = PodGroup("pg", "ns", min_member=min_member, sub_group_policies=policies,
                  min_task_member=dict(task_min or {}))
    job = JobInfo.from_podgroup(pg)
    for name, policy, value, priority in tasks:
        task = TaskInfo.create("ns", name, job.uid, Resource(1000, 0),
                               labels={f"{policy}-id": value}, role=policy, priority=priority)
        task.status = TaskStatus.RUNNING
        task.node_name = "n1"
        job.add_task(task)
    return job


def test_bundles_a_policy_s_spare_ready_sub_jobs_cap_the_safe_victims() -> None:
    job = _sub_group_job(4, {"worker": (2, 2)}, [
        ("t1a", "worker", "1", 100), ("t1b", "worker", "1", 101),
        ("t2a", "worker", "2", 102), ("t2b", "worker", "2", 103),
        ("t3a", "worker", "3", 104), ("t3b", "worker", "3", 105)])
    local = [job.tasks[f"ns/{n}"] for n in ("t1a", "t2a", "t3a")]
    safe, whole = job_bundles(job, local)
    assert (safe.kind, [t.name for t in safe.tasks]) == (BundleKind.SAFE, ["t1a"])
    assert (whole.kind, len(whole.tasks)) == (BundleKind.WHOLE, 2)


def test_bundles_role_and_sub_job_gates_compose() -> None:
    job = _sub_group_job(5, {"master": (1, 1), "worker": (2, 2)}, [
        ("m1", "master", "1", 0), ("m2", "master", "2", 10),
        ("w1a", "worker", "1", 1), ("w2a", "worker", "2", 11), ("w2b", "worker", "2", 12),
        ("w3a", "worker", "3", 13), ("w3b", "worker", "3", 14)], task_min={"worker": 5})
    safe, whole = job_bundles(job, [job.tasks["ns/m1"], job.tasks["ns/w1a"]])
    assert [t.name for t in safe.tasks] == ["m1"]
    assert [t.name for t in whole.tasks] == ["w1a"]


def test_bundles_an_already_broken_sub_job_stays_evictable() -> None:
    job = _sub_group_job(3, {"worker": (2, 2)}, [
        ("sj1a", "worker", "1", 1), ("sj2a", "worker", "2", 2), ("sj2b", "worker", "2", 3),
        ("sj3a", "worker", "3", 4), ("sj3b", "worker", "3", 5)])
    local = [job.tasks[f"ns/{n}"] for n in ("sj1a", "sj2a", "sj3a")]
    safe, whole = job_bundles(job, local)
    assert [t.name for t in safe.tasks] == ["sj1a"]
    assert sorted(t.name for t in whole.tasks) == ["sj2a", "sj3a"]
