"""Mistakes a user of compare, the simulation API and the test helpers makes, each
caught in one clear line (or a warning) instead of a traceback or a wrong result."""

from __future__ import annotations

import contextlib
import io
import math
import sys
import types
from pathlib import Path
from typing import Any

import attrs
import pytest
from sim_support import HEADER, STRICT, swf_line, write

from batchsched.cli import main
from batchsched.errors import WorkloadError
from batchsched.simulation import Simulator, swf_workload
from batchsched.simulation import sweep as sweep_module
from batchsched.testing import ScenarioBuilder, assert_decisions, run, simulate


def compare(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compare", *args, "--workers", "1"])
    return code, out.getvalue(), err.getvalue()


def trace_and_config(tmp_path: Path) -> tuple[Path, Path]:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2)
                  + "\n".join(swf_line(i, i, 10, 1) for i in range(1, 5)) + "\n")
    return trace, write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))


def test_the_same_configuration_twice_is_refused(tmp_path: Path) -> None:
    trace, config = trace_and_config(tmp_path)
    code, out, err = compare(str(trace), "--config", str(config), "--config", str(config))
    assert (code, out) == (2, "")
    assert err.startswith("batchsched: error: --config") and "given twice" in err


def test_a_window_past_the_trace_is_refused(tmp_path: Path) -> None:
    trace, config = trace_and_config(tmp_path)
    code, out, err = compare(str(trace), "--config", str(config), "--windows", "0,10")
    assert (code, out) == (2, "")
    assert "the window starts at job 10, past the trace's 4 jobs" in err
    with pytest.raises(WorkloadError, match="past the trace's 4 jobs"):
        swf_workload(trace, first=4)


def test_nothing_replays_before_every_configuration_and_window_is_known_good(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration naming a plugin nobody provides, a window past the trace, or one
    file spelt two ways: refused before the first replay (the replays before it used
    to run, minutes of them, and be thrown away)."""
    trace, config = trace_and_config(tmp_path)
    unknown = write(tmp_path, "unknown.yaml", "actions: allocate\n"
                    "tiers:\n- plugins: [{name: nosuchplugin}]\n")
    ran: list[Any] = []
    monkeypatch.setattr(sweep_module, "sweep", lambda specs, **options: ran.extend(specs))
    code, _, err = compare(str(trace), "--config", str(config), "--config", str(unknown))
    assert code == 2 and "unknown plugin 'nosuchplugin'" in err
    code, _, err = compare(str(trace), "--config", str(config), "--windows", "1,9")
    assert code == 2 and "past the trace's 4 jobs" in err
    monkeypatch.chdir(tmp_path)
    code, _, err = compare(str(trace), "--config", "fcfs.yaml", "--config", "./fcfs.yaml")
    assert code == 2 and "given twice" in err
    assert ran == []


def test_an_unreachable_dask_scheduler_is_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    class Unreachable:
        def __init__(self, address: str) -> None:
            raise OSError(f"Timed out trying to connect to {address}")

    monkeypatch.setitem(sys.modules, "distributed",
                        types.SimpleNamespace(Client=Unreachable))
    trace, config = trace_and_config(tmp_path)
    code, out, err = compare(str(trace), "--config", str(config), "--dask", "tcp://nowhere:1")
    assert (code, out) == (2, "")
    assert err == ("batchsched: error: --dask tcp://nowhere:1: Timed out trying to connect "
                   "to tcp://nowhere:1\n")


def test_replays_get_paths_as_they_are_from_where_compare_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dask worker runs in a directory of its own."""
    trace, config = trace_and_config(tmp_path)
    seen: list[Any] = []

    def record(specs: Any, **options: Any) -> list[dict[str, Any]]:
        seen.extend(specs)
        return [{} for _ in specs]

    monkeypatch.setattr(sweep_module, "sweep", record)
    monkeypatch.chdir(tmp_path)
    compare("t.swf", "--config", "fcfs.yaml")
    assert [(spec.workload, spec.config) for spec in seen] == [(str(trace), str(config))]


def builder() -> ScenarioBuilder:
    return (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=2)
            .job("a", queue="typo", min_member=1, submit=0)
            .task("a0", job="a", cpu=1, run_time=60))


def test_simulate_warns_as_run_does() -> None:
    with pytest.warns(UserWarning, match="queue 'typo' does not exist"):
        simulate(builder())


def workload_of(**changes: Any) -> Any:
    from batchsched.scenario import parse_scenario
    from batchsched.simulation.scenario_workload import workload_from

    scenario = parse_scenario((ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=2)
                               .job("a", min_member=1, submit=0)
                               .task("a0", job="a", cpu=1, run_time=60)).document,
                              source="<test>")
    workload = workload_from(scenario)
    (job,) = workload.jobs
    return attrs.evolve(workload, jobs=(attrs.evolve(job, **changes),))


@pytest.mark.parametrize("changes", [
    {"submit": math.nan},
    {"submit": "5"},
    {"run_times": {"default/a0": -30.0}},
    {"run_times": {"default/a0": math.nan}},
    {"run_times": {"default/a0": "60"}},
])
def test_a_workload_built_in_code_with_times_that_are_no_times_is_refused(
        changes: dict[str, Any]) -> None:
    with pytest.raises(WorkloadError, match=r"job default/a: .* no number of seconds"):
        Simulator(workload_of(**changes))


def _two_jobs(**second: Any) -> Any:
    """workload_of's job, and a second one (``second`` changes it), on that cluster."""
    workload = workload_of()
    (job,) = workload.jobs
    return attrs.evolve(workload, jobs=(job, attrs.evolve(job, **second)))


@pytest.mark.parametrize(("workload", "message"), [
    (_two_jobs, "job default/a: given twice"),
    (lambda: workload_of(run_times={"default/a0": 60.0, "default/b0": 5.0}),
     "job default/a: a run time for default/b0, which is not one of its tasks"),
    (lambda: workload_of(restart="Gang"), "job default/a: restart 'Gang' is not gang or task"),
    (lambda: attrs.evolve(workload_of(), nodes=workload_of().nodes * 2),
     "node n1: given twice"),
])
def test_a_workload_built_in_code_that_a_scenario_could_not_say_is_refused(
        workload: Any, message: str) -> None:
    """What the scenario loader refuses, a workload built in code is refused too, by
    name: replayed, each gave wrong timelines without a word."""
    with pytest.raises(WorkloadError, match=message):
        Simulator(workload())


def test_a_job_of_a_queue_the_workload_does_not_declare_is_refused() -> None:
    # It was replayed waiting for ever, its queue counted in the fairness.
    workload = workload_of()
    (job,) = workload.jobs
    job.prototype.queue = "tpyo"
    with pytest.raises(WorkloadError, match="job default/a: queue 'tpyo' is not one of the "
                                            "workload's queues"):
        Simulator(workload)


@pytest.mark.parametrize(("given", "options", "error", "message"), [
    (ScenarioBuilder, {}, TypeError,
     "a replay takes a batchsched.simulation.Workload, not ScenarioBuilder "
     r"\(batchsched.testing.simulate takes a ScenarioBuilder\)"),
    (workload_of, {"until": "10"}, WorkloadError, "until must be a number of seconds"),
    (workload_of, {"schedule_period": "10"}, WorkloadError, "the schedule period must be"),
])
def test_the_replay_s_own_arguments_of_the_wrong_kind_are_named(
        given: Any, options: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Simulator(given(), **options)


def test_a_task_of_two_jobs_in_a_workload_built_in_code_is_refused() -> None:
    from batchsched.api import JobInfo, PodGroup

    workload = workload_of()
    (job,) = workload.jobs
    other = JobInfo.from_podgroup(PodGroup("b", "default", min_member=1),
                                  tasks=[job.prototype.tasks["default/a0"].clone()])
    second = attrs.evolve(job, prototype=other)
    with pytest.raises(WorkloadError, match="job default/b: task default/a0 is job "
                                            "default/a's too"):
        Simulator(attrs.evolve(workload, jobs=(job, second)))


@pytest.mark.parametrize("changes", [
    {"submit": 1e16},
    {"submit": -1e16},
    {"run_times": {"default/a0": 2e15}},
])
def test_a_workload_with_times_past_what_the_clock_counts_is_refused(
        changes: dict[str, Any]) -> None:
    # The clock counts whole seconds exactly below 2**53: an SWF trace is refused past
    # 1e15 seconds, and so is a workload from any source.
    with pytest.raises(WorkloadError, match=r"more seconds than a replay counts exactly"):
        Simulator(workload_of(**changes))


def test_numpy_numbers_are_times() -> None:
    """A workload built from numpy or pandas data: its numbers are seconds."""
    import numpy as np

    Simulator(workload_of(submit=np.float32(0.0),
                          run_times={"default/a0": np.int64(60)})).run()


def test_a_task_that_never_ends_is_no_time_past_the_clock() -> None:
    Simulator(workload_of(run_times={"default/a0": math.inf}))


@pytest.mark.parametrize(("now", "refused"), [(None, True), (1000, False)])
def test_a_relative_time_needs_the_workload_s_now(now: int | None, refused: bool) -> None:
    # Without `now`, "-10s" reads the wall clock: every replay would read another time.
    from batchsched.scenario import parse_scenario
    from batchsched.simulation.scenario_workload import workload_from

    document = (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=2)
                .job("a", min_member=1).task("a0", job="a", cpu=1, run_time=60)).document
    document["jobs"][0]["createdAt"] = "-10s"
    if now is not None:
        document["now"] = now
    scenario = parse_scenario(document, source="<test>")
    if refused:
        with pytest.raises(WorkloadError, match=r"jobs\[0\] \(default/a\)\.createdAt: a time "
                                                "relative to now, and the workload gives no"):
            workload_from(scenario)
    else:
        (job,) = workload_from(scenario).jobs
        assert job.submit == 990


def test_a_simulator_replays_once() -> None:
    simulator = Simulator(workload_of())
    first = simulator.run()
    with pytest.raises(WorkloadError, match="already replayed"):
        simulator.run()
    assert first.metrics()["makespan"] == 60


def test_assert_decisions_takes_the_decisions_own_pipelined_shape() -> None:
    scenario = (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=2)
                .job("old", min_member=1, phase="Running")
                .task("old-0", job="old", cpu=2, node="n1", phase="Running", deleting=True)
                .job("new", min_member=1).task("new-0", job="new", cpu=2))
    decisions = run(scenario)
    assert decisions.pipelined == {"default/new": {"default/new-0": "n1"}}
    assert_decisions(decisions, pipelined=decisions.pipelined)


def test_a_configuration_that_does_not_load_is_refused_before_any_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace, config = trace_and_config(tmp_path)
    replays: list[Any] = []
    monkeypatch.setattr(sweep_module, "sweep",
                        lambda specs, **options: replays.extend(specs) or [])
    code, _, err = compare(str(trace), "--config", str(config),
                           "--config", str(tmp_path / "typo.yaml"))
    assert code == 2 and "typo.yaml" in err and replays == []


def test_the_loader_s_warnings_are_said_once_whatever_the_replays(tmp_path: Path) -> None:
    workload = write(tmp_path, "w.yaml", builder().to_yaml())
    _, config = trace_and_config(tmp_path)
    other = write(tmp_path, "sjf.yaml", STRICT.format(policy="sjf"))
    _, _, err = compare(str(workload), "--config", str(config), "--config", str(other))
    assert err.count("queue 'typo' does not exist") == 1


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_no_worker_processes_are_refused(tmp_path: Path, workers: str) -> None:
    trace, config = trace_and_config(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compare", str(trace), "--config", str(config), "--workers", workers])
    assert (code, out.getvalue()) == (2, "")
    assert err.getvalue().startswith(f"batchsched: error: --workers {workers}:")


@pytest.mark.parametrize("behaviour", ["garbage", "silent"])
def test_a_dask_address_where_no_scheduler_answers_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str) -> None:
    """Something else answering (a web server: distributed failed deep inside, with a
    MemoryError) and a server that never speaks (the client waited forever)."""
    import threading

    release = threading.Event()

    closed = threading.Event()

    class Odd:
        def __init__(self, address: str) -> None:
            if behaviour == "garbage":
                raise MemoryError("Unable to allocate 3.07 EiB")
            release.wait(5)

        def close(self) -> None:
            closed.set()

    monkeypatch.setitem(sys.modules, "distributed", types.SimpleNamespace(Client=Odd))
    monkeypatch.setattr(sweep_module, "DASK_CONNECT_SECONDS", 0.2)
    trace, config = trace_and_config(tmp_path)
    code, out, err = compare(str(trace), "--config", str(config), "--dask", "tcp://odd:1")
    release.set()
    if behaviour == "silent":
        assert closed.wait(5)  # the client that came too late is closed, not left open
    assert (code, out) == (2, "")
    expected = ("not a dask scheduler there (MemoryError" if behaviour == "garbage"
                else "no dask scheduler answered in 0.2 s")
    assert err.startswith(f"batchsched: error: --dask tcp://odd:1: {expected}")
    assert len(err.splitlines()) == 1


def _dies(spec: Any) -> dict[str, Any]:
    import os

    os._exit(1)


def test_a_replay_worker_that_dies_is_one_error() -> None:
    from batchsched.errors import BatchSchedError

    with pytest.raises(BatchSchedError, match="a replay's worker process died"):
        sweep_module.sweep([object(), object()], workers=2, run_one=_dies)  # type: ignore[list-item]


def test_compare_writes_a_figure_no_window_has_as_null_and_n_a(tmp_path: Path) -> None:
    trace, _ = trace_and_config(tmp_path)
    enqueue_only = write(tmp_path, "enqueue.yaml", 'actions: "enqueue"\n'
                         "tiers:\n- plugins: [{name: gang}]\n")
    code, out, _ = compare(str(trace), "--config", str(enqueue_only), "--output", "json")
    assert code == 2  # the jobs never started: left out, as simulate says
    import json

    figures = json.loads(out)["configurations"][str(enqueue_only)]
    assert figures["averageBoundedSlowdown"] is None and figures["averageWait"] is None
    _, out, _ = compare(str(trace), "--config", str(enqueue_only))
    assert "n/a" in out and "nan" not in out
