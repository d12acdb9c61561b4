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
from batchsched.scenario import Scenario, parse_scenario
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
