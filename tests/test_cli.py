"""The command line contract: run, check, plugins, conf validate; errors as one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from batchsched.cli import main

ROOT = Path(__file__).parent.parent
GOOD = """
version: 1
name: one task
config: {actions: ""}
nodes: [{name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}]
jobs: [{name: pg1, namespace: c1, minMember: 1}]
tasks: [{name: p1, namespace: c1, job: pg1, requests: {cpu: 1, memory: 1Gi}}]
expect: {binds: {}, podGroupPhases: {c1/pg1: Pending}}
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD)
    return path


def test_run_json_has_every_key(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(scenario), "--output", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got) == {"binds", "evicted", "pipelined", "podGroupPhases", "taskStatusCounts",
                        "bindFailures", "nominated", "queueStatus", "gpuDevices", "events"}
    assert got["taskStatusCounts"] == {"c1/pg1": {"Pending": 1}}


def test_run_scores_flag_adds_scores(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(scenario), "--output", "json", "--scores"]) == 0
    assert "scores" in json.loads(capsys.readouterr().out)


def test_run_text(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(scenario)]) == 0
    out = capsys.readouterr().out
    assert "binds (0):" in out and "c1/pg1" in out


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("memory: 1Gi}", 'memory: "1Qi"}'))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert 'tasks[0] (c1/p1).requests.memory: "1Qi" is not a quantity' in err[0]
    assert "Traceback" not in err[0]


def test_unknown_plugin_is_refused_clearly(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace('config: {actions: ""}',
                                 'config: {actions: "", tiers: [{plugins: [{name: nosuch}]}]}'))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "unknown plugin 'nosuch'" in err and "known:" in err


def test_check_passes_and_fails(scenario: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(scenario)]) == 0
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(GOOD.replace("c1/pg1: Pending", "c1/pg1: Running"))
    assert main(["check", str(scenario), str(wrong)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "podGroupPhases: c1/pg1 expected Running, got Pending" in out
    assert "1 passed, 1 failed" in out


def test_conf_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "allocate"\ntiers: [{plugins: [{name: nosuch}]}]\n')
    assert main(["conf", "validate", str(conf)]) == 2
    assert "unknown plugin 'nosuch'" in capsys.readouterr().err


def test_python_dash_m_and_plugins_listing() -> None:
    proc = subprocess.run([sys.executable, "-m", "batchsched", "plugins"], capture_output=True,
                          text=True, check=True)
    assert "extension points:" in proc.stdout


def test_config_flag_replaces_the_scenarios_configuration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(GOOD)  # its own configuration runs no action
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n'
                    "  - name: predicates\n")
    assert main(["run", str(scenario), "--output", "json", "--config", str(conf)]) == 0
    assert json.loads(capsys.readouterr().out)["binds"] == {"c1/p1": "n1"}


def test_conf_validate_reports_what_plugins_ignore(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n'
                    "    arguments: {predicate.VolumeZoneEnable: true}\n"
                    "  - name: drf\n    arguments: {drf.typo: 1}\n")
    for _ in range(2):  # reported every time, not once per process as the log does
        assert main(["conf", "validate", str(conf)]) == 0
        out = capsys.readouterr().out
        assert "ignored: plugin 'predicates': predicate.VolumeZoneEnable=True has no effect" in out
        assert "ignored: plugin 'drf': ignoring argument(s) 'drf.typo'" in out
    assert main(["conf", "validate", "--strict", str(conf)]) == 1
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n')
    assert main(["conf", "validate", "--strict", str(conf)]) == 0


def test_conf_validate_names_the_file_when_a_plugin_refuses_its_arguments(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "shuffle"\ntiers:\n- plugins:\n  - name: rescheduling\n'
                    "    arguments:\n      strategies: [{name: lowNodeUtilization,\n"
                    "                    params: {thresholds: {cpu: high}}}]\n")
    assert main(["conf", "validate", str(conf)]) == 2
    err = capsys.readouterr().err
    assert f"{conf}: rescheduling.strategies[0].params.thresholds.cpu" in err
