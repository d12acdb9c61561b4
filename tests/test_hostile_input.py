"""Hostile input gets one line and exit 2, quickly: documents nested too deeply for
the parsers, YAML alias bombs (refused as yaml.v2 refuses them), an SWF job wider
than the cluster by orders of magnitude, a schedule period that would overflow the
clock."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from batchsched.cli import main
from batchsched.kube.go_yaml import ExcessiveAliasingError, load_first_document


def bomb(prefix: str = "") -> str:
    """Eight keys, each a list of ten aliases of the one before: 10**8 scalars."""
    return "".join(
        f"{prefix}{name}: &{name} [{', '.join([f'*{previous}' if previous else 'x'] * 10)}]\n"
        for previous, name in zip(["", *"abcdefg"], "abcdefgh", strict=True))


def cli(*args: str) -> tuple[int, str]:
    """Exit code, and what was printed (stderr, then stdout: check reports there)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue() + out.getvalue()


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_scenario_nested_too_deeply_is_one_line(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text('{"version": 1, "x": ' + "[" * 3000 + "]" * 3000 + "}")
    for command in (["run", str(path)], ["check", str(path)]):
        code, err = cli(*command)
        assert code == 2 and "nested too deeply" in err and "Traceback" not in err


def test_a_configuration_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.conf"
    path.write_text("actions: allocate\ntiers: " + "[" * 3000 + "]" * 3000 + "\n")
    code, err = cli("conf", "validate", str(path))
    assert code == 2 and "nested too deeply" in err


def test_an_alias_bomb_is_refused_as_yaml_v2_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(ExcessiveAliasingError, match="excessive aliasing"):
        load_first_document(bomb() + "actions: allocate\n")
    conf = tmp_path / "bomb.conf"
    conf.write_text(bomb() + "actions: allocate\ntiers: []\n")
    code, err = cli("conf", "validate", str(conf))
    assert code == 2 and "excessive aliasing" in err
    scenario = tmp_path / "bomb.yaml"
    scenario.write_text(bomb("x-") + "version: 1\nconfig: {actions: allocate, tiers: [{plugins: "
                        "[{name: binpack, arguments: {binpack.resources: *h}}]}]}\nnodes: []\n")
    code, err = cli("run", str(scenario))
    assert code == 2 and "excessive aliasing" in err


def test_a_few_aliases_are_read_as_before() -> None:
    text = "base: &b {cpu: 1}\nnodes: [*b, *b, *b]\n"
    nodes = load_first_document(text)["nodes"]
    assert len(nodes) == 3 and nodes[0] == nodes[1] == nodes[2]
    assert yaml.safe_load(text)["nodes"] == [{"cpu": 1}] * 3


def test_an_swf_job_far_wider_than_the_cluster_is_skipped_at_once(tmp_path: Path) -> None:
    trace = tmp_path / "wide.swf"
    trace.write_text("; MaxNodes: 16\n; MaxProcs: 16\n"
                     "1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 1 1 -1 -1 -1\n"
                     "2 0 -1 100 99999999999999999999999 -1 -1 1 100 -1 1 1 1 1 1 -1 -1 -1\n")
    code, err = cli("simulate", str(trace), "--no-progress")
    assert code == 2
    assert "job swf/job-2 skipped: its gang asks" in err


def test_a_schedule_period_that_would_overflow_the_clock_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxNodes: 1\n1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 1 1 -1 -1 -1\n")
    code, err = cli("simulate", str(trace), "--no-progress", "--schedule-period", "1e308")
    assert code == 2 and "--schedule-period" in err and err.count("\n") == 1


def _refused(path: Path, text: str) -> str:
    """What ``batchsched run`` says of a scenario it refuses (exit 2)."""
    path.write_text(text)
    code, err = cli("run", str(path))
    assert code == 2
    return err.strip()


def test_a_plugin_refusing_its_arguments_is_named_with_the_file_and_its_place(
        tmp_path: Path) -> None:
    err = _refused(tmp_path / "args.yaml",
                   "version: 1\nconfig: {actions: allocate, tiers: [{plugins: [{name: gang}]}, "
                   "{plugins: [{name: predicates, arguments: {volumebinding.weight: '0x10'}}]}]}\n"
                   "nodes: []\n")
    # The place within the scenario file: its config.
    assert "args.yaml: config.tiers[1].plugins[0].arguments: plugin 'predicates': argument " \
           "volumebinding.weight: expected an integer, got '0x10'" in err
    conf = tmp_path / "args.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n"
                    "    arguments: {volumebinding.weight: '0x10'}\n")
    code, err = cli("conf", "validate", str(conf))
    assert code == 2 and ("args.conf: tiers[0].plugins[0].arguments: plugin 'predicates': "
                          "argument volumebinding.weight: expected an integer") in err


def test_an_action_or_plugin_refusing_its_arguments_names_the_file_and_the_field(
        tmp_path: Path) -> None:
    scenario = tmp_path / "args.yaml"
    assert _refused(scenario,
                    "version: 1\nconfig: {actions: 'allocate, preempt', tiers: [{plugins: "
                    "[{name: gang}]}], configurations: [{name: preempt, arguments: "
                    "{enableTopologyAwarePreemption: true, "
                    "topologyAwarePreemptWorkerNum: -1}}]}\nnodes: []\n").endswith(
        "args.yaml: config.configurations[0].arguments.topologyAwarePreemptWorkerNum: "
        "action 'preempt': must not be negative, got -1")
    assert "args.yaml: config.tiers[0].plugins[1].arguments: plugin 'wfp3': wfp3.waitingTime" \
        in _refused(scenario,
                    "version: 1\nconfig: {actions: allocate, tiers: [{plugins: [{name: gang}, "
                    "{name: wfp3, arguments: {wfp3.waitingTime: sometimes}}]}]}\nnodes: []\n")
