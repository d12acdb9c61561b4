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
    capsys.readouterr()
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(GOOD.replace("c1/pg1: Pending", "c1/pg1: Running"))
    assert main(["check", str(scenario), str(wrong)]) == 1
    out, err = capsys.readouterr()
    # One line per scenario (the scenario format's contract); the tally on stderr.
    assert out.splitlines() == [
        f"ok    {scenario}",
        f"FAIL  {wrong}: podGroupPhases: c1/pg1 expected Running, got Pending"]
    assert "1 passed, 1 failed" in err


def test_the_run_s_json_pasted_into_expect_checks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every key of ``run --output json`` is one ``expect`` checks (docs/cli.md);
    queueStatus and events were refused as unknown keys."""
    import yaml

    doc = yaml.safe_load(GOOD.replace('config: {actions: ""}',
                                      'config: {actions: "enqueue, allocate"}'))
    del doc["expect"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path), "--output", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["queueStatus"] and got["events"]
    doc["expect"] = got
    path.write_text(yaml.safe_dump(doc))
    assert main(["check", str(path)]) == 0
    capsys.readouterr()
    # Quantities compare as quantities; a count, an event or a queue that differs is named.
    doc["expect"] = {"queueStatus": {"default": {"allocated": {"memory": "1024Mi"},
                                                 "podGroups": {"Running": 1}},
                                     "nosuch": {}},
                     "events": [{**got["events"][0], "reason": "Other"}]}
    path.write_text(yaml.safe_dump(doc))
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "queueStatus: default podGroups Running expected 1, got 0" in out
    assert "queueStatus: no queue 'nosuch' in the session" in out
    assert "allocated memory" not in out
    assert "events: expected but not recorded" in out
    doc["expect"] = {"events": [{"object": "c1/pg1"}]}
    path.write_text(yaml.safe_dump(doc))
    assert main(["check", str(path)]) == 2
    assert "expect.events: has the wrong shape" in capsys.readouterr().out


def test_pipelined_as_run_writes_it_checks(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # run writes job -> task -> node; expect took job -> nodes only.
    import shutil

    source = ROOT / "tests" / "conformance" / "volcano" / "actions"
    found = None
    for path in sorted(source.glob("*.yaml")):
        assert main(["run", str(path), "--output", "json"]) in (0, 1)
        got = json.loads(capsys.readouterr().out)
        if got["pipelined"]:
            found = path, got
            break
    assert found is not None
    path, got = found
    copy = tmp_path / "pipelined.yaml"
    shutil.copy(path, copy)
    import yaml

    doc = yaml.safe_load(copy.read_text())
    doc["expect"] = {"pipelined": got["pipelined"]}
    copy.write_text(yaml.safe_dump(doc))
    assert main(["check", str(copy)]) == 0
    capsys.readouterr()
    job, tasks = next(iter(got["pipelined"].items()))
    doc["expect"] = {"pipelined": {job: {task: "elsewhere" for task in tasks}}}
    copy.write_text(yaml.safe_dump(doc))
    assert main(["check", str(copy)]) == 1


def test_check_searches_a_folder_for_scenario_files_not_folders(
        scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "suite"
    (folder / "old.yaml").mkdir(parents=True)  # a folder, whatever its name says
    (folder / "one.yaml").write_text(scenario.read_text())
    assert main(["check", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok    {folder / 'one.yaml'}"]


def test_check_names_each_file_as_its_argument_names_it(
        scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "one.yaml").write_text(scenario.read_text())
    assert main(["check", "./s.yaml", "./suite"]) == 0
    assert capsys.readouterr().out.splitlines() == ["ok    ./s.yaml", "ok    ./suite/one.yaml"]


def test_check_reports_a_folder_without_scenarios_among_others(
        scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["check", str(scenario), str(tmp_path / "empty")]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ERROR {tmp_path / 'empty'}: no scenario found (no .yaml, .yml or " \
                     ".json file)"
    assert out[1] == f"ok    {scenario}"


def test_check_debug_shows_the_traceback_of_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("cpu: 1, memory: 1Gi", "cpu: 1Qi, memory: 1Gi"))
    assert main(["check", "--debug", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" in captured.err and captured.out.startswith(f"ERROR {bad}: ")


def test_check_says_bad_input_in_the_scenario_s_one_line(
        scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("cpu: 1, memory: 1Gi", "cpu: 1Qi, memory: 1Gi"))
    assert main(["check", str(scenario), str(bad)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[1].startswith(f"ERROR {bad}: tasks[0]")
    assert str(bad) not in out[1][len(f"ERROR {bad}:"):]  # the file is named once


def test_check_shows_the_loader_s_warnings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("minMember: 1}", "minMember: 1, queue: nosuch}")
                    .replace("expect: {binds: {}, podGroupPhases: {c1/pg1: Pending}}",
                             "expect: {binds: {}}"))
    assert main(["check", str(path)]) == 0
    assert "queue 'nosuch'" in capsys.readouterr().err


@pytest.mark.parametrize(("expect", "field"), [
    ("{scores: {c1/p1: 5}}", "expect.scores"),
    ("{taskStatusCounts: {c1/pg1: 5}}", "expect.taskStatusCounts"),
    ("{pipelined: {c1/pg1: n1}}", "expect.pipelined"),
    ("{binds: {c1/p1: [n1]}}", "expect.binds"),
    ("{x-nodeBindCounts: {n1: many}}", "expect.x-nodeBindCounts"),
    ("{evictCount: }", "expect.evictCount"),  # a count given as nothing can never pass
])
def test_a_malformed_expectation_is_bad_input_naming_its_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], expect: str, field: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("expect: {binds: {}, podGroupPhases: {c1/pg1: Pending}}",
                                 f"expect: {expect}"))
    assert main(["check", str(path)]) == 2
    out = capsys.readouterr().out
    assert f"{field}: has the wrong shape" in out and "Traceback" not in out


def test_a_file_that_is_not_utf8_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"version: 1\nname: \xff\xfe\n")
    assert main(["run", str(path)]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err
    assert main(["check", str(path)]) == 2


@pytest.mark.parametrize("version", ["true", "1.0", "'1'", "2"])
def test_version_must_be_the_integer_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("version: 1", f"version: {version}"))
    assert main(["run", str(path)]) == 2
    assert "version: must be 1" in capsys.readouterr().err


def test_x_keys_are_extensions_only_at_the_top_level_and_in_expect(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("version: 1", "version: 1\nx-source: a note")
                    .replace("expect: {binds: {}", "expect: {x-nodeBindCounts: {n1: 0}, binds: {}"))
    assert main(["check", str(path)]) == 0
    path.write_text(GOOD.replace("job: pg1, requests", "job: pg1, x-typo: 1, requests"))
    assert main(["run", str(path)]) == 2
    assert "tasks[0] (c1/p1).x-typo: unknown key" in capsys.readouterr().err


def test_an_unknown_action_in_configurations_is_refused_with_config_s_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace('config: {actions: ""}',
                                 'config: {actions: "", configurations: [{name: alocate}]}'))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "config.configurations[0].name: unknown action 'alocate'" in err
    assert "did you mean 'allocate'" in err and "known:" in err
    path.write_text(GOOD.replace('config: {actions: ""}', 'config: {actions: "alocate"}'))
    assert main(["run", str(path)]) == 2
    assert "config.actions[0]: unknown action" in capsys.readouterr().err


def test_a_second_configuration_of_an_action_is_ignored_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Volcano reads an action's arguments from the first entry naming it."""
    from batchsched.conf import parse_configuration

    conf = parse_configuration({"actions": "allocate", "configurations": [
        {"name": "allocate", "arguments": {"predicateErrorCacheEnable": False}},
        {"name": "allocate", "arguments": {"predicateErrorCacheEnable": True}}]})
    assert conf.action_arguments("allocate").get_bool("predicateErrorCacheEnable", True) is False
    assert "a second entry for action 'allocate'" in caplog.text


@pytest.mark.parametrize("quantity", ["' 1'", "'1 '", "'1Qi'", "'1e400'"])
def test_a_quantity_with_blanks_is_malformed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], quantity: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("cpu: 1, memory: 1Gi", f"cpu: {quantity}, memory: 1Gi"))
    assert main(["run", str(path)]) == 2
    assert "requests.cpu" in capsys.readouterr().err


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


def test_conf_validate_calls_an_action_with_an_unreadable_argument_an_action(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "allocate, preempt"\ntiers:\n- plugins:\n  - name: gang\n'
                    "configurations:\n- name: preempt\n"
                    "  arguments: {minCandidateNodesAbsolute: ten}\n")
    assert main(["conf", "validate", str(conf)]) == 0
    out = capsys.readouterr().out
    assert "ignored: action 'preempt': argument 'minCandidateNodesAbsolute' = 'ten' is not " \
        "an integer" in out, out


@pytest.mark.parametrize(("interval", "ignored"), [("90", True), ("0s", True),
                                                   ("1m30s", False), ("30s", False)])
def test_conf_validate_reports_a_metrics_interval_volcano_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], interval: str,
        ignored: bool) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text(f'actions: allocate\nmetrics: {{interval: "{interval}"}}\n')
    assert main(["conf", "validate", "--strict", str(conf)]) == (1 if ignored else 0)
    assert ("is not a positive Go duration" in capsys.readouterr().out) is ignored


def test_a_switch_turned_off_as_go_reads_false_is_not_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n'
                    '    arguments: {predicate.VolumeZoneEnable: "FALSE", '
                    'predicate.VolumeBindingEnable: "f"}\n')
    assert main(["conf", "validate", "--strict", str(conf)]) == 0, capsys.readouterr().out


def test_conf_validate_names_the_file_when_a_plugin_refuses_its_arguments(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "shuffle"\ntiers:\n- plugins:\n  - name: rescheduling\n'
                    "    arguments:\n      strategies: [{name: lowNodeUtilization,\n"
                    "                    params: {thresholds: {cpu: high}}}]\n")
    assert main(["conf", "validate", str(conf)]) == 2
    err = capsys.readouterr().err
    assert (f"{conf}: tiers[0].plugins[0].arguments: plugin 'rescheduling': "
            "rescheduling.strategies[0].params.thresholds.cpu") in err


def test_a_key_given_twice_in_a_yaml_mapping_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("{cpu: 2, memory: 4Gi", "{cpu: 2, cpu: 200, memory: 4Gi"))
    assert main(["run", str(path)]) == 2
    assert "found duplicate key 'cpu'" in capsys.readouterr().err


def test_an_unknown_action_in_configurations_is_named_by_its_own_entry(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace('config: {actions: ""}', 'config: {actions: "", configurations: '
                                 '[{name: allocate}, {name: allocate}, {name: bogus}]}'))
    assert main(["run", str(path)]) == 2
    assert "config.configurations[2].name: unknown action 'bogus'" in capsys.readouterr().err


def test_a_score_written_as_yaml_reads_1e2_passes_the_shape_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML reads ``1e2`` as a string; the comparison reads it as a number."""
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("expect: {binds: {}, podGroupPhases: {c1/pg1: Pending}}",
                                 "expect: {scores: {c1/p1: {n1: 1e2}}}"))
    assert main(["check", str(path)]) == 1  # a difference, not bad input
    assert "ERROR" not in capsys.readouterr().out


def test_a_bad_input_error_is_one_line_whatever_the_value_held(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("requests: {cpu: 1,", 'requests: {cpu: "1\\n2",'))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("batchsched: error: ")
    assert err.rstrip("\n").endswith('tasks[0] (c1/p1).requests.cpu: "1\\n2" is not a quantity')


def test_check_reports_a_file_that_crashed_the_loader_and_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "a-bad.yaml"
    bad.write_text(GOOD.replace("minMember: 1}", "minMember: 1, createdAt: 1" + "0" * 400 + "}"))
    good = tmp_path / "b-good.yaml"
    good.write_text(GOOD)
    assert main(["check", str(tmp_path)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"ERROR {bad}: jobs[0] (c1/pg1).createdAt: is too large")
    assert out[1] == f"ok    {good}"


@pytest.mark.parametrize("argv", [["--debug", "run"], ["run", "--debug"]])
def test_debug_before_or_after_the_subcommand_shows_the_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: x\n")
    assert main([*argv, str(bad)]) == 2
    assert "Traceback" in capsys.readouterr().err
    assert main(["run", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_plugins_lists_the_kube_style_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    assert "kube    SchedulingGates" in capsys.readouterr().out


def test_the_cli_guide_shows_the_quickstart_s_real_output(
        capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).parent.parent
    guide = (root / "docs" / "cli.md").read_text()
    marker = "`batchsched run examples/quickstart.yaml --output json`:\n\n```json\n"
    start = guide.index(marker) + len(marker)
    shown = json.loads(guide[start:guide.index("\n```", start)])
    assert main(["run", str(root / "examples" / "quickstart.yaml"), "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == shown


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs a device that is always full")
@pytest.mark.parametrize("command", [["run", "examples/cluster.yaml", "--output", "json"],
                                     ["plugins"]])
def test_output_that_cannot_be_written_is_one_error_line(command: list[str]) -> None:
    """A full disk under standard output: exit 2 and one line, not a traceback."""
    with open("/dev/full", "w", encoding="utf-8") as full:
        proc = subprocess.run([sys.executable, "-m", "batchsched", *command], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2
    assert proc.stderr == "batchsched: error: cannot write the output: No space left on device\n"
