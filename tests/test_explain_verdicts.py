"""Verdicts that agree with what the session decided: pipelined jobs, the last answer
of each plugin, queue answers given after the job's turn, jobs not admitted, bind
failures, placements undone, tasks explained on their own, budgets kept by suggested
evictions."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import yaml

from batchsched.cli import main
from batchsched.explain import counterfactuals, explain, render
from batchsched.scenario import Scenario, load_scenario, parse_scenario, run_scenario
from batchsched.simulation.predict import predict_start

CORPUS = Path(__file__).parent / "conformance" / "volcano" / "actions"

BASE = """
version: 1
name: verdicts
now: 1000
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def scenario_of(text: str) -> Scenario:
    return parse_scenario(yaml.safe_load(BASE + text), source="test.yaml")


WAITING_ON_A_DELETING_POD = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: old, minMember: 1, phase: Running}
- {name: p, minMember: 1, phase: Inqueue}
tasks:
- {name: old-0, job: old, node: n1, phase: Running, deleting: true, requests: {cpu: 4}}
- {name: p-0, job: p, requests: {cpu: 4}}
"""


def test_a_pipelined_job_is_explained_as_waiting_for_room_being_freed() -> None:
    scenario = scenario_of(WAITING_ON_A_DELETING_POD)
    report = explain(scenario, job="default/p")
    assert report["verdict"].startswith("pipelined: 1 task(s) wait on n1 for room being freed")
    assert report["decidedBy"] == ["pipelined"]
    task = explain(scenario, task="default/p-0")
    assert task["verdict"] == "pipelined on n1: it waits for room being freed there"
    assert task["jobVerdict"] == report["verdict"]


def test_a_preemptor_s_verdict_follows_the_last_answers() -> None:
    """proportion said no at allocate, then yes when preempt placed the task."""
    path = CORPUS / "preempt-04-preempt-low-priority-job-in-same-queue.yaml"
    report = explain(load_scenario(path), job="c1/pg2")
    assert report["verdict"].startswith("pipelined")
    assert any(p["answer"] == "no" for p in report["plugins"])  # the history stays


def test_a_queue_full_after_the_job_s_turn_does_not_explain_it() -> None:
    scenario = scenario_of("""
priorityClasses: [{name: high, value: 1000}]
queues: [{name: default, capability: {cpu: 4, memory: 8Gi, pods: 1}}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: old, minMember: 1, phase: Running}
- {name: z, minMember: 1, phase: Inqueue, priorityClassName: high}
- {name: p, minMember: 1, phase: Inqueue}
tasks:
- {name: old-0, job: old, node: n1, phase: Running, deleting: true, requests: {cpu: 4}}
- {name: z-0, job: z, requests: {cpu: 1}, nodeSelector: {gpu: "yes"}}
- {name: p-0, job: p, requests: {cpu: 4}}
""")
    report = explain(scenario, job="default/z")
    assert report["verdict"] == "no node fits: node(s) didn't match Pod's node affinity/selector"
    assert report["decidedBy"] == ["predicates"]


def test_a_job_refused_admission_is_weighed_by_its_min_resources() -> None:
    scenario = scenario_of("""
queues: [{name: q1, capability: {cpu: 2}}]
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs:
- {name: a, queue: q1, minMember: 2, minResources: {cpu: 6}}
tasks:
- {name: a-0, job: a, requests: {cpu: 1}}
- {name: a-1, job: a, requests: {cpu: 1}}
""")
    report = explain(scenario, job="default/a")
    assert report["verdict"] == ("held back by proportion: queue q1's capability (proportion) "
                                 "is short by cpu 4")
    capability = next(q for q in report["quota"] if q["ceiling"] == "capability")
    assert capability["request"] == {"cpu": "6"} and capability["gates"]
    changes = counterfactuals(scenario, job="default/a", quota=report["quota"])
    assert {"kind": "quota", "queue": "q1", "field": "capability", "by": {"cpu": "4"},
            "text": "queue q1's capability raised by cpu 4"} in changes
    smaller = next(c for c in changes if c["kind"] == "smallerRequests")
    assert smaller["factor"] <= 2 / 6  # minResources shrinks with the requests


def test_a_bind_failure_is_the_verdict() -> None:
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: a, minMember: 1, phase: Inqueue}
tasks:
- {name: a-0, job: a, requests: {cpu: 1}}
faults:
  bindFailures: [default/a-0]
""")
    report = explain(scenario, job="default/a")
    assert report["verdict"] == ("bind failed: failed to bind to node n1: the cache refused "
                                 "the bind")
    assert report["decidedBy"] == ["bind"]
    assert report["tasks"][0]["status"] == "Pending"


def test_a_scheduling_gated_pod_is_explained_by_its_gates() -> None:
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: a, minMember: 1, phase: Inqueue}
tasks:
- {name: a-0, job: a, requests: {cpu: 1}, schedulingGates: [example.com/quota]}
""")
    task = explain(scenario, task="default/a-0")
    assert task["verdict"].startswith("pending: waiting for scheduling gates: "
                                      "[example.com/quota]")
    # The job too: its only waiting task is gated (neither the gang nor the
    # configuration holds it back).
    report = explain(scenario, job="default/a")
    assert report["verdict"].startswith("waiting for scheduling gates: [example.com/quota]")
    assert report["decidedBy"] == ["schedulingGates"]


def test_a_placement_the_gang_undid_says_where_the_task_could_go() -> None:
    report = explain(load_scenario("examples/quickstart.yaml"), job="team/large")
    first = next(t for t in report["tasks"] if t["task"] == "team/large-0")
    assert first["reason"] == ("could go to n1, once the gang's minimum is satisfied: the "
                               "placement was undone")


def test_a_task_is_explained_by_its_own_outcome_and_a_started_gang_says_so() -> None:
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: b, minMember: 2, phase: Inqueue}
tasks:
- {name: b-0, job: b, requests: {cpu: 1}}
- {name: b-1, job: b, requests: {cpu: 1}}
- {name: b-2, job: b, requests: {cpu: 1}, nodeSelector: {gpu: "yes"}}
""")
    report = explain(scenario, task="default/b-0")
    assert report["verdict"] == "placed on n1 (Binding)"
    assert report["jobVerdict"] == ("started (2 task(s) placed, minMember 2); 1 more wait: "
                                    "no node fits: node(s) didn't match Pod's node "
                                    "affinity/selector")
    text = render(report).splitlines()
    assert text[:2] == ["task default/b-0: placed on n1 (Binding)",
                        f"job default/b: {report['jobVerdict']}"]


def test_a_job_whose_pods_are_all_being_deleted_has_nothing_to_place() -> None:
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: eval, minMember: 1, phase: Running}
tasks:
- {name: eval-0, job: eval, node: n1, phase: Running, deleting: true, requests: {cpu: 1}}
""")
    report = explain(scenario, job="default/eval")
    assert report["verdict"] == "nothing to place: no task is pending (1 Releasing)"
    assert report["decidedBy"] == []


def test_a_prediction_does_not_wait_for_pods_being_deleted() -> None:
    prediction = predict_start(scenario_of(WAITING_ON_A_DELETING_POD), "default/p")
    assert prediction["text"] == "now" and prediction["unknownRunTimes"] == 0


def test_suggested_evictions_keep_a_disruption_budget() -> None:
    scenario = parse_scenario(yaml.safe_load("""
version: 1
name: pdb victims
now: 1000
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: pdb}]
  - plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]
priorityClasses: [{name: low, value: 10}, {name: high, value: 1000}]
nodes:
- {name: n1, allocatable: {cpu: 3, memory: 8Gi, pods: 10}}
jobs:
- {name: web, minMember: 1, phase: Running, priorityClassName: low}
- {name: urgent, minMember: 1, phase: Inqueue, priorityClassName: high}
tasks:
- {name: web-0, job: web, node: n1, phase: Running, requests: {cpu: 1}, labels: {app: web},
   priorityClassName: low}
- {name: web-1, job: web, node: n1, phase: Running, requests: {cpu: 1}, labels: {app: web},
   priorityClassName: low}
- {name: web-2, job: web, node: n1, phase: Running, requests: {cpu: 1}, labels: {app: web},
   priorityClassName: low}
- {name: urgent-0, job: urgent, requests: {cpu: 2}, priorityClassName: high}
pdbs:
- {name: web-pdb, selector: {app: web}, maxUnavailable: 1}
"""), source="test.yaml")
    changes = counterfactuals(scenario, job="default/urgent")
    assert all(c["kind"] != "victims" for c in changes)  # two evictions, one allowed
    assert not run_scenario(scenario).binds


def test_explain_prints_the_loader_s_warnings_and_takes_a_configuration(
        tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(BASE + """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: a, minMember: 1, phase: Inqueue, priorityClassName: nowhere}
tasks:
- {name: a-0, job: a, requests: {cpu: 1}}
""")
    config = tmp_path / "conf.yaml"
    config.write_text('actions: "enqueue"\ntiers:\n- plugins: [{name: gang}]\n')
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["explain", str(path), "--job", "default/a", "--config", str(config)]) == 0
    assert "warning" in err.getvalue() and "nowhere" in err.getvalue()
    assert "not tried in this session" in out.getvalue()  # enqueue only: nothing placed


def test_feasible_nodes_of_an_allocation_are_those_it_fits_now() -> None:
    """n2's only room belongs to a pod being deleted: an allocation does not weigh it."""
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n3, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: old, minMember: 1, phase: Running}
- {name: p, minMember: 1, phase: Inqueue}
tasks:
- {name: old-0, job: old, node: n2, phase: Running, deleting: true, requests: {cpu: 4}}
- {name: p-0, job: p, requests: {cpu: 4}}
""")
    (task,) = explain(scenario, job="default/p")["tasks"]
    placement = task["placement"]
    assert placement["kind"] == "allocate" and placement["feasibleNodes"] == 2
    assert {s["node"] for s in [placement["chosen"], *placement["runnersUp"]]} == {"n1", "n3"}


def test_a_job_of_a_missing_queue_is_reported_whole() -> None:
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: a, queue: missing, minMember: 1}
tasks:
- {name: a-0, job: a, requests: {cpu: 1}}
""")
    report = explain(scenario, task="default/a-0")
    assert report["jobVerdict"] == ("the job is not in the session: its queue missing does "
                                    "not exist")
    assert report["queue"] == "missing" and report["minMember"] == 1
    assert report["tasks"] == [{"task": "default/a-0", "status": "Pending"}]
    assert predict_start(scenario, "default/a")["text"] == \
        "never, while its queue missing does not exist"


def test_a_parent_queue_s_capability_is_named_when_it_refuses() -> None:
    scenario = parse_scenario(yaml.safe_load("""
version: 1
name: parent capability refuses enqueue
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins:
    - name: gang
    - name: capacity
      enableHierarchy: true
    - name: predicates
queues:
- {name: root}
- {name: eng, capability: {cpu: 4, memory: 8Gi}}
- {name: dev, parent: eng}
- {name: prod, parent: eng}
nodes:
- {name: n1, allocatable: {cpu: 16, memory: 32Gi, pods: 100}}
jobs:
- {name: run, queue: prod, minMember: 1, phase: Running, minResources: {cpu: 3, memory: 1Gi}}
- {name: want, queue: dev, minMember: 1, minResources: {cpu: 2, memory: 1Gi}}
tasks:
- {name: r1, job: run, node: n1, phase: Running, requests: {cpu: 3, memory: 1Gi}}
- {name: w1, job: want, requests: {cpu: 2, memory: 1Gi}}
"""), source="test.yaml")
    report = explain(scenario, job="default/want")
    assert report["verdict"] == ("held back by capacity: queue eng's capability (capacity) is "
                                 "short by cpu 1")
    assert [(q["queue"], bool(q["short"])) for q in report["quota"]] == [
        ("eng", True), ("dev", False)]  # the root's unbounded capability is not shown
    changes = counterfactuals(scenario, job="default/want", quota=report["quota"])
    assert any(c["kind"] == "quota" and c["queue"] == "eng" for c in changes)


def test_admission_weighs_what_the_queue_admitted_and_what_is_elastic() -> None:
    """Volcano's enqueue check: minResources + allocated + inqueue - elastic."""
    scenario = parse_scenario(yaml.safe_load("""
version: 1
name: enqueue refused on cpu
config:
  actions: "enqueue"
  tiers:
  - plugins: [{name: gang}, {name: capacity}, {name: predicates}]
queues:
- {name: q1, capability: {cpu: 4, memory: 4Gi}}
nodes:
- {name: n1, allocatable: {cpu: 16, memory: 32Gi, pods: 100}}
jobs:
- {name: run, queue: q1, minMember: 1, phase: Running}
- {name: adm, queue: q1, minMember: 1, phase: Inqueue, minResources: {cpu: 3}}
- {name: want, queue: q1, minMember: 1, minResources: {cpu: 2, memory: 2Gi}}
tasks:
- {name: r1, job: run, node: n1, phase: Running, requests: {cpu: 1, memory: 3Gi}}
- {name: a1, job: adm, requests: {cpu: 3}}
- {name: w1, job: want, requests: {cpu: 2, memory: 2Gi}}
"""), source="test.yaml")
    report = explain(scenario, job="default/want")
    assert report["verdict"] == ("held back by capacity: queue q1's capability (capacity) is "
                                 "short by cpu 1")


def test_a_pod_group_without_pods_refused_at_enqueue_says_who_refused() -> None:
    """Volcano's job controller makes a job's pods only once its group leaves Pending:
    the refusal at enqueue is the answer to "why is it pending"."""
    scenario = scenario_of("""
queues: [{name: q1, capability: {cpu: 2}}]
nodes: [{name: n1, allocatable: {cpu: 8, memory: 16Gi, pods: 10}}]
jobs: [{name: vcjob, queue: q1, minMember: 2, minResources: {cpu: 4}}]
tasks: []
""")
    report = explain(scenario, job="default/vcjob")
    assert report["verdict"] == ("held back by proportion: queue q1's capability (proportion) "
                                 "is short by cpu 2")
    assert report["decidedBy"] == ["proportion"]
    admitted = explain(scenario_of("""
nodes: [{name: n1, allocatable: {cpu: 8, memory: 16Gi, pods: 10}}]
jobs: [{name: vcjob, minMember: 0}]
tasks: []
"""), job="default/vcjob")
    assert admitted["verdict"] == "nothing to place: the pod group has no pods (yet)"


def test_best_effort_tasks_without_backfill_are_not_blamed_on_the_gang() -> None:
    report = explain(scenario_of("""
nodes: [{name: n1, allocatable: {cpu: 8, memory: 16Gi, pods: 10}}]
jobs: [{name: be, minMember: 0, phase: Inqueue}]
tasks: [{name: be-0, job: be, requests: {}}]
"""), job="default/be")
    assert report["verdict"] == (
        "no gang to wait for (minMember 0), none placed; 1 wait: not tried: tasks asking "
        "for nothing (best-effort) are backfill's to place, and the configuration runs no "
        "backfill")
    assert report["decidedBy"] == ["actions"]


def test_a_fractional_shortfall_is_not_written_as_zero() -> None:
    """Proportion's deserved share is fractional: the limit and the shortfall show in
    thousandths (rounded up), never as 0, and the limit names what it is short of. The
    pods count is no shortfall: proportion's allocatable check (Volcano's
    LessEqualWithDimension) ignores it."""
    path = CORPUS / "reclaim-03-no-reclaim-when-preemption-policy-never.yaml"
    report = explain(load_scenario(path), job="c1/pg2")
    deserved = next(q for q in report["quota"] if q["ceiling"] == "deserved")
    assert deserved["limit"]["pods"] == "667m" and "pods" not in deserved["short"]
    assert deserved["short"]["cpu"] == "334m"
    assert all(value != "0" for value in deserved["short"].values())
    assert set(deserved["short"]) <= set(deserved["limit"])


AUDITED = Path(__file__).parent / "data" / "explain"


def test_counterfactuals_fail_the_binds_the_scenario_fails() -> None:
    """A change is kept only when a session decides as ``run`` would, faults included:
    a bind the scenario refuses stays refused, whatever the requests."""
    from batchsched.explain import counterfactuals

    scenario = load_scenario(AUDITED / "faults.yaml")
    assert counterfactuals(scenario, job="default/j") == []


def test_more_nodes_are_never_like_a_cordoned_one() -> None:
    from batchsched.explain import counterfactuals

    found = counterfactuals(load_scenario(AUDITED / "cordon.yaml"), job="default/w")
    assert [(c["kind"], c.get("like")) for c in found if c["kind"] == "moreNodes"] == [
        ("moreNodes", "n2")]


def test_a_prediction_keeps_the_scheduler_s_node_shard() -> None:
    """Hard sharding to n1: w waits for r-0 to end there (1 h), n2 is not its."""
    assert predict_start(load_scenario(AUDITED / "shard.yaml"), "default/w")["text"] == \
        "in 60.0 min"


def test_a_prediction_orders_jobs_by_their_own_creation_times() -> None:
    """A job created at 0 stays first in job order in the replay, as in ``run``."""
    path = Path(__file__).parent.parent / "examples" / "ascend-vnpus.yaml"
    prediction = predict_start(load_scenario(path), "default/trainer")
    assert prediction["waitSeconds"] == 0


def test_a_job_nothing_of_which_waits_has_started() -> None:
    prediction = predict_start(load_scenario(AUDITED / "done.yaml"), "default/fin")
    assert prediction["waitSeconds"] == 0
    assert prediction["text"] == "already started: nothing of it waits"


def test_a_task_s_prediction_is_its_own_start() -> None:
    """w (minMember 1) starts now on n2 with w-0; w-1 waits for r-0 to leave n1."""
    scenario = load_scenario(AUDITED / "task.yaml")
    assert predict_start(scenario, "default/w")["text"] == "now"
    assert predict_start(scenario, "default/w", task="default/w-1")["text"] == "in 60.0 min"


DATA = Path(__file__).parent / "data" / "explain"

def beside_a_deleting_pod(held: str, *requests: str) -> Scenario:
    """n1 (4 cpu) holds a pod being deleted that holds ``held`` cpu; job j (minMember
    1) has a task per request."""
    tasks = "".join(f"- {{name: j-{i}, job: j, requests: {{cpu: {cpu}}}}}\n"
                    for i, cpu in enumerate(requests))
    return scenario_of(f"""
nodes:
- {{name: n1, allocatable: {{cpu: 4, memory: 8Gi, pods: 10}}}}
jobs:
- {{name: old, minMember: 1, phase: Running}}
- {{name: j, minMember: 1, phase: Inqueue}}
tasks:
- {{name: old-0, job: old, node: n1, phase: Running, deleting: true, requests: {{cpu: {held}}}}}
""" + tasks)


def test_a_job_with_a_pipelined_task_is_started_not_placed() -> None:
    scenario = beside_a_deleting_pod("2", "1500m", "1500m")
    decisions = run_scenario(scenario)
    assert decisions.binds == {"default/j-0": "n1"}
    assert decisions.pipelined == {"default/j": {"default/j-1": "n1"}}
    verdict = explain(scenario, job="default/j")["verdict"]
    assert verdict.startswith("started (1 task(s) placed, minMember 1); 1 more wait: pipelined")


def test_a_counterfactual_that_leaves_the_task_pipelined_is_not_proposed() -> None:
    # Smaller requests that only pipeline the task (the room is being freed) start
    # nothing now: not proposed for the task, nor for the job.
    scenario = beside_a_deleting_pod("3", "5")
    for proposals in (counterfactuals(scenario, task="default/j-0"),
                      counterfactuals(scenario, job="default/j")):
        smaller = next(p for p in proposals if p["kind"] == "smallerRequests")
        assert smaller["factor"] == 0.1


def test_a_capability_the_other_queues_guarantees_lower_says_so() -> None:
    # q1 sets capability 10, but q2's guarantee leaves it 2 of the 8 cpus: raising q1's
    # capability would change nothing.
    scenario = scenario_of("""
queues:
- {name: q1, capability: {cpu: 10}}
- {name: q2, guarantee: {cpu: 6}}
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs:
- {name: j, queue: q1, minMember: 1, minResources: {cpu: 3}}
tasks:
- {name: j-0, job: j, requests: {cpu: 3}}
""")
    report = explain(scenario, job="default/j")
    assert report["verdict"] == (
        "held back by proportion: queue q1's capability (proportion: the cluster less the "
        "other queues' guarantees) is short by cpu 1")
    capability = next(q for q in report["quota"] if q["ceiling"] == "capability")
    assert capability["boundBy"] == "the cluster less the other queues' guarantees"


def test_more_nodes_keep_the_numa_topology_of_their_template() -> None:
    # A copy of n1 without its topology would take the task; one like n1 does not.
    scenario = load_scenario(DATA / "numa-more-nodes.yaml")
    proposals = counterfactuals(scenario, job="default/j")
    assert "moreNodes" not in {p["kind"] for p in proposals}


def test_an_added_node_is_a_host_of_its_own_whatever_its_template_s_hostname() -> None:
    # n1.local's hostname label is n1: a node like it is not host n1, and the task
    # pinned to host n1 gains nothing from it.
    scenario = load_scenario(DATA / "hostname-not-the-node-name.yaml")
    proposals = counterfactuals(scenario, job="default/j")
    assert "moreNodes" not in {p["kind"] for p in proposals}


# -- verdicts and changes checked against `run` after an audit ------------------------------

HELD_BY_A_PIPELINED_GANG = """
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
jobs: [{name: other, minMember: 1, phase: Running}, {name: g, minMember: 2, phase: Inqueue}]
tasks:
- {name: x, job: other, node: n1, phase: Running, requests: {cpu: 2}}
- {name: r, job: other, node: n2, phase: Running, deleting: true, requests: {cpu: 2}}
- {name: g-0, job: g, requests: {cpu: 2}}
- {name: g-1, job: g, requests: {cpu: 2}}
"""


def test_a_task_its_pipelined_gang_holds_is_not_started_nor_started_by_a_change() -> None:
    """Allocated in a statement kept pipelined (neither committed nor discarded), the
    task is not bound: no verdict says it is placed, and a change that leaves it so
    (one more node: the gang stays pipelined on the deleting pod's) is not offered."""
    with_node = scenario_of(HELD_BY_A_PIPELINED_GANG.replace(
        "nodes:\n", "nodes:\n- {name: n3, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}\n"))
    decisions = run_scenario(with_node)
    assert decisions.binds == {}
    held = [uid for uid in ("default/g-0", "default/g-1")
            if explain(with_node, task=uid)["verdict"].startswith("held on")]
    assert len(held) == 1
    scenario = scenario_of(HELD_BY_A_PIPELINED_GANG)
    assert [(change["kind"], change["count"])
            for change in counterfactuals(scenario, task="default/g-0")] == [("moreNodes", 2)]


def test_a_task_whose_pipelined_placement_was_undone_says_so() -> None:
    report = explain(scenario_of(HELD_BY_A_PIPELINED_GANG), task="default/g-0")
    assert report["verdict"] == ("pending: could go to n2, once room is freed there and the "
                                 "gang's minimum is satisfied: the placement was undone")


def test_smaller_requests_are_checked_as_a_scenario_would_hold_them() -> None:
    """3 x 333.3m is what 1/10 of 3333m gives, but a scenario holds 334m: 1002m does not
    fit a node of 1 cpu, and no change of that kind is offered."""
    scenario = scenario_of("""
nodes: [{name: n1, allocatable: {cpu: 1, memory: 4Gi, pods: 10}}]
jobs: [{name: g, minMember: 3, phase: Inqueue}]
tasks:
- {name: g-0, job: g, requests: {cpu: 3333m}}
- {name: g-1, job: g, requests: {cpu: 3333m}}
- {name: g-2, job: g, requests: {cpu: 3333m}}
""")
    assert not any(change["kind"] == "smallerRequests"
                   for change in counterfactuals(scenario, job="default/g", max_nodes=0))


def test_a_job_of_min_member_0_whose_pods_were_evicted_has_nothing_placed() -> None:
    scenario = parse_scenario(yaml.safe_load("""
version: 1
name: evicted
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]
priorityClasses: [{name: low, value: 10}, {name: high, value: 1000}]
nodes: [{name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}]
jobs:
- {name: low, minMember: 0, phase: Running, priorityClassName: low}
- {name: high, minMember: 1, phase: Inqueue, priorityClassName: high}
tasks:
- {name: low-0, job: low, node: n1, phase: Running, requests: {cpu: 2}, priorityClassName: low}
- {name: high-0, job: high, requests: {cpu: 2}, priorityClassName: high}
"""), source="test.yaml")
    assert run_scenario(scenario).evicted == ["default/low-0"]
    report = explain(scenario, job="default/low")
    assert report["verdict"] == "nothing to place: no task is pending (1 Releasing)"


def test_a_placed_task_s_report_says_it_starts_whatever_its_job_waits_for() -> None:
    scenario = scenario_of("""
nodes: [{name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}]
jobs: [{name: j, minMember: 1, phase: Inqueue}]
tasks: [{name: j-0, job: j, requests: {cpu: 2}}, {name: j-1, job: j, requests: {cpu: 2}}]
""")
    report = explain(scenario, task="default/j-0")
    assert report["verdict"].startswith("placed on n1")
    report["counterfactuals"] = []
    assert "it starts in this session: nothing to change" in render(report)


def test_smaller_requests_scale_kube_s_non_zero_figures_too() -> None:
    """A task naming memory 0 carries its own non-zero figures: halved with it."""
    from batchsched.explain.counterfactuals import with_smaller_requests

    scenario = scenario_of("""
nodes: [{name: n1, allocatable: {cpu: 1, memory: 4Gi, pods: 10}}]
jobs: [{name: g, minMember: 1, phase: Inqueue}]
tasks: [{name: g-0, job: g, requests: {cpu: 1, memory: 0}}]
""")
    (task,) = with_smaller_requests(scenario, "default/g", 0.5).tasks
    assert task.resreq.milli_cpu == 500 and task.nonzero_request == (500, 0)


def test_tasks_beyond_the_pipelined_ones_are_not_hidden_by_the_pipelined_verdict() -> None:
    """p-1 waits on n1's room; p-2 is not placed: it will not start once that room is
    free, and the verdict says why."""
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, labels: {zone: a}}
jobs:
- {name: old, minMember: 1, phase: Running}
- {name: p, minMember: 1, phase: Inqueue}
tasks:
- {name: old-0, job: old, node: n1, phase: Running, deleting: true, requests: {cpu: 4}}
- {name: p-1, job: p, requests: {cpu: 4}}
- {name: p-2, job: p, requests: {cpu: 1}, nodeSelector: {zone: b}}
""")
    report = explain(scenario, job="default/p")
    assert report["verdict"].startswith("pipelined: 1 task(s) wait on n1")
    reason = next(t["reason"] for t in report["tasks"] if t["task"] == "default/p-2")
    assert report["verdict"].endswith(f"; 1 other task(s) are not placed: {reason}")


def test_a_pod_group_without_pods_is_nothing_to_place_whatever_gang_says() -> None:
    """Gang finds a group without pods invalid; the pods are the job controller's to
    make once the group is Inqueue: that, not the gang, is why nothing is placed."""
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: np, minMember: 2, minResources: {cpu: 2}}
""")
    report = explain(scenario, job="default/np")
    assert report["verdict"] == "nothing to place: the pod group has no pods (yet)"
    assert report["phase"] == {"before": "Pending", "after": "Inqueue"}


def test_a_job_refused_admission_is_weighed_as_enqueue_weighed_it() -> None:
    """Job a (Inqueue) is placed in the same session after enqueue refused b: the
    queue's figures when enqueue voted on b are allocated 0 + inqueue cpu 3, so b's
    cpu 2 is short by 1 against the capability of 4, not by 4 (a counted as reserved
    and as placed), and raising the capability by 1 is what lets it start."""
    scenario = scenario_of("""
queues:
- {name: qa, weight: 1, capability: {cpu: 4, memory: 16Gi}}
nodes:
- {name: n1, allocatable: {cpu: 16, memory: 64Gi, pods: 110}}
jobs:
- {name: a, queue: qa, minMember: 1, phase: Inqueue, minResources: {cpu: 3, memory: 1Gi}}
- {name: b, queue: qa, minMember: 1, minResources: {cpu: 2, memory: 1Gi}}
tasks:
- {name: a0, job: a, requests: {cpu: 3, memory: 1Gi}}
- {name: b0, job: b, requests: {cpu: 2, memory: 1Gi}}
""")
    report = explain(scenario, job="default/b")
    assert report["verdict"] == ("held back by proportion: queue qa's capability "
                                 "(proportion) is short by cpu 1")
    assert all("pods" not in line["short"] for line in report["quota"])
    raised = [c for c in counterfactuals(scenario, job="default/b", quota=report["quota"])
              if c["kind"] == "quota"]
    assert raised and raised[0]["text"] == "queue qa's capability raised by cpu 1"


def test_a_resource_the_queue_s_share_leaves_out_is_a_shortfall_as_proportion_reads_it() -> None:
    """No node has a GPU, so the queue's deserved share names none: proportion's test
    (LessEqualWithDimension) reads its GPU share as 0, and so do the quota lines."""
    scenario = scenario_of("""
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: w, minMember: 1, phase: Inqueue}
tasks:
- {name: w0, job: w, requests: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
""")
    report = explain(scenario, job="default/w")
    assert report["verdict"] == ("held back by proportion: queue default's deserved "
                                 "(proportion) is short by nvidia.com/gpu 1")


def test_a_configuration_that_places_nothing_is_not_blamed_on_the_gang() -> None:
    scenario = parse_scenario(yaml.safe_load(BASE.replace('actions: "enqueue, allocate"',
                                                          'actions: "enqueue"') + """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: p, minMember: 1}
tasks:
- {name: p0, job: p, requests: {cpu: 1}}
"""), source="test.yaml")
    report = explain(scenario, job="default/p")
    assert report["verdict"] == "not tried: no action of the configuration took these tasks on"
    report["counterfactuals"] = counterfactuals(scenario, job="default/p")
    assert report["counterfactuals"] == []
    assert "no action of the configuration places what waits" in render(report)


OVERUSED_QUEUE = """
queues:
- {name: qa, capability: {cpu: 2, pods: 2}}
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs:
- {name: a, queue: qa, minMember: 1, phase: Inqueue, createdAt: 1}
- {name: b, queue: qa, minMember: 1, phase: Inqueue, createdAt: 2}
- %s
tasks:
- {name: a-0, job: a, requests: {cpu: 1}}
- {name: b-0, job: b, requests: {cpu: 1}}
- {name: c-0, job: c, requests: {cpu: 1}}
"""


def test_a_job_skipped_because_its_queue_is_overused_is_held_back_by_the_quota() -> None:
    # Allocate skips the job whose queue is overused: gang's validity, asked of every
    # job as allocate starts, is no turn of the job's.
    scenario = scenario_of(OVERUSED_QUEUE % (
        "{name: c, queue: qa, minMember: 1, phase: Inqueue, createdAt: 3}"))
    assert run_scenario(scenario).binds == {"default/a-0": "n1", "default/b-0": "n1"}
    report = explain(scenario, job="default/c")
    assert report["verdict"].startswith("held back by proportion")


def test_a_placement_undone_explains_a_task_before_its_fit_errors() -> None:
    # Reclaim pipelined j0-2 on n0 and the gang undid it; an earlier round's fit error
    # is not why it waits (Volcano's TaskSchedulingReason reads the last transaction).
    scenario = parse_scenario(yaml.safe_load("""
version: 1
now: 1000
config:
  actions: "allocate, reclaim"
  tiers:
  - plugins: [{name: gang}]
queues:
- {name: qb}
nodes:
- {name: n0, allocatable: {cpu: 2, memory: 8Gi, pods: 110, nvidia.com/gpu: 1}}
jobs:
- {name: j0, queue: qb, minMember: 3, phase: Inqueue}
- {name: j1, phase: Running}
tasks:
- {name: j0-1, job: j0}
- {name: j0-2, job: j0, requests: {cpu: 500m, nvidia.com/gpu: 1}}
- {name: j0-3, job: j0, requests: {cpu: 500m, nvidia.com/gpu: 1}}
- {name: j1-0, job: j1, node: n0, phase: Running, requests: {cpu: 2}}
"""), source="test.yaml")
    events = {e["object"]: e["message"] for e in run_scenario(scenario).events
              if e["reason"] == "FailedScheduling"}
    assert "can possibly be assigned to n0" in events["default/j0-2"]
    task = next(t for t in explain(scenario, job="default/j0")["tasks"]
                if t["task"] == "default/j0-2")
    assert task["reason"].startswith("could go to n0")


def test_an_evicted_task_is_leaving_its_node_not_starting() -> None:
    path = CORPUS / "preempt-02-preempt-one-task-of-different-job.yaml"
    assert run_scenario(load_scenario(path)).evicted == ["c1/preemptee1"]
    report = explain(load_scenario(path), task="c1/preemptee1")
    assert report["verdict"].startswith("leaving n1 (Releasing)")


def test_a_quota_that_counts_no_device_is_not_short_of_one() -> None:
    # Proportion counts no device (nor does capacity a class its queue does not name):
    # the run's refusal is on cpu alone, and so is the explanation's shortfall.
    path = Path(__file__).parent / "data" / "explain" / "dra-proportion.yaml"
    events = [e["message"] for e in run_scenario(load_scenario(path)).events
              if e["object"] == "team/big"]
    assert any("insufficient cpu" in message for message in events)
    report = explain(load_scenario(path), job="team/big")
    assert report["verdict"] == ("held back by proportion: queue team's capability "
                                 "(proportion) is short by cpu 2")


def test_a_job_enqueued_in_the_session_and_passed_over_is_held_back_by_the_quota() -> None:
    scenario = scenario_of(OVERUSED_QUEUE % (
        "{name: c, queue: qa, minMember: 1, phase: Pending, createdAt: 3, "
        "minResources: {cpu: 500m}}"))
    assert explain(scenario, job="default/c")["verdict"].startswith(
        "held back by proportion")


def test_a_job_gang_finds_invalid_is_not_blamed_on_its_queue() -> None:
    # Allocate never queues an invalid job: the queue's later answers are not about it.
    scenario = scenario_of(OVERUSED_QUEUE % (
        "{name: c, queue: qa, minMember: 3, phase: Inqueue, createdAt: 3}"))
    assert explain(scenario, job="default/c")["verdict"] == "held back by gang"


RUNNING_AND_DONE = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: run, minMember: 1, phase: Running}
- {name: done, minMember: 1, phase: Completed}
- {name: new, minMember: 1, phase: Inqueue}
tasks:
- {name: run-0, job: run, node: n1, phase: Running, requests: {cpu: 1}}
- {name: run-1, job: run, node: n1, phase: Running, requests: {cpu: 1}}
- {name: done-0, job: done, node: n1, phase: Succeeded, requests: {cpu: 1}}
- {name: new-0, job: new, requests: {cpu: 1}}
"""


def test_a_job_running_or_done_before_the_session_was_not_placed_by_it() -> None:
    """explain.md: ``placed`` is a gang that started in this session; one that had no
    task pending has nothing to place."""
    scenario = scenario_of(RUNNING_AND_DONE)
    verdicts = {job: explain(scenario, job=job)["verdict"]
                for job in ("default/run", "default/done", "default/new")}
    assert verdicts == {
        "default/run": "nothing to place: no task is pending (2 Running)",
        "default/done": "nothing to place: no task is pending (1 Succeeded)",
        "default/new": "placed",
    }


def test_a_job_running_before_the_session_is_not_held_back_by_its_closed_queue() -> None:
    scenario = scenario_of(RUNNING_AND_DONE.replace(
        "nodes:", "queues:\n- {name: default, weight: 1, state: Closing}\nnodes:", 1))
    report = explain(scenario, job="default/run")
    assert report["verdict"] == "nothing to place: no task is pending (2 Running)"
    assert report["decidedBy"] == []


PARTLY_RUNNING = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: w, minMember: 1, phase: Running}
tasks:
- {name: w-0, job: w, node: n1, phase: Running, requests: {cpu: 4}}
- {name: w-1, job: w, requests: {cpu: 4}}
"""


def test_a_placed_task_explained_on_its_own_was_decided_by_no_refusal() -> None:
    """w-1 is refused for room; w-0 runs: its own report names no plugin that decided
    against it (decidedBy is empty for what is placed), its job's verdict kept apart."""
    scenario = scenario_of(PARTLY_RUNNING)
    job = explain(scenario, job="default/w")
    assert job["decidedBy"]
    placed = explain(scenario, task="default/w-0")
    assert placed["verdict"] == "placed on n1 (Running)"
    assert placed["decidedBy"] == []
    assert explain(scenario, task="default/w-1")["decidedBy"] == job["decidedBy"]
