"""``batchsched simulate`` as outside tools use it: the JSON contract, errors on stderr
with exit 2, and batchsched's own workload format with evictions and restarts."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from sim_support import HEADER, STRICT, swf_line, write

from batchsched.cli import main

CONTRACT_METRICS = {"averageBoundedSlowdown", "averageWait", "averageResponse", "makespan",
                    "utilization"}
CONTRACT_JOB = {"job", "submit", "start", "end", "boundedSlowdown"}


def simulate(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["simulate", *args, "--no-progress"])
    return code, out.getvalue(), err.getvalue()


def test_the_json_report_has_the_contract_keys(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join([
        swf_line(1, 0, 100, 2), swf_line(2, 10, 5, 1), swf_line(3, 20, 50, 1)]) + "\n")
    config = write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    code, out, err = simulate(str(trace), "--config", str(config), "--output", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["workload"] == "t.swf" and data["jobs"] == 3
    assert set(data["metrics"]) >= CONTRACT_METRICS
    assert all(set(job) >= CONTRACT_JOB for job in data["perJob"])
    # FCFS, no backfilling: job 2 waits for job 1 (both nodes), job 3 behind it.
    starts = {job["job"]: job["start"] for job in data["perJob"]}
    assert starts == {"swf/job-1": 0.0, "swf/job-2": 100.0, "swf/job-3": 100.0}
    assert data["metrics"]["makespan"] == 150.0
    assert data["simulatedSeconds"] == 150.0
    job2 = next(job for job in data["perJob"] if job["job"] == "swf/job-2")
    assert job2["boundedSlowdown"] == pytest.approx((90 + 5) / 10)


def test_first_job_and_jobs_pick_a_window(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join(
        swf_line(i, i * 10, 5, 1) for i in range(1, 6)) + "\n")
    code, out, _ = simulate(str(trace), "--first-job", "1", "--jobs", "2", "--output", "json")
    assert code == 0
    assert [job["job"] for job in json.loads(out)["perJob"]] == ["swf/job-2", "swf/job-3"]


def test_a_malformed_trace_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    trace = write(tmp_path, "bad.swf", HEADER.format(nodes=2, procs=2) + "1 0 -1 ten 1\n")
    code, out, err = simulate(str(trace))
    assert (code, out) == (2, "")
    # The file as given (its base name alone may be another file's).
    assert err.strip().splitlines() == [f"batchsched: error: {trace}:4: a job line has 18 "
                                        "fields, this one 5"]


def test_a_trace_with_a_byte_order_mark_replays(tmp_path: Path) -> None:
    # Its first line (a comment) was read as a job line.
    trace = write(tmp_path, "bom.swf", "\ufeff" + HEADER.format(nodes=2, procs=2)
                  + swf_line(1, 0, 10, 1) + "\n")
    code, out, err = simulate(str(trace), "--output", "json")
    assert (code, err) == (0, "")
    assert [job["job"] for job in json.loads(out)["perJob"]] == ["swf/job-1"]


def test_a_job_larger_than_the_cluster_is_reported_skipped_and_exit_is_2(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join([
        swf_line(1, 0, 10, 1), swf_line(2, 5, 10, 4)]) + "\n")
    code, out, err = simulate(str(trace), "--output", "json")
    assert code == 2
    assert "t.swf:5: job swf/job-2 skipped" in err
    data = json.loads(out)
    assert [job["job"] for job in data["perJob"]] == ["swf/job-1"]
    assert data["skipped"][0]["job"] == "swf/job-2"


def test_an_unknown_workload_kind_is_refused(tmp_path: Path) -> None:
    code, _, err = simulate(str(write(tmp_path, "w.txt", "")))
    assert code == 2 and "unknown workload kind '.txt'" in err


WORKLOAD = """
version: 1
name: preemption in time
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
priorityClasses:
- {name: low, value: 1}
- {name: high, value: 100}
nodes:
- {name: n1, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 1, memory: 1Gi, pods: 10}}
jobs:
- {name: batch, minMember: RESTART_MIN, priorityClassName: low, createdAt: 0,
   annotations: {batchsched.io/restart: RESTART}}
- {name: urgent, minMember: 1, priorityClassName: high, createdAt: 100}
tasks:
- {name: b1, job: batch, priorityClassName: low, requests: {cpu: 1, memory: 512Mi},
   annotations: {batchsched.io/run-time: "1000"}}
- {name: b2, job: batch, priorityClassName: low, requests: {cpu: 1, memory: 512Mi},
   annotations: {batchsched.io/run-time: "1000"}}
- {name: u1, job: urgent, priorityClassName: high, requests: {cpu: 1, memory: 512Mi},
   annotations: {batchsched.io/run-time: 50s}}
"""


@pytest.mark.parametrize(("restart", "minimum", "batch_end"), [
    ("gang", 2, 1150.0),   # both members start again once urgent is done (t=150)
    ("task", 1, 1150.0),   # only the victim starts again, at t=150
])
def test_an_evicted_gang_restarts_by_its_rule(
    tmp_path: Path, restart: str, minimum: int, batch_end: float
) -> None:
    path = write(tmp_path, "w.yaml", WORKLOAD.replace("RESTART_MIN", str(minimum))
                 .replace("RESTART", restart))
    code, out, err = simulate(str(path), "--output", "json")
    assert (code, err) == (0, "")
    jobs = {job["job"]: job for job in json.loads(out)["perJob"]}
    assert jobs["default/urgent"]["start"] == 100.0
    assert jobs["default/urgent"]["end"] == 150.0
    assert jobs["default/batch"]["restarts"] == 1
    assert jobs["default/batch"]["end"] == batch_end


def test_a_workload_task_without_a_run_time_is_refused(tmp_path: Path) -> None:
    text = WORKLOAD.replace('annotations: {batchsched.io/run-time: 50s}', "annotations: {}")
    path = write(tmp_path, "w.yaml", text.replace("RESTART_MIN", "2").replace("RESTART", "gang"))
    code, _, err = simulate(str(path))
    assert code == 2
    assert "w.yaml: tasks[2] (default/u1).annotations: batchsched.io/run-time is missing" in err


def test_an_unreadable_requested_run_time_is_a_warning_naming_the_field(tmp_path: Path) -> None:
    text = WORKLOAD.replace("createdAt: 100}",
                            "createdAt: 100, annotations: {batchsched.io/requested-runtime: soon}}")
    path = write(tmp_path, "w.yaml", text.replace("RESTART_MIN", "2").replace("RESTART", "gang"))
    code, _, err = simulate(str(path))
    assert code == 0
    assert ("w.yaml: jobs[1] (default/urgent).annotations.batchsched.io/requested-runtime: "
            "'soon' is neither seconds nor a Go duration; the job states no requested run "
            "time") in err


def test_compare_puts_configurations_side_by_side(tmp_path: Path) -> None:
    lines = [swf_line(i, i * 5, 100 if i % 3 else 5, 1 + i % 2) for i in range(1, 13)]
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join(lines) + "\n")
    fcfs = write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    sjf = write(tmp_path, "sjf.yaml", STRICT.format(policy="sjf"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["compare", str(trace), "--config", str(fcfs), "--config", str(sjf),
                     "--windows", "0,4", "--jobs", "6", "--workers", "1", "--output", "json"])
    assert code == 0
    table = json.loads(out.getvalue())["configurations"]
    assert set(table) == {str(fcfs), str(sjf)}
    for config in (fcfs, sjf):
        windows = []
        for first in (0, 4):
            _, single, _ = simulate(str(trace), "--config", str(config), "--first-job",
                                    str(first), "--jobs", "6", "--output", "json")
            windows.append(json.loads(single)["metrics"]["averageBoundedSlowdown"])
        assert table[str(config)]["averageBoundedSlowdown"] == pytest.approx(sum(windows) / 2)


def compare(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compare", *args, "--workers", "1"])
    return code, out.getvalue(), err.getvalue()


def test_compare_reports_a_job_larger_than_the_cluster_as_simulate_does(tmp_path: Path) -> None:
    trace = write(tmp_path, "big.swf", HEADER.format(nodes=4, procs=4) + "\n".join([
        swf_line(1, 0, 100, 1), swf_line(2, 0, 100, 8)]) + "\n")
    fcfs = write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    sjf = write(tmp_path, "sjf.yaml", STRICT.format(policy="sjf"))
    code, out, err = compare(str(trace), "--config", str(fcfs), "--config", str(sjf))
    _, _, simulated = simulate(str(trace), "--config", str(fcfs))
    assert code == 2 and "averageBoundedSlowdown" in out  # the table all the same
    assert err == simulated  # one line, however many configurations left it out
    assert err.startswith(f"{trace}:5: job swf/job-2 skipped:")


def test_compare_names_the_files_as_given_as_simulate_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A YAML workload's loader names it by its path: as given, not resolved."""
    write(tmp_path, "wl.yaml", """version: 1
config: {actions: allocate, tiers: [{plugins: [{name: gang}]}]}
nodes: [{name: n1, allocatable: {cpu: 2, memory: 2Gi, pods: 10}}]
jobs:
- {name: a, minMember: 1, createdAt: 0}
- {name: huge, minMember: 1, createdAt: 5}
tasks:
- {name: a0, job: a, requests: {cpu: 2}, annotations: {batchsched.io/run-time: "100"}}
- {name: h0, job: huge, requests: {cpu: 8}, annotations: {batchsched.io/run-time: "100"}}
""")
    write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    monkeypatch.chdir(tmp_path)
    _, _, err = compare("wl.yaml", "--config", "fcfs.yaml")
    _, _, simulated = simulate("wl.yaml", "--config", "fcfs.yaml")
    assert err == simulated
    assert err.startswith("wl.yaml: jobs[1] (default/huge): job default/huge skipped:")


def test_compare_refuses_a_negative_window_in_one_line(tmp_path: Path) -> None:
    workload = write(tmp_path, "w.swf", HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 5, 1))
    config = write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    for option in (["--windows", "-1"], ["--jobs", "-2"]):
        code, out, err = compare(str(workload), "--config", str(config), *option)
        assert (code, out) == (2, "")
        assert err == "batchsched: error: w.swf: --windows and --jobs must not be negative\n"


def test_compare_refuses_a_window_given_twice(tmp_path: Path) -> None:
    # It was counted twice in the mean.
    workload = write(tmp_path, "w.swf", HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 5, 1))
    config = write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    code, out, err = compare(str(workload), "--config", str(config), "--windows", "0,0")
    assert (code, out) == (2, "")
    assert err == "batchsched: error: --windows '0,0': position(s) 0 given twice\n"


def test_compare_labels_configurations_of_one_name_by_their_paths(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 5, 1))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write(tmp_path / "a", "sjf.yaml", STRICT.format(policy="sjf"))
    second = write(tmp_path / "b", "sjf.yaml", STRICT.format(policy="priority"))
    code, out, _ = compare(str(trace), "--config", str(first), "--config", str(second))
    assert code == 0
    header = out.splitlines()[0].split()
    assert header == [str(first), str(second)]


@pytest.mark.parametrize(("option", "problem"), [
    (["--until", "nan"], "--until must be a number of seconds from 0 to 1e+15, not nan"),
    (["--until", "-5"], "--until must be a number of seconds from 0 to 1e+15, not -5"),
    # JSON holds no infinity: the report of such a horizon would not parse.
    (["--until", "inf"], "--until must be a number of seconds from 0 to 1e+15, not inf"),
    (["--until", "1e300"], "--until must be a number of seconds from 0 to 1e+15, not 1e+300"),
    (["--schedule-period", "0"],
     "--schedule-period must be a positive number of seconds up to 1e+12, not 0"),
    (["--arrived-load", "-1"], "--arrived-load must be a positive number, not -1.0"),
    (["--arrived-load", "nan"], "--arrived-load must be a positive number, not nan"),
])
def test_a_horizon_that_is_no_time_is_bad_input(tmp_path: Path, option: list[str],
                                                problem: str) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 5, 1))
    code, out, err = simulate(str(trace), *option)
    assert (code, out) == (2, "")
    # The option is named, with the workload as given, before the workload is read.
    assert err == f"batchsched: error: {trace}: {problem}\n" or problem.startswith("--arr")


def test_the_clock_starts_at_job_k_s_submit_time(tmp_path: Path) -> None:
    """The contract's rule, also when a later job number was submitted earlier: that job
    arrives when the clock starts, and waits from its own submit time."""
    trace = write(tmp_path, "t.swf", "; MaxNodes: 4\n" + "\n".join([
        swf_line(1, 100, 100, 1), swf_line(2, 50, 100, 1)]) + "\n")
    code, out, _ = simulate(str(trace), "--output", "json")
    data = json.loads(out)
    assert code == 0 and data["simulatedSeconds"] == 100
    jobs = {job["job"]: job for job in data["perJob"]}
    assert jobs["swf/job-2"]["start"] == 100 and jobs["swf/job-2"]["submit"] == 50


def test_report_writes_the_json_and_the_plots_when_matplotlib_is_there(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join(
        swf_line(i, i * 10, 50, 1 + i % 2) for i in range(1, 7)) + "\n")
    code, out, _ = simulate(str(trace), "--output", "json", "--report", str(tmp_path / "r"))
    assert code == 0
    assert json.loads((tmp_path / "r" / "report.json").read_text()) == json.loads(out)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert {p.name for p in (tmp_path / "r").iterdir()} == {
        "report.json", "utilization.png", "slowdown.png"}


def test_a_report_path_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 5, 1)
                  + "\n")
    taken = write(tmp_path, "afile", "")
    code, out, err = simulate(str(trace), "--output", "json", "--report", str(taken))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "afile" in err and "--report: not a directory" in err


def test_the_workload_example_of_the_documentation_replays_as_it_says(tmp_path: Path) -> None:
    """docs/simulation.md's own workload: urgent preempts, batch restarts whole."""
    import re

    doc = (Path(__file__).parents[2] / "docs" / "simulation.md").read_text(encoding="utf-8")
    example = next(block for block in re.findall(r"```yaml\n(.*?)```", doc, flags=re.S)
                   if "batchsched.io/run-time" in block)
    workload = write(tmp_path, "example.yaml", example)
    code, out, err = simulate(str(workload), "--output", "json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    jobs = {job["job"]: job for job in report["perJob"]}
    assert report["metrics"]["restarts"] == 1
    assert (jobs["default/urgent"]["start"], jobs["default/urgent"]["end"]) == (300, 360)
    assert (jobs["default/batch"]["restarts"], jobs["default/batch"]["end"]) == (1, 1360)


STUCK = """
version: 1
config:
  actions: "allocate"
  tiers:
  - plugins: [{name: gang}, {name: predicates}]
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 2Gi, pods: 10}}
jobs:
- {name: runs, minMember: 1, createdAt: 0}
- {name: stuck, minMember: 1, createdAt: 0}
tasks:
- {name: r1, job: runs, requests: {cpu: 1}, annotations: {batchsched.io/run-time: "100"}}
- {name: s1, job: stuck, requests: {cpu: 1}, nodeSelector: {zone: nowhere},
   annotations: {batchsched.io/run-time: "100"}}
"""


def test_a_job_that_never_started_is_reported_and_exit_is_2(tmp_path: Path) -> None:
    """The averages are over every replayed job, or the exit status says they are not:
    a job that fits the cluster's totals but that no session placed before the replay
    ran out of events is named on stderr, and the status is 2 (the report all the
    same)."""
    code, out, err = simulate(str(write(tmp_path, "w.yaml", STUCK)), "--output", "json")
    data = json.loads(out)
    assert data["neverStarted"] == ["default/stuck"]
    assert code == 2
    assert err == ("w.yaml: job default/stuck never started: the replay ended with it "
                   "waiting, and the averages leave it out\n")
    config = write(tmp_path, "c.yaml", "actions: allocate\ntiers:\n- plugins: [{name: gang}, "
                   "{name: predicates}]\n")
    compared = compare(str(tmp_path / "w.yaml"), "--config", str(config))
    assert compared[0] == 2
    assert compared[2] == err.replace("\n", f" (--config {config})\n")


def test_a_job_cut_by_the_horizon_is_no_error(tmp_path: Path) -> None:
    text = STUCK.replace(", nodeSelector: {zone: nowhere}", "").replace("{cpu: 1}", "{cpu: 2}")
    code, out, err = simulate(str(write(tmp_path, "w.yaml", text)), "--until", "50",
                              "--output", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["neverStarted"] == ["default/stuck"]


def test_a_workload_or_cluster_file_without_config_runs_with_the_default(
        tmp_path: Path) -> None:
    """The contract's default configuration: a workload file need not carry one, and a
    cluster file's configuration is never read."""
    text = STUCK.replace('  actions: "allocate"\n  tiers:\n  - plugins: [{name: gang}, '
                         '{name: predicates}]\n', "").replace("config:\n", "")
    text = text.replace(", nodeSelector: {zone: nowhere}", "")
    code, out, err = simulate(str(write(tmp_path, "w.yaml", text)), "--output", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["metrics"]["finishedJobs"] == 2
    code, out, err = _eight_processors_on_eight_cpu(tmp_path, header_nodes=1)
    assert (code, err) == (0, "")


def _eight_processors_on_eight_cpu(tmp_path: Path, header_nodes: int) -> tuple[int, str, str]:
    """An 8-processor SWF job (header: ``header_nodes`` nodes, 8 processors) replayed
    on a cluster file (no ``config``) of one 8-cpu node."""
    cluster = write(tmp_path, "cluster.yaml", "version: 1\nnodes:\n"
                    "- {name: n1, allocatable: {cpu: 8, memory: 8Gi, pods: 10}}\n")
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=header_nodes, procs=8)
                  + swf_line(1, 0, 10, 8) + "\n")
    return simulate(str(trace), "--cluster", str(cluster), "--output", "json")


def test_an_swf_job_on_a_given_cluster_asks_no_more_cpu_than_its_processors(
        tmp_path: Path) -> None:
    """MaxProcs / MaxNodes = 8/3 cpu per task: three tasks of an 8-processor job ask at
    most 8 cpu, however the share rounds to millicores."""
    code, out, err = _eight_processors_on_eight_cpu(tmp_path, header_nodes=3)
    assert (code, err) == (0, "")
    assert json.loads(out)["metrics"]["finishedJobs"] == 1


def test_compare_refuses_arguments_a_plugin_refuses_before_any_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchsched.simulation import sweep

    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 10, 1)
                  + "\n")
    fcfs = write(tmp_path, "fcfs.yaml", STRICT.format(policy="priority"))
    bad = write(tmp_path, "bad.yaml", STRICT.format(policy="wfp3")
                + "    arguments: {wfp3.waitingTime: nonsense}\n")
    ran: list[object] = []
    monkeypatch.setattr(sweep, "sweep", lambda specs, **options: ran.append(specs) or [])
    code, _, err = compare(str(trace), "--config", str(fcfs), "--config", str(bad))
    assert code == 2 and ran == []
    assert "bad.yaml" in err and "wfp3.waitingTime" in err


def test_the_exit_status_survives_a_reader_that_went_away(tmp_path: Path) -> None:
    """``simulate ... | head`` under ``pipefail``: a skipped job is still exit 2, and
    the reader leaving is no traceback."""
    import subprocess
    import sys

    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join([
        swf_line(1, 0, 10, 1), swf_line(2, 5, 10, 4)]) + "\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "batchsched", "simulate", str(trace), "--output", "json",
         "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the report is written
    with process.stderr:
        err = process.stderr.read().decode()
    assert process.wait() == 2
    assert "skipped" in err and "Traceback" not in err and "Exception" not in err


def test_a_workload_s_jobs_run_in_the_queues_of_the_cluster_file(tmp_path: Path) -> None:
    """The cluster file's queues are the cluster's: the workload need not declare them
    too (a job of a queue neither has is left out, listed as skipped, exit 2)."""
    cluster = write(tmp_path, "cluster.yaml", "version: 1\n"
                    "queues: [{name: q1, weight: 1}, {name: q2, weight: 3}]\n"
                    "nodes: [{name: c1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}]\n")
    workload = write(tmp_path, "w.yaml", "version: 1\njobs:\n"
                     "- {name: a, queue: q1, minMember: 1, createdAt: 0}\n"
                     "- {name: b, queue: q2, minMember: 1, createdAt: 5}\n"
                     "- {name: c, queue: q3, minMember: 1, createdAt: 5}\n"
                     "tasks:\n"
                     "- {name: a1, job: a, requests: {cpu: 4}, "
                     "annotations: {batchsched.io/run-time: '10'}}\n"
                     "- {name: b1, job: b, requests: {cpu: 4}, "
                     "annotations: {batchsched.io/run-time: '10'}}\n"
                     "- {name: c1, job: c, requests: {cpu: 4}, "
                     "annotations: {batchsched.io/run-time: '10'}}\n")
    code, out, err = simulate(str(workload), "--cluster", str(cluster), "--output", "json")
    assert code == 2
    data = json.loads(out)
    assert data["metrics"]["finishedJobs"] == 2
    assert [s["job"] for s in data["skipped"]] == ["default/c"]
    assert err.count("queue 'q3' does not exist") == 1 and "warning" not in err


def test_a_horizon_of_zero_lists_every_queue_at_zero(tmp_path: Path) -> None:
    # queueShare came back empty: the docs list every queue some job was submitted to.
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2) + "\n".join([
        swf_line(1, 0, 10, 1), swf_line(2, 5, 10, 1)]) + "\n")
    _, out, _ = simulate(str(trace), "--until", "0", "--output", "json")
    metrics = json.loads(out)["metrics"]
    assert (metrics["queueShare"], metrics["jainFairness"]) == ({"default": 0.0}, 1.0)


def test_a_cluster_file_brings_the_objects_that_describe_its_nodes(tmp_path: Path) -> None:
    # Its nodeShards were dropped: sharded hard, nothing was ever placed.
    workload = write(tmp_path, "work.yaml", """version: 1
config:
  actions: "enqueue, allocate"
  tiers: [{plugins: [{name: priority}, {name: gang}, {name: predicates}]}]
  sharding: {mode: hard, name: mine}
nodes: [{name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}]
jobs: [{name: j1, minMember: 1, createdAt: 0}]
tasks: [{name: a, job: j1, requests: {cpu: 1}, annotations: {batchsched.io/run-time: "60"}}]
""")
    cluster = write(tmp_path, "cluster.yaml", """version: 1
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}
nodeShards: [{name: mine, nodesDesired: [n2]}]
""")
    code, out, err = simulate(str(workload), "--cluster", str(cluster), "--output", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["neverStarted"] == []


def test_a_cluster_file_s_devices_serve_the_workload_s_claim_templates() -> None:
    # The cluster file's DRA objects replaced the workload's whole, templates included:
    # its pods' claims could never be made.
    data = Path(__file__).parent / "data" / "dra-split"
    code, out, err = simulate(str(data / "workload.yaml"), "--cluster",
                              str(data / "cluster.yaml"), "--output", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["neverStarted"] == []
