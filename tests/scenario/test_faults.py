"""``faults.bindFailures``: a platform test makes the cache refuse binds, and reads which
binds stand, which failed, and where preemptors were nominated."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from batchsched.errors import ScenarioError
from batchsched.scenario import load_scenario, parse_scenario, run_scenario
from batchsched.scenario.compare import compare_decisions

GANG = """
version: 1
name: one bind of a gang refused
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs:
- {name: gang, minMember: MIN, phase: Inqueue}
tasks:
- {name: gang-0, job: gang, requests: {cpu: 1}}
- {name: gang-1, job: gang, requests: {cpu: 1}}
- {name: gang-2, job: gang, requests: {cpu: 1}}
faults:
  bindFailures: [default/gang-1]
"""


def decide(text: str) -> dict[str, object]:
    return run_scenario(parse_scenario(yaml.safe_load(text), source="t.yaml")).to_json()


def test_a_refused_bind_that_breaks_the_gang_takes_back_the_others() -> None:
    got = decide(GANG.replace("MIN", "3"))
    assert got["binds"] == {}
    assert got["bindFailures"] == ["default/gang-1"]
    assert any(e["reason"] == "FailedScheduling" and e["object"] == "default/gang-1"
               and e["message"].startswith("failed to bind to node ")
               for e in got["events"])  # type: ignore[union-attr]
    assert not compare_decisions({"binds": {}, "bindFailures": ["default/gang-1"]}, got)


def test_a_refused_bind_leaves_the_others_when_the_gang_still_holds() -> None:
    got = decide(GANG.replace("MIN", "1"))
    assert got["binds"] == {"default/gang-0": "n1", "default/gang-2": "n1"}
    assert got["bindFailures"] == ["default/gang-1"]


def test_a_refused_bind_that_leaves_a_role_short_takes_back_the_others() -> None:
    """minMember holds (two workers bound) but the master's role minimum does not:
    gang's readiness fails, so the workers are taken back (they stayed bound)."""
    text = GANG.replace("{name: gang, minMember: MIN, phase: Inqueue}",
                        "{name: gang, minMember: 2, phase: Inqueue, "
                        "minTaskMember: {master: 1, worker: 1}}")
    text = text.replace("- {name: gang-0, job: gang,", "- {name: gang-0, job: gang, role: worker,")
    text = text.replace("- {name: gang-1, job: gang,", "- {name: gang-1, job: gang, role: worker,")
    text = text.replace("- {name: gang-2, job: gang,", "- {name: gang-2, job: gang, role: master,")
    got = decide(text.replace("bindFailures: [default/gang-1]", "bindFailures: [default/gang-2]"))
    assert got["binds"] == {}
    assert got["bindFailures"] == ["default/gang-2"]


def test_a_refused_bind_that_leaves_a_sub_group_short_takes_back_the_others() -> None:
    """minMember holds (three bound) but the policy's two sub-groups of two do not:
    gang's readiness fails, so the others are taken back (they stayed bound)."""
    text = """
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs:
- name: g
  minMember: 2
  phase: Inqueue
  subGroupPolicy:
  - {name: w, matchLabelKeys: [part], subGroupSize: 2, minSubGroups: 2}
tasks:
- {name: g-0, job: g, labels: {part: "0"}, requests: {cpu: 1}}
- {name: g-1, job: g, labels: {part: "0"}, requests: {cpu: 1}}
- {name: g-2, job: g, labels: {part: "1"}, requests: {cpu: 1}}
- {name: g-3, job: g, labels: {part: "1"}, requests: {cpu: 1}}
faults: {bindFailures: [default/g-1]}
"""
    got = decide(text)
    assert got["binds"] == {} and got["bindFailures"] == ["default/g-1"]


#: One high-priority task preempts a low-priority one on a full node.
PREEMPTION_FILE = Path(__file__).parent / "data" / "one-preemption.yaml"


def test_a_preemptor_is_nominated_to_the_node_of_its_victims() -> None:
    scenario = load_scenario(PREEMPTION_FILE)
    got = run_scenario(scenario).to_json()
    assert got["nominated"] == {"default/high-0": "n1"}
    assert not compare_decisions(scenario.expect, got)
    assert compare_decisions({"nominated": {}}, got) == [
        "nominated: expected {}, got {'default/high-0': 'n1'}"]


@pytest.mark.parametrize(("faults", "message"), [
    ({"bindFailures": ["default/nobody"]}, r"faults\.bindFailures\[0\]: no task 'default/nobody'"),
    ({"bindFailures": [3]}, r"faults\.bindFailures\[0\]: must be a task id"),
    ({"bindFailures": ["gang-1"]}, r"no task 'gang-1' \(a task id is namespace/name\)"),
    ({"bindFalures": []}, "faults"),
])
def test_a_fault_naming_nothing_is_a_clear_error(faults: dict[str, object], message: str) -> None:
    document = yaml.safe_load(GANG.replace("MIN", "3"))
    document["faults"] = faults
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(document, source="t.yaml")


def test_the_memory_cache_keeps_the_nominated_node() -> None:
    from batchsched.scheduler import Scheduler

    scenario = load_scenario(PREEMPTION_FILE)
    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert cache.nominations == {"default/high-0": "n1"}


def gang_with_policy(policy: str) -> str:
    """The gang of minMember 3 annotated with a bind-failure policy."""
    return GANG.replace("MIN", "3").replace(
        "- {name: gang, minMember: 3, phase: Inqueue}",
        "- {name: gang, minMember: 3, phase: Inqueue,\n"
        f"   annotations: {{batchsched.io/bind-failure-policy: {policy}}}}}")


def test_a_job_may_keep_its_binds_after_a_failed_one() -> None:
    got = decide(gang_with_policy("KeepBound"))
    assert got["binds"] == {"default/gang-0": "n1", "default/gang-2": "n1"}
    assert got["bindFailures"] == ["default/gang-1"]


def test_an_unknown_bind_failure_policy_is_reported_and_the_default_applies() -> None:
    got = decide(gang_with_policy("Sometimes"))
    assert got["binds"] == {}
    assert any(e["reason"] == "InvalidBindFailurePolicy" and "'Sometimes'" in e["message"]
               for e in got["events"])  # type: ignore[union-attr]


def test_no_nomination_when_the_eviction_was_refused() -> None:
    """Nothing is being freed on the node: a nomination would keep its room for a
    preemptor that could then never preempt again."""
    from batchsched.scheduler import Scheduler

    scenario = load_scenario(PREEMPTION_FILE)
    cache = scenario.build_cache()
    cache.evict = lambda task, reason: False  # type: ignore[method-assign]
    Scheduler(cache, scenario.configuration).run_once()
    assert cache.nominations == {}


NO_POD_SLOT = """
version: 1
name: backfill onto a node whose only pod slot is taken
config:
  actions: "backfill"
  tiers:
  - plugins: [{name: gang}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}
jobs:
- {name: pg0, namespace: ns, minMember: 1, phase: Running}
- {name: pg1, namespace: ns, minMember: 1, phase: Inqueue}
tasks:
- {name: r0, namespace: ns, job: pg0, phase: Running, node: n1, requests: {cpu: 1}}
- {name: p1, namespace: ns, job: pg1, phase: Pending}
"""


def test_a_bind_finds_the_room_the_cache_has_as_volcano_s_add_bind_task_does() -> None:
    """Backfill places a best-effort pod by its predicates alone; the cache's node then
    refuses the Binding pod it has no pod slot for (Volcano's AddBindTask -> AddTask),
    in ``batchsched run`` as in a MemoryCache."""
    decisions = decide(NO_POD_SLOT)
    assert decisions["binds"] == {}
    assert "ns/p1" in decisions["bindFailures"]
    scenario = parse_scenario(yaml.safe_load(NO_POD_SLOT), source="t.yaml")
    from batchsched import Scheduler

    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert cache.binds == []
