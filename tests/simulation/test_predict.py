"""Start-time prediction: a cluster's state replayed forward through real sessions."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml

from batchsched.cli import main
from batchsched.errors import ScenarioError
from batchsched.scenario import Scenario, load_scenario, parse_scenario
from batchsched.simulation.predict import predict_start

CLUSTER = """
version: 1
name: two busy nodes, one job waiting
now: 1000
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: proportion}]
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
jobs:
- {name: short, minMember: 1, phase: Running}
- {name: long, minMember: 1, phase: Running}
- {name: wide, minMember: 2, phase: Inqueue, createdAt: 900}
tasks:
- {name: short-0, job: short, node: n1, phase: Running, requests: {cpu: 2},
   annotations: {batchsched.io/run-time: 10m}}
- {name: long-0, job: long, node: n2, phase: Running, requests: {cpu: 2},
   annotations: {batchsched.io/run-time: 2h}}
- {name: wide-0, job: wide, requests: {cpu: 2}}
- {name: wide-1, job: wide, requests: {cpu: 2}}
"""


def scenario(text: str = CLUSTER) -> Scenario:
    return parse_scenario(yaml.safe_load(text), source="cluster.yaml")


def test_a_gang_starts_when_enough_running_tasks_have_ended() -> None:
    # The gang needs both nodes: it waits for the longer of the two runs.
    prediction = predict_start(scenario(), "default/wide")
    assert prediction["expectedStart"] == 1000 + 7200
    assert prediction["waitSeconds"] == 7200
    assert prediction["text"] == "in 2.0 h"


def test_the_requested_runtime_stands_in_for_an_unknown_run_time() -> None:
    text = CLUSTER.replace("annotations: {batchsched.io/run-time: 2h}", "annotations: {}")
    text = text.replace("- {name: long, minMember: 1, phase: Running}",
                        "- {name: long, minMember: 1, phase: Running, "
                        "annotations: {batchsched.io/requested-runtime: 30m}}")
    assert predict_start(scenario(text), "default/wide")["waitSeconds"] == 1800


def test_a_task_that_may_never_end_is_said_so() -> None:
    text = CLUSTER.replace("annotations: {batchsched.io/run-time: 2h}", "annotations: {}")
    prediction = predict_start(scenario(text), "default/wide", horizon=86400)
    assert prediction["expectedStart"] is None
    assert prediction["unknownRunTimes"] == 1
    assert prediction["text"].startswith("not within 24.0 h (1 running or waiting task(s)")


def test_a_job_that_fits_now_starts_now() -> None:
    text = CLUSTER.replace("nodes:\n", "nodes:\n- {name: n3, allocatable: {cpu: 4, pods: 10}}\n")
    assert predict_start(scenario(text), "default/wide")["text"] == "now"


def test_an_unknown_job_is_a_clear_error() -> None:
    with pytest.raises(ScenarioError, match="no job 'default/none'"):
        predict_start(scenario(), "default/none")


def test_explain_predicts_the_start_on_request(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--job", "default/wide", "--predict-start"]) == 0
    assert "  start: in 2.0 h" in out.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(path), "--job", "default/wide", "--predict-start",
                     "--output", "json"]) == 0
    assert json.loads(out.getvalue())["startPrediction"]["waitSeconds"] == 7200


ORDER = """
version: 1
now: 7200
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: pdb}]
  - plugins: [{name: predicates}, {name: proportion}]
priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: waiting, minMember: 1, createdAt: 0}
- {name: running, minMember: 1, phase: Running, createdAt: 3600,
   annotations: {batchsched.io/requested-runtime: 1h}}
tasks:
- {name: w-0, job: waiting, requests: {cpu: 4}}
- {name: r-0, job: running, node: n1, phase: Running, requests: {cpu: 4}, startTime: 5400}
"""


def test_running_pods_hold_their_nodes_before_an_older_waiting_job_is_placed() -> None:
    """The waiting job was created first, but the running job's pod is on n1 now: it
    starts when that pod's hour ends (it started at 5400, now is 7200: in 30 min)."""
    got = predict_start(parse_scenario(yaml.safe_load(ORDER)), "default/waiting")
    assert got["waitSeconds"] == 1800.0


def test_a_job_partly_running_starts_when_what_it_waits_for_does() -> None:
    doc = yaml.safe_load(ORDER)
    doc["jobs"][1]["minMember"] = 1
    doc["tasks"].append({"name": "r-1", "job": "running", "requests": {"cpu": 4}})
    got = predict_start(parse_scenario(doc), "default/running")
    # r-1 waits for n1, which r-0 holds until 9000 (then w-0, created first, may take
    # it): not "now", as the job's first start would say.
    assert got["waitSeconds"] is None or got["waitSeconds"] >= 1800.0


def test_a_replay_keeps_the_disruption_budgets_that_protect_the_victims() -> None:
    doc = yaml.safe_load(ORDER)
    doc["jobs"] = [{"name": "low", "minMember": 1, "phase": "Running",
                    "priorityClassName": "low"},
                   {"name": "urgent", "minMember": 1, "priorityClassName": "high",
                    "phase": "Inqueue"}]
    doc["tasks"] = [{"name": "low-0", "job": "low", "node": "n1", "phase": "Running",
                     "requests": {"cpu": 4}, "labels": {"app": "low"},
                     "priorityClassName": "low"},
                    {"name": "urgent-0", "job": "urgent", "requests": {"cpu": 4},
                     "priorityClassName": "high"}]
    doc["pdbs"] = [{"name": "low-pdb", "selector": {"app": "low"}, "disruptionsAllowed": 0}]
    got = predict_start(parse_scenario(doc), "default/urgent")
    assert got["expectedStart"] is None  # the budget forbids the preemption a session needs
    del doc["pdbs"]
    assert predict_start(parse_scenario(doc), "default/urgent")["waitSeconds"] == 0.0


def test_every_job_waiting_now_is_there_before_the_first_session() -> None:
    """The higher-priority job created later is placed first, as one session on the
    cluster would place it (``explain`` says it is placed): jobs arriving at ``now``
    arrive together."""
    doc = yaml.safe_load(ORDER)
    doc["jobs"] = [{"name": "w1", "minMember": 1, "createdAt": 100, "priorityClassName": "low",
                    "annotations": {"batchsched.io/requested-runtime": "600"}},
                   {"name": "w2", "minMember": 1, "createdAt": 200, "priorityClassName": "high",
                    "annotations": {"batchsched.io/requested-runtime": "600"}}]
    doc["tasks"] = [{"name": "a", "job": "w1", "requests": {"cpu": 4},
                     "priorityClassName": "low"},
                    {"name": "b", "job": "w2", "requests": {"cpu": 4},
                     "priorityClassName": "high"}]
    assert predict_start(parse_scenario(doc), "default/w2")["waitSeconds"] == 0.0
    assert predict_start(parse_scenario(doc), "default/w1")["waitSeconds"] == 600.0


@pytest.mark.parametrize(("name", "job", "wait"), [
    ("quota_snapshot", "default/w", 0.0),          # the quota's use counts r0 once
    ("quota_snapshot_tight", "default/w", 6200.0),  # and drops when r0 ends
    ("pdb_snapshot", "default/urgent", 0.0),       # the budget keeps its disrupted pods
    ("restart_snapshot", "default/target", 50.0),  # spark's own restart rule
    ("ties_snapshot", "default/w", 100.0),         # completions released as tasks started
])
def test_a_prediction_replays_the_cluster_as_a_replay_would(name: str, job: str,
                                                             wait: float) -> None:
    path = Path(__file__).parent / "data" / "predict" / f"{name}.yaml"
    assert predict_start(load_scenario(path), job)["waitSeconds"] == wait


def test_a_pod_group_without_pods_has_no_start_to_predict() -> None:
    # A Volcano Job's controller creates the pods once the pod group is admitted: before,
    # nothing says what they ask, and the job has not "already started".
    scenario = parse_scenario(yaml.safe_load(CLUSTER.replace(
        "- {name: wide, minMember: 2, phase: Inqueue, createdAt: 900}",
        "- {name: wide, minMember: 2, phase: Inqueue, createdAt: 900}\n"
        "- {name: podless, minMember: 2, minResources: {cpu: 2}}")))
    prediction = predict_start(scenario, "default/podless")
    assert (prediction["expectedStart"], prediction["waitSeconds"]) == (None, None)
    assert prediction["text"].startswith("unknown: it has no pods yet")


NUMA_HELD = """
version: 1
now: 0
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
    cpuDetail: {0: {numa: 0, socket: 0, core: 0}, 1: {numa: 0, socket: 0, core: 1},
                2: {numa: 1, socket: 1, core: 2}, 3: {numa: 1, socket: 1, core: 3}}
    podAllocations: [{namespace: default, name: old-0}, {namespace: default, name: old-1}]
jobs: [{name: old, minMember: 1}, {name: web, minMember: 1}]
tasks:
- {name: old-0, job: old, node: n1, phase: Running, requests: {cpu: 2, memory: 1Gi},
   annotations: {batchsched.io/run-time: 10m}}
- {name: old-1, job: old, node: n1, phase: Running, requests: {cpu: 2, memory: 1Gi},
   annotations: {batchsched.io/run-time: RUN}}
- {name: web-0, job: web, requests: {cpu: 2, memory: 1Gi},
   annotations: {volcano.sh/numa-topology-policy: single-numa-node}}
"""


@pytest.mark.parametrize(("second", "wait"), [("10m", 600.0), ("20m", 1200.0)])
def test_cpus_the_exporter_reports_held_are_free_once_its_pods_are_gone(
        second: str, wait: float) -> None:
    """The exporter does not say which CPUs each pod holds: they are free once no pod
    it reports runs on the node (they were never given back: 'not within 30 days')."""
    got = predict_start(scenario(NUMA_HELD.replace("RUN", second)), "default/web")
    assert got["waitSeconds"] == wait
