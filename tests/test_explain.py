"""``batchsched explain``: on every transcribed Volcano scenario, each job left with an
unplaced task is explained by a configured plugin, the node reasons, or the gang."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from batchsched.api.resource import Resource
from batchsched.api.types import TaskStatus
from batchsched.cli import main
from batchsched.explain import counterfactuals, explain, render
from batchsched.explain.counterfactuals import (
    with_nodes,
    with_queue,
    with_smaller_requests,
    without_tasks,
)
from batchsched.scenario import Scenario, load_scenario, parse_scenario, run_scenario

CORPUS = sorted((Path(__file__).parent / "conformance" / "volcano").rglob("*.yaml"))


def unplaced_jobs(path: Path) -> list[str]:
    scenario = load_scenario(path)
    decisions = run_scenario(scenario).to_json()
    jobs = []
    for job in scenario.jobs:
        tasks = [t for t in scenario.tasks if t.job == job.uid]
        if any(t.status is TaskStatus.PENDING and t.uid not in decisions["binds"]
               for t in tasks) and job.queue in {q.name for q in scenario.queues} | {"default"}:
            jobs.append(job.uid)
    return jobs


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_unplaced_job_is_explained(path: Path) -> None:
    scenario = load_scenario(path)
    configured = set(scenario.configuration.plugin_names())
    for job in unplaced_jobs(path):
        report = explain(scenario, job=job)
        if report["verdict"] == "placed":
            continue  # placed by a later action (backfill, preempt)
        if report["verdict"].startswith("nothing to place"):
            assert report["decidedBy"] == []
            continue
        assert report["decidedBy"], report
        for who in report["decidedBy"]:
            assert who in configured | set(scenario.configuration.actions) | {
                "predicates", "gang", "queue", "pipelined", "bind", "actions"}, (job, who)


def test_the_json_report_names_the_refusing_plugin() -> None:
    path = next(p for p in CORPUS if p.name == "allocate-04-two-jobs-one-node.yaml")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--task", "c1/pg1-p-2", "--output", "json"]) == 0
    report = json.loads(out.getvalue())
    assert report["decidedBy"] == ["proportion"]
    assert report["tasks"] == [{"task": "c1/pg1-p-2", "status": "Pending",
                                "reason": "proportion said no at allocatable"}]


def test_node_reasons_are_counted_per_reason() -> None:
    path = next(p for p in CORPUS if p.name == "allocate-00-fairshare-low-share-queue-first.yaml")
    report = explain(load_scenario(path), job="ns-1/pg-large-1")
    assert report["decidedBy"] == ["predicates"]
    assert report["tasks"][0]["nodes"] == {"Insufficient cpu": 1}
    assert report["tasks"][0]["reason"] == "0/1 nodes are unavailable: 1 Insufficient cpu."


def test_an_unknown_job_is_a_clear_error() -> None:
    err = io.StringIO()
    path = CORPUS[0]
    with contextlib.redirect_stderr(err):
        assert main(["explain", str(path), "--job", "nowhere/none"]) == 2
    assert "no job 'nowhere/none'" in err.getvalue()


def _apply(scenario: Scenario, job: str, change: dict[str, Any]) -> Scenario:
    """What the change says, done to the scenario by hand (not by the search)."""
    kind = change["kind"]
    if kind == "moreNodes":
        template = next(n for n in scenario.nodes if n.name == change["like"])
        return with_nodes(scenario, template, int(change["count"]))
    if kind == "smallerRequests":
        return with_smaller_requests(scenario, job, float(change["factor"]))
    if kind == "victims":
        return without_tasks(scenario, {v["task"] for v in change["tasks"]})
    assert kind == "quota"
    if change["field"] == "weight":
        return with_queue(scenario, change["queue"],
                          lambda q: attrs.evolve(q, weight=change["to"]))
    extra = Resource.from_mapping(change["by"])
    return with_queue(scenario, change["queue"], lambda q: attrs.evolve(
        q, **{change["field"]: getattr(q, change["field"]).clone().add(extra)}))


UNPLACED = [
    (path, job) for path in CORPUS for job in unplaced_jobs(path)
    if explain(load_scenario(path), job=job)["verdict"] != "placed"
]


@pytest.mark.parametrize(("path", "job"), UNPLACED,
                         ids=[f"{p.stem}:{j}" for p, j in UNPLACED])
def test_a_proposed_change_does_let_the_job_start(path: Path, job: str) -> None:
    scenario = load_scenario(path)
    pending = {t.uid for t in scenario.tasks if t.job == job and not t.node_name}
    # No change of the kinds tried may help (a node selector no node matches): then
    # none is proposed. Every one proposed must work when applied.
    quota = explain(scenario, job=job)["quota"]
    for change in counterfactuals(scenario, job=job, max_nodes=4, quota=quota):
        changed = _apply(scenario, job, change)
        binds = run_scenario(changed).binds
        assert pending & set(binds), (job, change)


def test_insufficient_cpu_proposes_a_node_and_a_smaller_request() -> None:
    path = next(p for p in CORPUS if p.name == "allocate-00-fairshare-low-share-queue-first.yaml")
    changes = counterfactuals(load_scenario(path), job="ns-1/pg-large-1")
    assert [c["text"] for c in changes] == ["1 more node(s) like node-1",
                                            "the job's pending requests times 0.5"]


def scenario_of(text: str) -> Scenario:
    return parse_scenario(yaml.safe_load(text), source="test.yaml")


PREEMPTION = """
version: 1
name: a high-priority job waits behind low-priority ones
config:
  actions: "allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
jobs:
- {name: low, minMember: 1, priorityClassName: low, phase: Running}
- {name: old, minMember: 1, priorityClassName: low, phase: Running}
- {name: urgent, minMember: 1, priorityClassName: high, phase: Inqueue}
tasks:
- {name: low-0, job: low, node: n1, phase: Running, requests: {cpu: 2}, createdAt: 100}
- {name: old-0, job: old, node: n2, phase: Running, requests: {cpu: 2}, createdAt: 50}
- {name: urgent-0, job: urgent, requests: {cpu: 1500m}}
"""


def test_victims_are_the_fewest_running_tasks_whose_eviction_starts_the_job() -> None:
    scenario = scenario_of(PREEMPTION)
    victims = [c for c in counterfactuals(scenario, job="default/urgent")
               if c["kind"] == "victims"]
    # Either task would do; the newest of the lowest priority is taken first.
    assert victims == [{
        "kind": "victims", "text": "evicting 1 task(s): default/low-0",
        "tasks": [{"task": "default/low-0", "job": "default/low", "node": "n1",
                   "basis": "preempt"}],
    }]


QUOTA = """
version: 1
name: a queue's capability holds a job back
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}, {name: proportion}]
queues:
- {name: small, capability: {cpu: 1, memory: 8Gi}}
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: big, queue: small, minMember: 1, phase: Inqueue}
tasks:
- {name: big-0, job: big, requests: {cpu: 2, memory: 1Gi}}
"""


def test_a_quota_gap_names_the_queue_the_ceiling_and_the_shortfall() -> None:
    scenario = scenario_of(QUOTA)
    report = explain(scenario, job="default/big")
    assert report["decidedBy"] == ["proportion"]
    capability = next(q for q in report["quota"] if q["ceiling"] == "capability")
    assert capability["short"] == {"cpu": "1"}
    # An admitted job's tasks are refused by proportion's deserved (capped by the
    # capability); the capability gates admission only.
    assert not capability["gates"]
    assert report["verdict"] == ("held back by proportion: queue small's deserved "
                                 "(proportion) is short by cpu 1")
    changes = counterfactuals(scenario, job="default/big", quota=report["quota"])
    quota = next(c for c in changes if c["kind"] == "quota")
    assert quota["text"] == "queue small's capability raised by cpu 1"
    assert run_scenario(_apply(scenario, "default/big", quota)).binds


def test_a_placed_task_shows_the_scores_of_its_node_and_the_runners_up() -> None:
    scenario = scenario_of(PREEMPTION.replace("requests: {cpu: 2}", "requests: {cpu: 1}")
                           .replace("cpu: 1500m", "cpu: 500m"))
    report = explain(scenario, job="default/urgent")
    (task,) = report["tasks"]
    placement = task["placement"]
    assert placement["chosen"]["node"] == task["node"]
    assert placement["feasibleNodes"] == 2
    assert len(placement["runnersUp"]) == 1
    assert set(placement["chosen"]["plugins"]) == {"nodeorder"}
    for runner in placement["runnersUp"]:
        assert runner["node"] != task["node"]
    text = render(report)
    assert "scored" in text and "best of" in text


def test_a_job_no_hypernode_takes_is_explained_by_its_topology() -> None:
    path = (Path(__file__).parent / "conformance" / "volcano" / "network-topology"
            / "allocate-nt-07-hard-cannot-cross-tier.yaml")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--job", "c1/pg1", "--output", "json"]) == 0
    report = json.loads(out.getvalue())
    # Each hypernode is passed over for the pending tasks' requests before any task is
    # tried: said so (it read "ready or pipelined in none", every task "not tried").
    assert {"plugin": "allocate", "text": "hard network topology up to tier 1: within the "
            "hypernodes tried (s0, s1), none has room for the requests of a sub-group's "
            "pending tasks, all of them (idle or future idle, as at session open): no task "
            "was tried"} in report["notes"]


def test_a_device_quota_gap_names_the_device_class() -> None:
    """A queue's deviceclass/<class> capability (capacity's DRA quota) shows in the quota
    figures, with the devices the pending tasks' claims ask for."""
    scenario = load_scenario(Path(__file__).parent / "conformance" / "volcano" / "dra"
                             / "capacity-dra-02-exceeds-quota.yaml")
    report = explain(scenario, job="ns1/p2-pg")
    capability = next(q for q in report["quota"] if q["ceiling"] == "capability")
    assert capability["limit"]["deviceclass/gpu.com"] == "1"
    assert capability["request"]["deviceclass/gpu.com"] == "2"
    assert capability["short"] == {"deviceclass/gpu.com": "1"}


def test_a_claim_the_queue_already_holds_is_not_counted_again() -> None:
    """The pending pod shares a claim a running pod of its queue holds: the device
    quota is not what keeps it waiting (cpu is)."""
    scenario = load_scenario(Path(__file__).parent / "scenario" / "data"
                             / "dra-explain-shared-claim.yaml")
    report = explain(scenario, job="ns/jb")
    capability = next(q for q in report["quota"] if q["ceiling"] == "capability")
    assert "deviceclass/gpu" not in capability["request"]
    assert "deviceclass/gpu" not in capability["short"]


def test_a_queue_with_room_is_not_what_holds_a_job_back() -> None:
    """proportion's "overused: no" says the queue has room: when every node refuses
    the task, the verdict is the nodes', not the queue's."""
    report = explain(load_scenario(Path(__file__).parent.parent / "examples" / "cluster.yaml"),
                     job="research/huge")
    assert report["verdict"] == "no node fits: Insufficient cpu"
    assert report["decidedBy"] == ["predicates"]


def test_an_overused_queue_is_a_refusal() -> None:
    from batchsched.explain.report import _refuses

    assert _refuses("overused", "yes") and not _refuses("overused", "no")
    assert not _refuses("job_starving", "no") and not _refuses("job_starving", "yes")
    assert _refuses("allocatable", "no") and _refuses("job_valid", "invalid: x")


def test_a_node_added_by_a_counterfactual_is_a_host_of_its_own() -> None:
    """One replica per host (anti-affinity on kubernetes.io/hostname): a third replica
    needs a third host, which an added node is (it does not keep n1's hostname)."""
    from batchsched.explain import counterfactuals
    from batchsched.scenario import parse_scenario

    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}},
         "topologyKey": "kubernetes.io/hostname"}]}}
    doc = {"version": 1, "now": 0, "config": {"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "gang"}, {"name": "predicates"}]}]},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 8, "pods": 10},
                   "labels": {"kubernetes.io/hostname": f"n{i}"}} for i in range(2)],
        "jobs": [{"name": "cache", "minMember": 3}],
        "tasks": [{"name": f"cache-{k}", "job": "cache", "requests": {"cpu": 1},
                   "labels": {"app": "cache"}, "affinity": anti} for k in range(3)]}
    changes = counterfactuals(parse_scenario(doc), job="default/cache")
    assert any(c["kind"] == "moreNodes" and c["text"].startswith("1 more node(s)")
               for c in changes), changes


def test_nodes_alike_but_for_their_hostname_are_one_shape_to_add_more_of() -> None:
    """Real nodes each carry their own kubernetes.io/hostname: the search for more
    nodes tries each shape once, not each node (200 nodes took 3,209 sessions)."""
    from batchsched.explain.counterfactuals import _more_nodes

    doc = {"version": 1, "now": 0, "config": {"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "gang"}, {"name": "predicates"}]}]},
           "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 8, "pods": 10},
                      "labels": {"kubernetes.io/hostname": f"n{i}", "zone": "a"}}
                     for i in range(40)]}
    tried: list[int] = []

    def works(candidate: Scenario) -> bool:
        tried.append(len(candidate.nodes))
        return False

    assert _more_nodes(parse_scenario(doc), works, max_nodes=4) is None
    assert tried == [41, 42, 43, 44]


@pytest.mark.parametrize("protection", ["budget", "annotation"])
def test_victims_are_never_pods_an_eviction_may_not_take(protection: str) -> None:
    """A disruption budget with no disruption left, or ``volcano.sh/preemptable:
    "false"``: low-0 is spared, old-0 (the other way to start the job) is taken."""
    doc = yaml.safe_load(PREEMPTION)
    low = next(t for t in doc["tasks"] if t["name"] == "low-0")
    if protection == "budget":
        low["labels"] = {"app": "low"}
        doc["pdbs"] = [{"name": "low", "selector": {"app": "low"}, "disruptionsAllowed": 0}]
    else:
        low["annotations"] = {"volcano.sh/preemptable": "false"}
    victims = [c for c in counterfactuals(scenario_of(yaml.safe_dump(doc)), job="default/urgent")
               if c["kind"] == "victims"]
    assert all("default/low-0" not in change["text"] for change in victims)


def test_a_job_of_a_closed_queue_is_explained_by_its_queue() -> None:
    doc = yaml.safe_load(PREEMPTION)
    doc.setdefault("queues", []).append({"name": "shut", "state": "Closed"})
    doc["jobs"].append({"name": "late", "queue": "shut", "minMember": 1})
    doc["tasks"].append({"name": "late-0", "job": "late", "requests": {"cpu": "100m"}})
    report = explain(scenario_of(yaml.safe_dump(doc)), job="default/late")
    assert report["verdict"].startswith("queue shut is Closed: ")
    assert report["decidedBy"][0] == "queue"


def test_a_plugin_that_could_not_score_the_node_is_named_in_the_text() -> None:
    """tdm cannot score a revocable node outside its window when its predicate is off;
    Volcano then drops the node's other scores: the text says why the total is 0."""
    scenario = parse_scenario(yaml.safe_load("""
version: 1
now: "2024-01-01T12:00:00Z"
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins:
    - name: gang
    - name: tdm
      enablePredicate: false
      arguments: {tdm.revocable-zone.rz1: "0:00-0:01"}
  - plugins:
    - name: predicates
    - name: nodegroup
queues:
- name: q1
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [g1]
nodes:
- {name: r1, allocatable: {cpu: 4, memory: 8Gi, pods: 10},
   labels: {volcano.sh/revocable-zone: rz1, volcano.sh/nodegroup-name: g1}}
jobs:
- {name: j, queue: q1, minMember: 1}
tasks:
- {name: p1, job: j, requests: {cpu: 1}, annotations: {volcano.sh/revocable-zone: "*"}}
"""))
    report = explain(scenario, job="default/j")
    chosen = report["tasks"][0]["placement"]["chosen"]
    assert chosen["total"] == 0 and chosen["plugins"] == {"tdm": None, "nodegroup": 100.0}
    assert "scored 0 (tdm could not score it: 0 in all, nodegroup 100)" in render(report)


def test_a_smaller_request_never_asks_a_fraction_of_a_device() -> None:
    """Kubernetes takes an extended resource whole, and Volcano reads a fraction of a
    device count as none: a vGPU count of 1 stays 1, device memory shrinks whole."""
    from batchsched.explain.counterfactuals import with_smaller_requests

    scenario = parse_scenario(yaml.safe_load("""
version: 1
config: {actions: allocate, tiers: [{plugins: [{name: gang}]}]}
queues: [{name: default}]
nodes: [{name: n1, allocatable: {cpu: 4, pods: 10}}]
jobs: [{name: a, minMember: 1}]
tasks:
- {name: a0, job: a, requests: {cpu: 1, volcano.sh/vgpu-number: 1,
                                volcano.sh/vgpu-memory: 20001, nvidia.com/gpu: 600m}}
"""))
    (task,) = with_smaller_requests(scenario, "default/a", 0.75).tasks
    assert task.resreq.milli_cpu == 750
    assert task.resreq.get("volcano.sh/vgpu-number") == 1000
    assert task.resreq.get("volcano.sh/vgpu-memory") == 15000 * 1000
    assert task.resreq.get("nvidia.com/gpu") == 450  # asked in milli-GPUs: stays so


def test_a_smaller_request_of_native_resources_says_nothing_of_devices() -> None:
    from batchsched.explain.counterfactuals import with_smaller_requests

    scenario = parse_scenario(yaml.safe_load("""
version: 1
config: {actions: allocate, tiers: [{plugins: [{name: gang}]}]}
queues: [{name: default}]
nodes: [{name: n1, allocatable: {cpu: 1, pods: 10, ephemeral-storage: 10Gi}}]
jobs: [{name: a, minMember: 1}]
tasks: [{name: a0, job: a, requests: {cpu: 2, ephemeral-storage: 3}}]
"""))
    (task,) = with_smaller_requests(scenario, "default/a", 0.5).tasks
    # Whole bytes, rounded up, as a file asks them (1.5 bytes fitted where 2 do not).
    assert task.resreq.get("ephemeral-storage") == 2000
    texts = [change["text"] for change in counterfactuals(scenario, job="default/a")]
    assert "the job's pending requests times 0.5" in texts


PODLESS = """
version: 1
name: Volcano Jobs whose pods do not exist yet (created once the pod group is admitted)
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}, {name: proportion}]
queues:
- {name: small, capability: {cpu: 4, memory: 8Gi}}
nodes:
- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}
jobs:
- {name: big, queue: small, minMember: 2, minResources: {cpu: 6, memory: 1Gi}}
- {name: fits, queue: small, minMember: 2, minResources: {cpu: 2, memory: 1Gi}}
"""


def test_a_pod_group_without_pods_starts_as_far_as_a_session_goes_when_admitted() -> None:
    scenario = scenario_of(PODLESS)
    report = explain(scenario, job="default/big")
    changes = counterfactuals(scenario, job="default/big", quota=report["quota"])
    assert [c["text"] for c in changes] == [
        "its pod group's minResources times 0.5", "queue small's capability raised by cpu 2"]
    admitted = explain(scenario, job="default/fits")
    admitted["counterfactuals"] = counterfactuals(scenario, job="default/fits")
    assert admitted["counterfactuals"] == []
    assert "admitted: it waits for its controller to create its pods" in render(admitted)


def test_a_task_of_a_pod_group_not_admitted_names_the_refusal() -> None:
    scenario = scenario_of(QUOTA.replace("phase: Inqueue}", "minResources: {cpu: 2}}"))
    report = explain(scenario, task="default/big-0")
    assert report["verdict"] == ("pending: its pod group is not admitted: proportion said "
                                 "reject at job_enqueueable")


def test_a_ceiling_that_refuses_nothing_at_the_job_s_stage_is_said_so() -> None:
    # proportion checks capability at admission only: shown for an admitted job, it
    # read as a limit that fits or is short.
    path = Path(__file__).parent / "conformance" / "volcano" / "actions" / \
        "allocate-04-two-jobs-one-node.yaml"
    text = render(explain(load_scenario(path), job="c1/pg1"))
    assert ("quota proportion c1 capability cpu 2, memory 4G, pods 10: allocated cpu 1, "
            "memory 1G, pods 1 + request cpu 1, memory 1G, pods 1, fits (proportion does "
            "not refuse by it here)") in text
    assert "short by cpu 1\n" in text  # deserved refuses at placement: no aside


def test_a_node_chosen_over_a_better_scored_one_is_not_called_the_best() -> None:
    # An action of one's own (first fit) may take a node scored below a runner-up.
    from batchsched.explain.report import _render_placement

    placement = {"chosen": {"node": "n1", "total": 426.0, "plugins": {"nodeorder": 426.0}},
                 "runnersUp": [{"node": "n2", "total": 441.0, "plugins": {"nodeorder": 441.0}}],
                 "feasibleNodes": 2}
    assert _render_placement(placement)[0] == (
        "      scored 426 (nodeorder 426), chosen by the action of 2 feasible node(s)")
    placement["runnersUp"][0]["total"] = 400.0
    assert "best of 2 feasible node(s)" in _render_placement(placement)[0]


def test_a_smaller_request_keeps_a_quota_count_of_objects() -> None:
    """``count/pods`` in a pod group's minResources counts pods: scaling the requests
    keeps the pods, so it stays as asked (halving it asked half a pod)."""
    scenario = parse_scenario(yaml.safe_load("""
version: 1
config: {actions: "enqueue, allocate", tiers: [{plugins: [{name: gang}]}]}
queues: [{name: default}]
nodes: [{name: n1, allocatable: {cpu: 4, pods: 10}}]
jobs: [{name: a, minMember: 2, minResources: {cpu: 8, count/pods: 2}}]
tasks:
- {name: a0, job: a, requests: {cpu: 4}}
- {name: a1, job: a, requests: {cpu: 4}}
"""))
    (job,) = with_smaller_requests(scenario, "default/a", 0.5).jobs
    minimum = job.podgroup.min_resources
    assert minimum is not None
    assert minimum.milli_cpu == 4000
    assert minimum.get("count/pods") == 2000


NUMA_FULL = """
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: numa-aware}]
nodes:
- name: n1
  allocatable: {cpu: 4, memory: 8Gi, pods: 110}
  numaTopology:
    policies: {CPUManagerPolicy: static, TopologyManagerPolicy: single-numa-node}
    numares: {cpu: {allocatable: "", capacity: 4}}
    cpuDetail:
      0: {numa: 0, socket: 0, core: 0}
      1: {numa: 0, socket: 0, core: 1}
      2: {numa: 1, socket: 1, core: 2}
      3: {numa: 1, socket: 1, core: 3}
jobs:
- {name: old, minMember: 1}
- {name: web, minMember: 1}
tasks:
- {name: old-0, job: old, node: n1, phase: Running, requests: {cpu: 4, memory: 1Gi}}
- {name: web-0, job: web, requests: {cpu: 2, memory: 1Gi},
   annotations: {volcano.sh/numa-topology-policy: single-numa-node}}
"""


def test_a_node_added_like_a_numa_node_has_every_cpu_free() -> None:
    """n1's exporter reports no free CPU (old-0 holds them all): a node added like it
    reports its own CPUs free, so one more node starts web (the copy of n1's report
    took none)."""
    changes = counterfactuals(parse_scenario(yaml.safe_load(NUMA_FULL)), job="default/web")
    assert {"kind": "moreNodes", "like": "n1", "count": 1} in [
        {k: c[k] for k in ("kind", "like", "count")} for c in changes
        if c["kind"] == "moreNodes"], changes


HYPER = """
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}, {name: network-topology-aware}]
nodes:
- {name: a1, allocatable: {cpu: 4, pods: 10}}
- {name: b1, allocatable: {cpu: 4, pods: 10}}
- {name: b2, allocatable: {cpu: 4, pods: 10}}
hyperNodes:
- name: rack-a
  tier: 1
  members: [{type: Node, selector: {exactMatch: {name: a1}}}]
- name: rack-b
  tier: 1
  members:
  - {type: Node, selector: {exactMatch: {name: b1}}}
  - {type: Node, selector: {exactMatch: {name: b2}}}
jobs:
- {name: busy, minMember: 2}
- name: train
  minMember: 2
  networkTopology: {mode: hard, highestTierAllowed: 1}
tasks:
- {name: busy-0, job: busy, node: b1, phase: Running, requests: {cpu: 4}}
- {name: busy-1, job: busy, node: b2, phase: Running, requests: {cpu: 4}}
- {name: train-0, job: train, requests: {cpu: 4}}
- {name: train-1, job: train, requests: {cpu: 4}}
"""


def test_a_node_added_like_one_in_a_hypernode_lies_beside_it() -> None:
    """train must stay in one rack: one more node in rack-a (beside a1) starts it, and
    the added node joins rack-a (a node of no rack would never do)."""
    scenario = parse_scenario(yaml.safe_load(HYPER))
    changes = counterfactuals(scenario, job="default/train")
    more = [c for c in changes if c["kind"] == "moreNodes"]
    assert more and more[0]["like"] == "a1" and more[0]["count"] == 1, changes
    grown = with_nodes(scenario, scenario.nodes[0], 1)
    rack_a = next(h for h in grown.hyper_nodes if h.name == "rack-a")
    assert [m.exact for m in rack_a.members] == ["a1", "a1-extra-0"]
    rack_b = next(h for h in grown.hyper_nodes if h.name == "rack-b")
    assert [m.exact for m in rack_b.members] == ["b1", "b2"]


def test_a_node_added_like_a_numa_node_keeps_its_other_resources_as_reported() -> None:
    """numares may count memory in bytes: a node added like it frees its CPUs only
    (building every id of 8 GiB ran out of memory)."""
    doc = yaml.safe_load(NUMA_FULL)
    doc["nodes"][0]["numaTopology"]["numares"]["memory"] = {"allocatable": "",
                                                             "capacity": 8589934592}
    scenario = parse_scenario(doc)
    (node,) = with_nodes(scenario, scenario.nodes[0], 1).nodes[1:]
    assert node.numa_topology is not None
    assert node.numa_topology.resources["cpu"].allocatable == frozenset(range(4))
    assert node.numa_topology.resources["memory"].allocatable == frozenset()


def test_a_pod_group_without_pods_in_a_closed_queue_names_the_queue() -> None:
    doc = yaml.safe_load(PODLESS)
    doc["queues"][0]["state"] = "Closed"
    report = explain(parse_scenario(doc, source="<test>"), job="default/fits")
    assert report["verdict"].startswith("queue small is Closed: ")
    assert report["decidedBy"][0] == "queue"


def test_a_smaller_device_count_is_one_device_at_least() -> None:
    """2 GPUs times 1/4 is half a GPU: one, as the text says ("none below one"; the
    count asked was kept, 2)."""
    scenario = parse_scenario(yaml.safe_load("""
version: 1
config: {actions: allocate, tiers: [{plugins: [{name: gang}]}]}
queues: [{name: default}]
nodes: [{name: n1, allocatable: {cpu: 4, pods: 10, nvidia.com/gpu: 4}}]
jobs: [{name: a, minMember: 1}]
tasks: [{name: a0, job: a, requests: {cpu: 1, nvidia.com/gpu: 2}}]
"""))
    (task,) = with_smaller_requests(scenario, "default/a", 0.25).tasks
    assert task.resreq.get("nvidia.com/gpu") == 1000


def test_a_node_added_beside_one_a_hostname_selector_picks_joins_by_its_name() -> None:
    """rack0 selects its nodes by hostname: the new host is no n1, so it joins rack0 by
    exact name (it joined no rack, and the session that checked the proposal saw
    another topology than the one proposed)."""
    doc = yaml.safe_load(HYPER)
    doc["nodes"][0]["labels"] = {"kubernetes.io/hostname": "a1"}
    doc["hyperNodes"][0]["members"] = [{"type": "Node", "selector": {"labelMatch": {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                              "values": ["a1"]}]}}}]
    scenario = parse_scenario(doc)
    grown = with_nodes(scenario, scenario.nodes[0], 1)
    rack_a = next(h for h in grown.hyper_nodes if h.name == "rack-a")
    assert [m.exact for m in rack_a.members] == ["", "a1-extra-0"]
    more = [c for c in counterfactuals(scenario, job="default/train") if c["kind"] == "moreNodes"]
    assert more and more[0]["like"] == "a1", more


def test_a_ceiling_of_zero_is_a_quota_line_and_a_plugin_s_refusal_is_shown() -> None:
    """A queue whose capability is 0 (another queue guarantees the whole cluster) is short
    by the request (the line went missing: a ceiling of zeros read as unset), and the
    text report shows what a refusing plugin said on the job (its figures were in the
    JSON's events only)."""
    doc = {
        "version": 1, "name": "guaranteed away",
        "config": {"actions": "enqueue", "tiers": [
            {"plugins": [{"name": "proportion"}, {"name": "gang"}]}]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "4G", "pods": 10}}],
        "queues": [{"name": "c1"}, {"name": "c2", "guarantee": {"cpu": 4, "memory": "4G"}}],
        "jobs": [{"name": "pg1", "namespace": "c1", "queue": "c1", "minMember": 1,
                  "phase": "Pending", "minResources": {"cpu": 1, "memory": "1G"}}],
    }
    report = explain(parse_scenario(doc, source="<test>"), job="c1/pg1")
    (line,) = [q for q in report["quota"] if q["ceiling"] == "capability"]
    assert line["short"] == {"cpu": "1", "memory": "1G"} and line["limit"]["cpu"] == "0"
    text = render(report)
    assert "short by cpu 1, memory 1G" in text
    assert "event Normal Unschedulable: queue resource quota insufficient" in text


def test_a_job_pipelined_in_part_is_not_said_untried() -> None:
    """reclaim pipelined one task of a gang of two (the other never preempts): the job
    was reported "not tried: no action took these tasks on", its pipelined task
    decided by "actions"."""
    path = (Path(__file__).parent / "conformance" / "volcano" / "actions"
            / "reclaim-07-reclaim-succeeds-for-second-task-after-never-task.yaml")
    scenario = load_scenario(path)
    report = explain(scenario, job="c1/pg-preemptor")
    assert report["verdict"].startswith("gang: 0 of minMember 2 placed, 1 pipelined on n1")
    assert report["decidedBy"] == ["gang"]
    task = explain(scenario, task="c1/preemptor-task2-preemptable")
    assert task["verdict"].startswith("pipelined on n1") and task["decidedBy"] == ["pipelined"]


def test_a_pod_that_never_preempts_is_explained_by_it() -> None:
    path = (Path(__file__).parent / "conformance" / "volcano" / "actions"
            / "preempt-09-no-preempt-when-preemption-policy-never.yaml")
    report = explain(load_scenario(path), job="c1/pg2")
    assert report["verdict"] == ("not placed: preempt: its preemptionPolicy is Never: no pod "
                                 "is evicted for it")
    assert report["decidedBy"] == ["preempt"]


def test_an_evicted_pod_and_its_preemptor_name_each_other() -> None:
    path = (Path(__file__).parent / "conformance" / "volcano" / "actions"
            / "preempt-12-multi-queue-preemptor-tasks-not-overwritten.yaml")
    scenario = load_scenario(path)
    victim = explain(scenario, task="c1/q2-preemptee1")
    assert victim["verdict"] == ("leaving n1 (Releasing): evicted in this session (Pod is "
                                 "evicted, because of preempt), its room is being freed")
    preemptor = explain(scenario, task="c1/q2-preemptor1")
    assert preemptor["verdict"].endswith("(c1/q2-preemptee1 evicted there in this session)")


def test_a_pod_named_as_its_job_has_each_answer_once() -> None:
    path = Path(__file__).parents[1] / "examples" / "dra-gpus.yaml"
    report = explain(load_scenario(path), task="team/late")
    answers = [(p["point"], p["plugin"], p["subject"], p["answer"]) for p in report["plugins"]]
    assert answers and len(answers) == len(set(answers))


def test_a_hard_network_topology_is_named_as_the_bound_of_no_node_fits() -> None:
    """Only s0's nodes were asked (the job's hard topology holds it there, s1's nodes are
    empty): the verdict said "no node fits: Insufficient cpu", as if the cluster were full."""
    path = (Path(__file__).parent / "conformance" / "volcano" / "network-topology"
            / "allocate-nt-15-hard-rescheduled-cannot-cross.yaml")
    report = explain(load_scenario(path), job="c1/pg1")
    assert ("no node fits within hypernode(s) s0 (its network topology keeps it there): "
            "Insufficient cpu") in report["verdict"]


def test_a_job_no_hypernode_has_room_for_is_explained_by_allocate() -> None:
    """allocate tried no task: no hypernode its hard topology allows has room; the
    verdict blamed gang (whose "not ready" follows from it)."""
    path = (Path(__file__).parent / "conformance" / "volcano" / "network-topology"
            / "allocate-nt-07-hard-cannot-cross-tier.yaml")
    report = explain(load_scenario(path), job="c1/pg1")
    assert report["verdict"].startswith("not placed: allocate: hard network topology")
    assert report["decidedBy"] == ["allocate"]
