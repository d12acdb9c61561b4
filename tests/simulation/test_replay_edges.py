"""Replays at their edges: runs that start at time 0, whole gangs evicted at once,
gangs of unlike tasks, horizons, schedule periods, bad numbers, loaders' warnings,
and evictions that would undo each other for ever."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from batchsched.cli import main
from batchsched.scenario import load_scenario, parse_scenario
from batchsched.simulation import engine
from batchsched.simulation.scenario_workload import workload_from

DATA = Path(__file__).parent / "data" / "edges"


def simulate(capsys: pytest.CaptureFixture[str], name: str, *options: str
             ) -> tuple[int, dict[str, Any], str]:
    code = main(["simulate", str(DATA / f"{name}.yaml"), "--output", "json", "--no-progress",
                 *options])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def job(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(entry for entry in report["perJob"] if entry["job"].endswith(f"/{name}"))


def test_a_task_that_started_at_time_0_survives_an_eviction_on_time(
        capsys: pytest.CaptureFixture[str]) -> None:
    """batch (restart: task) loses b1 at 100; b2, started at 0 for 500 s, ends at 500."""
    code, report, _ = simulate(capsys, "survivor-from-zero")
    assert code == 0
    assert job(report, "batch")["end"] == 1150  # b1 reruns once urgent (100-150) is done
    # cpu seconds: b1 100 + 1000, b2 500 (not 600), urgent 50; 2 cpu over 1150 s.
    assert report["metrics"]["utilization"] == pytest.approx(1650 / 2300)


def test_a_task_evicted_as_its_run_ends_completes_instead_of_running_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "evicted-as-it-ends")
    assert code == 0
    low, high = job(report, "low"), job(report, "high")
    assert (low["start"], low["end"], low["restarts"]) == (0, 100, 0)
    assert (high["start"], high["end"]) == (100, 150)
    # cpu seconds: 2 x 100 + 50 over 2 cpu x 150 s.
    assert report["metrics"]["utilization"] == pytest.approx(250 / 300)


def test_a_gang_member_whose_run_ends_as_a_sibling_is_evicted_runs_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The gang restarts whole: b has done its 50 s when a is evicted at 50, and runs
    again with a (Volcano's RestartJob keeps no pod, finished or not)."""
    code, report, _ = simulate(capsys, "gang-sibling-ends-at-eviction")
    assert code == 0
    # a 2 cpu x (50 + 100) + b 1 cpu x (50 + 50) + h0 2 cpu x 10, over 3 cpu x 160 s.
    assert report["metrics"]["utilization"] == pytest.approx(420 / 480)


def test_a_gang_restart_runs_its_finished_members_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "gang-restart-reruns-finished-members")
    assert code == 0
    mpi = job(report, "mpi")
    assert (mpi["end"], mpi["restarts"]) == (1660, 1)
    # a 100 + b 400 (lost) + urgent 60 + a 100 + b 1000 cpu seconds, one cpu, 1660 s.
    assert report["metrics"]["utilization"] == pytest.approx(1660 / 1660)


def test_a_job_that_started_and_never_finished_is_listed_as_unfinished(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Out of the averages: the replay ran out of events with it running, so the
    status is 2 and stderr names it."""
    code, report, err = simulate(capsys, "started-never-finished")
    assert code == 2
    assert err == ("started-never-finished.yaml: job default/a did not finish: the replay "
                   "ended with a task of it never placed, and the averages leave it out\n")
    assert report["unfinished"] == ["default/a"] and report["metrics"]["unfinished"] == 1
    assert report["neverStarted"] == [] and report["metrics"]["finishedJobs"] == 1
    assert main(["simulate", str(DATA / "started-never-finished.yaml"), "--no-progress"]) == 2
    assert "(2 jobs, 1 finished, 1 unfinished, 0 never started)" in capsys.readouterr().out


@pytest.mark.parametrize(("options", "start"), [((), 40), (("--schedule-period", "1"), 40),
                                                (("--schedule-period", "7"), 42)])
def test_sla_admits_a_job_when_its_waiting_time_runs_out(
        capsys: pytest.CaptureFixture[str], options: tuple[str, ...], start: int) -> None:
    """No cluster event happens at 40: sla asks for a session then (on the period's grid
    with a period), as Volcano's periodic sessions would admit the job."""
    code, report, _ = simulate(capsys, "sla-waiting-time-runs-out", *options)
    assert code == 2  # a never places (see the file): out of the averages, said
    assert (job(report, "b")["start"], job(report, "b")["end"]) == (start, start + 100)


def test_a_tdm_window_that_opens_starts_the_job_waiting_for_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "tdm-window-opens")
    assert code == 0
    assert (job(report, "j")["start"], report["sessions"]) == (600, 2)


def test_a_victim_whose_cooldown_ends_is_preempted_then(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "cdp-cooldown-ends")
    assert code == 0
    assert job(report, "high")["start"] == 300
    assert (job(report, "low")["end"], job(report, "low")["restarts"]) == (1350, 1)


def test_wake_ups_that_change_nothing_stop_and_leave_the_clock(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """A job that never fits under tdm would be tried at every window for ever: after
    MAX_IDLE_WAKE_UPS fruitless wake-ups in a row with nothing else to come, none more,
    and the clock reads the last event's time, not the last wake-up's."""
    monkeypatch.setattr(engine, "MAX_IDLE_WAKE_UPS", 3)
    code, report, err = simulate(capsys, "tdm-never-fits")
    assert code == 2 and "job default/j never started" in err
    assert report["neverStarted"] == ["default/j"]
    assert (report["simulatedSeconds"], report["metrics"]["makespan"]) == (25, 25)
    assert report["sessions"] == 3 + 3  # two arrivals, k's end; three wake-ups, not a fourth
    assert "at tdm's wake-ups changed nothing, and nothing else is to come; no more of " \
           "its wake-ups" in caplog.text


def test_one_plugin_s_idle_wake_ups_leave_another_s_deadline(
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    code, report, _ = simulate(capsys, "sla-behind-idle-rescheduling")
    assert code == 0
    assert job(report, "big")["start"] == 36000
    assert "at rescheduling's wake-ups changed nothing" in caplog.text


def test_a_job_without_created_at_is_submitted_at_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "no-created-at")
    assert code == 0
    assert (job(report, "first")["submit"], job(report, "later")["submit"]) == (0, 100)
    assert report["metrics"]["makespan"] == 110


def test_a_job_without_created_at_is_submitted_at_the_file_s_now(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "no-created-at-with-now")
    assert code == 0
    assert job(report, "b")["submit"] - job(report, "a")["submit"] == 3600
    assert report["metrics"]["makespan"] == 3660


def test_a_pod_without_created_at_is_created_when_its_job_arrives(tmp_path: Path) -> None:
    """Not at the file's now: that put it after a sibling created after its job, and
    flipped the pods' order."""
    path = tmp_path / "pods.yaml"
    path.write_text("""version: 1
now: 1000
config: {actions: allocate, tiers: [{plugins: [{name: gang}]}]}
nodes: [{name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}]
jobs: [{name: j, minMember: 1, createdAt: 10}]
tasks:
- {name: late, job: j, createdAt: 20, requests: {cpu: 1},
   annotations: {batchsched.io/run-time: "5"}}
- {name: early, job: j, requests: {cpu: 1}, annotations: {batchsched.io/run-time: "5"}}
""")
    (job,) = workload_from(load_scenario(path)).jobs
    arrived = job.arrive()
    assert {t.name: t.creation_time for t in arrived.tasks.values()} == {"late": 20.0,
                                                                        "early": 10.0}


def test_nominees_that_cannot_all_fit_do_not_stall_the_replay(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = simulate(capsys, "preempt-nominees-stall")
    assert (code, err) == (0, "")
    assert report["neverStarted"] == [] and len(report["perJob"]) == 17
    # The clock stops at the last event that happened, not at a cancelled run's end.
    assert report["simulatedSeconds"] == report["metrics"]["makespan"]


@pytest.mark.parametrize(("name", "starts"), [
    ("node-lock-released", {"default/j1": 0, "default/j2": 100, "default/j3": 101}),
    ("node-lock-expires", {"default/j1": 1714564981}),
])
def test_a_node_lock_that_ends_opens_a_session(
        capsys: pytest.CaptureFixture[str], name: str, starts: dict[str, float]) -> None:
    # deviceshare asked for no session when a lock it refused would end: a job waited
    # for the next unrelated event, or for ever.
    code, report, _ = simulate(capsys, name)
    assert code == 0
    assert {j["job"]: j["start"] for j in report["perJob"]} == starts


def test_a_gang_evicted_whole_loses_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    _, report, _ = simulate(capsys, "whole-gang-evicted")
    assert job(report, "batch")["restarts"] == 1


def test_a_gang_evicted_twice_at_one_instant_loses_one_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The second eviction finds the gang already restarted: nothing more is lost."""
    _, report, _ = simulate(capsys, "gang-evicted-twice-at-once")
    assert job(report, "batch")["restarts"] == 1
    assert report["metrics"]["restarts"] == 1
    assert job(report, "batch")["start"] == 180  # the one rerun, once urgent2 is done


def test_a_gang_of_unlike_tasks_is_judged_by_its_smallest_members(
        capsys: pytest.CaptureFixture[str]) -> None:
    """min 2 of a:4, b:4, c:1 cpu on nodes of 4 and 1: a and c fit."""
    code, report, err = simulate(capsys, "mixed-gang")
    assert code == 0 and report["skipped"] == [] and "skipped" not in err


def test_the_clock_runs_to_the_horizon(capsys: pytest.CaptureFixture[str]) -> None:
    _, report, _ = simulate(capsys, "horizon", "--until", "50")
    assert report["simulatedSeconds"] == 50


@pytest.mark.parametrize("period", ["0", "-5", "nan", "inf"])
def test_a_schedule_period_that_is_no_positive_number_is_bad_input(
        capsys: pytest.CaptureFixture[str], period: str) -> None:
    code, _, err = simulate(capsys, "horizon", "--schedule-period", period)
    assert code == 2 and "--schedule-period must be a positive number" in err
    assert "Traceback" not in err


def test_the_workload_s_loader_warnings_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    _, report, err = simulate(capsys, "missing-queue")
    assert "queue 'nope' does not exist" in err
    assert report["jobs"] == 2


def test_sessions_at_one_instant_are_bounded(monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """Evictions coming back Pending at once may evict again without the clock moving:
    after MAX_SESSIONS_PER_INSTANT sessions since the last arrival or completion the
    replay goes on to the next event (here b's arrival at t=5 evicts, and the session
    the evictions ask for is the one too many)."""
    monkeypatch.setattr(engine, "MAX_SESSIONS_PER_INSTANT", 1)
    scenario = load_scenario(DATA / "period-evictions-undoing.yaml")
    simulator = engine.Simulator(workload_from(scenario), scenario.configuration)
    timeline = simulator.run()
    assert timeline.finished_count >= 1
    assert "without the clock moving" in caplog.text


def test_many_jobs_arriving_at_one_instant_are_no_eviction_loop(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Each arrival opens a session; the guard counts only the sessions since the last
    arrival or completion, so every job of a crowd arriving at once starts at once."""
    from batchsched.api import JobInfo, NodeInfo, PodGroup, Resource, TaskInfo
    from batchsched.simulation.workload import Workload, WorkloadJob

    monkeypatch.setattr(engine, "MAX_SESSIONS_PER_INSTANT", 3)

    def one_cpu(name: str) -> WorkloadJob:
        task = TaskInfo.create("default", f"{name}-0", f"default/{name}",
                               Resource.from_mapping({"cpu": 1}))
        return WorkloadJob(JobInfo.from_podgroup(PodGroup(name, min_member=1), tasks=[task]),
                           0.0, {task.uid: 100.0})

    node = NodeInfo.create("n1", Resource.from_mapping({"cpu": 10, "pods": 10}))
    jobs = tuple(one_cpu(f"j{k}") for k in range(8))
    timeline = engine.Simulator(Workload(name="crowd", nodes=(node,), jobs=jobs)).run()
    assert {record.start for record in timeline.jobs.values()} == {0.0}
    assert "without the clock moving" not in caplog.text


def test_ticks_asked_for_by_evictions_alone_are_bounded(monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """With a schedule period, evictions undoing each other from tick to tick move the
    clock instead of staying at one instant: after MAX_SESSIONS_PER_INSTANT such ticks
    in a row, none more until a job arrives or a task completes, and the replay ends."""
    monkeypatch.setattr(engine, "MAX_SESSIONS_PER_INSTANT", 20)
    scenario = load_scenario(DATA / "period-evictions-undoing.yaml")
    simulator = engine.Simulator(workload_from(scenario), scenario.configuration,
                                 schedule_period=10)
    timeline = simulator.run()
    assert timeline.finished_count == 3
    assert "ticks in a row asked for by evictions alone" in caplog.text


def test_gangs_restarting_each_other_for_ever_stop_the_replay(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Each cycle moves the clock (a member completes), so neither guard above fires:
    once a job lost MAX_RESTARTS_WITHOUT_PROGRESS runs while no job finished the replay
    stops, and the jobs left are unfinished (the CLI exits 2 naming them)."""
    monkeypatch.setattr(engine, "MAX_RESTARTS_WITHOUT_PROGRESS", 20)
    scenario = load_scenario(DATA / "restarts-back-and-forth.yaml")
    timeline = engine.Simulator(workload_from(scenario), scenario.configuration).run()
    assert timeline.finished_count == 0
    assert max(record.restarts for record in timeline.jobs.values()) == 20
    assert "lost 20 runs to evictions while no job finished" in caplog.text
    # A job still to arrive is said never to (it was in no count and on no line).
    caplog.clear()
    doc = yaml.safe_load((DATA / "restarts-back-and-forth.yaml").read_text())
    doc["jobs"].append({"name": "late", "minMember": 1, "createdAt": 100000})
    doc["tasks"].append({"name": "late-0", "job": "late", "requests": {"cpu": 1},
                         "annotations": {"batchsched.io/run-time": "5"}})
    late = parse_scenario(doc, source="<late>")
    engine.Simulator(workload_from(late), late.configuration).run()
    assert "and 1 job(s) still to arrive never do" in caplog.text
    # With a horizon too: stopped there, not cut by it (the jobs are unfinished).
    until = engine.Simulator(workload_from(scenario), scenario.configuration,
                             until=1e6).run()
    assert (until.cut, until.unfinished) == (False, ["default/high", "default/low"])
    assert until.end < 1e6


def test_one_preemption_of_many_jobs_is_no_loop(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """Many victims at once, each job losing one run, is no job losing runs over and
    over: the replay goes on and every job finishes."""
    monkeypatch.setattr(engine, "MAX_RESTARTS_WITHOUT_PROGRESS", 2)
    lows = range(8)
    text = "\n".join([
        "version: 1", "config:", '  actions: "enqueue, allocate, preempt"', "  tiers:",
        "  - plugins: [{name: priority}, {name: gang}, {name: conformance}]",
        "  - plugins: [{name: drf}, {name: predicates}, {name: nodeorder}]",
        "priorityClasses: [{name: low, value: 1}, {name: high, value: 100}]",
        "nodes: [{name: n0, allocatable: {cpu: 16, memory: 16Gi, pods: 40}}]", "jobs:",
        *(f"- {{name: low{i}, minMember: 1, priorityClassName: low}}" for i in lows),
        "- {name: high, minMember: 1, priorityClassName: high, createdAt: 100}", "tasks:",
        *(f"- {{name: l{s}{i}, job: low{i}, priorityClassName: low, requests: {{cpu: 1, "
          "memory: 1Gi}, annotations: {batchsched.io/run-time: '1000'}}"
          for i in lows for s in "ab"),
        "- {name: h0, job: high, priorityClassName: high, requests: {cpu: 8, memory: 8Gi}, "
        "annotations: {batchsched.io/run-time: '10'}}", ""])
    scenario = load_scenario(write_text(tmp_path / "one-preemption.yaml", text))
    timeline = engine.Simulator(workload_from(scenario), scenario.configuration).run()
    assert timeline.finished_count == 9
    assert [record.restarts for uid, record in sorted(timeline.jobs.items())
            if uid != "default/high"] == [1] * 8


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_job_built_in_code_is_created_when_it_arrives() -> None:
    # A prototype that leaves its creation time unset is created at its submit time:
    # job order (creation time, then uid) is then first come, first served, and the
    # HPC orders read the submit time from it.
    from batchsched.api import JobInfo, NodeInfo, PodGroup, Resource, TaskInfo
    from batchsched.simulation import Simulator
    from batchsched.simulation.workload import Workload, WorkloadJob

    def job(name: str, submit: float, run: float) -> WorkloadJob:
        task = TaskInfo.create("default", f"{name}-0", f"default/{name}",
                               Resource.from_mapping({"cpu": 1}))
        prototype = JobInfo.from_podgroup(PodGroup(name, min_member=1), tasks=[task])
        return WorkloadJob(prototype, submit, {task.uid: run})

    node = NodeInfo.create("n1", Resource.from_mapping({"cpu": 1, "pods": 10}))
    # "z" waits from t=10, "a" from t=20: "z" goes first when the node frees.
    jobs = (job("first", 0.0, 100.0), job("z", 10.0, 5.0), job("a", 20.0, 5.0))
    arrived = jobs[1].arrive()
    assert arrived.creation_time == arrived.podgroup.creation_time == 10.0
    assert jobs[1].prototype.creation_time == 0.0  # the prototype is left as it is
    timeline = Simulator(Workload(name="w", nodes=(node,), jobs=jobs)).run()
    assert timeline.jobs["default/z"].start == 100.0
    assert timeline.jobs["default/a"].start == 105.0


def test_a_queue_that_never_ran_counts_in_the_shares_and_in_jain(
        capsys: pytest.CaptureFixture[str]) -> None:
    """qa (weight 2) holds 2 of 4 cpu, qb (1) 1, qc (1) nothing for 100 s: shares 0.5,
    0.25, 0; over the weights 0.25, 0.25, 0; Jain 0.5^2 / (3 x 0.125) = 2/3."""
    _, report, _ = simulate(capsys, "metrics-queues2")
    assert report["metrics"]["queueShare"] == {"qa": 0.5, "qb": 0.25, "qc": 0.0}
    assert report["metrics"]["jainFairness"] == pytest.approx(2 / 3)


def test_a_job_that_arrives_after_the_last_end_and_never_starts_leaves_the_makespan(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster's work ends at 100; the clock runs on to C's arrival at 1000."""
    _, report, _ = simulate(capsys, "metrics-late")
    metrics = report["metrics"]
    assert report["simulatedSeconds"] == 1000
    assert metrics["makespan"] == 100
    assert metrics["utilization"] == pytest.approx(300 / 400)
    assert metrics["queueShare"] == {"qa": 0.5, "qb": 0.25, "qc": 0.0}


def test_no_finished_job_has_no_average(capsys: pytest.CaptureFixture[str]) -> None:
    """Bounded slowdown is at least 1 per job: over no job there is no average (null),
    where 0 was reported."""
    code, report, _ = simulate(capsys, "horizon", "--until", "5")
    assert code == 0 and report["metrics"]["finishedJobs"] == 0
    assert report["metrics"]["averageBoundedSlowdown"] is None
    assert report["metrics"]["averageWait"] is None
    main(["simulate", str(DATA / "horizon.yaml"), "--until", "5", "--no-progress"])
    assert "n/a (no job finished)" in capsys.readouterr().out


def test_a_stale_eviction_does_not_end_the_gang_s_new_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The gang restarted by the first eviction of an instant runs again at once; the
    second eviction was of the old run's pod: nothing more is lost."""
    _, report, _ = simulate(capsys, "gang-rerun-after-stale-eviction")
    assert job(report, "batch")["restarts"] == 1
    assert report["metrics"]["restarts"] == 1


def test_a_queue_of_weight_0_is_no_part_of_the_fairness(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = simulate(capsys, "queue-of-weight-0")
    assert code == 2 and "Traceback" not in err  # x never starts: out of the averages
    assert report["metrics"]["queueShare"] == {"a": 0.0, "b": 0.5}
    assert report["metrics"]["jainFairness"] == 1.0


def test_with_a_schedule_period_the_clock_stops_at_the_last_end(
        capsys: pytest.CaptureFixture[str]) -> None:
    """No session runs at a tick with nothing waiting: the clock does not go there."""
    _, report, _ = simulate(capsys, "horizon", "--schedule-period", "1000000")
    assert report["simulatedSeconds"] == report["metrics"]["makespan"]


def test_a_queue_only_the_workload_declares_serves_its_jobs_on_a_cluster_file(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The replay has the cluster file's queues and the workload's own besides (the
    job was left out with a warning only, exit 0: in no list of the report)."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("version: 1\nconfig: {actions: allocate}\n"
                       "queues: [{name: other, weight: 1}]\nnodes:\n"
                       "- {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}\n",
                       encoding="utf-8")
    workload = tmp_path / "workload.yaml"
    workload.write_text((DATA / "missing-queue.yaml").read_text(encoding="utf-8").replace(
        "queue: nope", "queue: research").replace(
        "queues: [{name: default, weight: 1}]",
        "queues: [{name: default, weight: 1}, {name: research, weight: 1}]"), encoding="utf-8")
    code = main(["simulate", str(workload), "--cluster", str(cluster), "--output", "json",
                 "--no-progress"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 0 and "research" not in err
    assert report["jobs"] == 3 and report["skipped"] == []
    assert report["metrics"]["finishedJobs"] == 3


def test_a_job_of_an_undeclared_queue_keeps_its_place_in_the_trace(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Skipped as an oversized job is: after the window is cut (its position counts;
    outside the window it is no error) and the clock starting at its submit time."""
    workload = tmp_path / "workload.yaml"
    workload.write_text(
        "version: 1\nqueues: [{name: qa, weight: 1}]\n"
        "nodes: [{name: n1, allocatable: {cpu: 1, pods: 10}}]\njobs:\n"
        "- {name: lost, queue: nosuch, minMember: 1, createdAt: 0}\n"
        "- {name: a, queue: qa, minMember: 1, createdAt: 100}\n"
        "- {name: b, queue: qa, minMember: 1, createdAt: 110}\ntasks:\n"
        + "".join(f"- {{name: {j}-0, job: {j}, requests: {{cpu: 1}}, annotations: "
                  f"{{batchsched.io/run-time: '100'}}}}\n" for j in ("lost", "a", "b")),
        encoding="utf-8")

    def replay(*options: str) -> tuple[int, dict[str, Any]]:
        code = main(["simulate", str(workload), "--output", "json", "--no-progress",
                     *options])
        return code, json.loads(capsys.readouterr().out)

    code, report = replay()
    assert code == 2 and [s["job"] for s in report["skipped"]] == ["default/lost"]
    assert report["metrics"]["makespan"] == 300  # from 0, the skipped job's submit time
    code, report = replay("--until", "50")
    assert code == 2 and report["simulatedSeconds"] == 50
    assert [job["start"] for job in report["perJob"]] == [None, None]  # not arrived
    code, report = replay("--first-job", "1", "--jobs", "1")
    assert code == 0 and [j["job"] for j in report["perJob"]] == ["default/a"]
    assert report["skipped"] == []


@pytest.mark.parametrize(("now", "period", "tick"), [
    (5, 10, 10), (10, 10, 20), (15, 10, 20), (0, 10, 10),
    # On a multiple within float rounding: 0.5 // 0.1 is 4.0, 0.3 // 0.1 is 2.0.
    (0.5, 0.1, 6 * 0.1), (0.3, 0.1, 4 * 0.1), (0.35, 0.1, 4 * 0.1),
    # At Unix-epoch times a second off a multiple is off it (1704067200 is one of 3).
    (1704067205, 3, 1704067206), (1704067206, 3, 1704067209), (1704067206.5, 3, 1704067209),
])
def test_the_next_tick_is_the_first_multiple_strictly_after(now: float, period: float,
                                                            tick: float) -> None:
    after = engine.next_multiple(now, period)
    assert after == tick and after > now


def test_a_far_wake_up_holds_back_no_tick(capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = simulate(capsys, "far-wake-up-and-a-job-that-fits", "--schedule-period", "10")
    assert code == 2  # a never starts (see the file): out of the averages, said
    assert job(report, "c")["start"] == 20


@pytest.mark.parametrize(("at", "period", "tick"), [
    (40.0, 10.0, 40.0), (math.nextafter(310.0, math.inf), 10.0, 320.0),
    (0.1 + 0.2, 0.1, 3 * 0.1), (0.30000000000000004 + 1e-17, 0.1, 3 * 0.1), (0.31, 0.1, 4 * 0.1)])
def test_a_wake_up_s_tick_is_the_first_multiple_not_before_it(at: float, period: float,
                                                               tick: float) -> None:
    assert engine.first_multiple_from(at, period) == tick


def test_a_wake_up_that_starts_a_task_for_ever_keeps_the_clock() -> None:
    """A session at a wake-up that starts a task that never ends is no idle wake-up:
    the replay ends at its instant, not at the last event before it."""
    scenario = load_scenario(DATA / "sla-waiting-time-runs-out.yaml")
    workload = workload_from(scenario)
    jobs = tuple(attrs.evolve(j, run_times={k: math.inf for k in j.run_times})
                 if j.prototype.name == "b" else j for j in workload.jobs)
    simulator = engine.Simulator(attrs.evolve(workload, jobs=jobs), scenario.configuration)
    timeline = simulator.run()
    assert (timeline.jobs["default/b"].start, timeline.end) == (40.0, 40.0)
    assert timeline.unfinished == ["default/b"]


def test_the_text_summary_counts_the_jobs_the_horizon_came_before(
        capsys: pytest.CaptureFixture[str]) -> None:
    """b and c arrive at t=10; a horizon at 5 comes before them: the summary says so
    rather than counting 3 jobs of which only 1 is anywhere."""
    assert main(["simulate", str(DATA / "horizon.yaml"), "--until", "5",
                 "--no-progress"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("(3 jobs, 0 finished, 1 unfinished, 0 never started, "
                          "2 not arrived when the replay ended)")


def test_a_sampled_arrival_order_without_an_arrived_load_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(DATA / "horizon.yaml"), "--arrival-order", "sampled",
                 "--no-progress"]) == 2
    assert "--arrival-order sampled applies with --arrived-load" in capsys.readouterr().err


def test_a_run_of_no_time_restarted_by_an_eviction_loop_does_not_keep_it_going(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Each session binds gang g or evicts its y; g restarts whole, so x (a run of no
    time) starts and completes again at the same instant every cycle. That completion
    began at this instant: it is no change from outside, and the guard still trips."""
    from batchsched import (
        ActionSpec,
        JobInfo,
        NodeInfo,
        PodGroup,
        Resource,
        Statement,
        TaskInfo,
        TaskStatus,
        hookimpl,
    )
    from batchsched.conf import configuration_from_text
    from batchsched.framework.registry import Registry
    from batchsched.simulation.workload import Workload, WorkloadJob

    class FirstFit:
        name = "first-fit"

        def initialize(self) -> None: ...

        def uninitialize(self) -> None: ...

        def execute(self, ssn: Any) -> None:
            for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
                statement = Statement(ssn)
                for task in sorted(job.tasks_in(TaskStatus.PENDING).values(),
                                   key=lambda t: t.uid):
                    node = next((n for n in ssn.node_list
                                 if task.init_resreq.less_equal(n.idle)), None)
                    if node is not None:
                        statement.allocate(task, node)
                if ssn.job_ready(job):
                    statement.commit()
                else:
                    statement.discard()

    class Kicker:
        name = "kicker"

        def initialize(self) -> None: ...

        def uninitialize(self) -> None: ...

        def execute(self, ssn: Any) -> None:
            job = ssn.jobs.get("default/g")
            y = job.tasks.get("default/y") if job is not None else None
            if y is not None and y.status in (TaskStatus.BOUND, TaskStatus.RUNNING):
                statement = Statement(ssn)
                statement.evict(y, "kick")
                statement.commit()

    class Provider:
        @hookimpl
        def batchsched_register_actions(self) -> list[ActionSpec]:
            return [ActionSpec("first-fit", FirstFit), ActionSpec("kicker", Kicker)]

    monkeypatch.setattr(engine, "MAX_SESSIONS_PER_INSTANT", 20)
    registry = Registry(autoload=False)
    registry.register(Provider(), name="loop")
    x = TaskInfo.create("default", "x", "default/g", Resource.from_mapping({"cpu": 1}))
    y = TaskInfo.create("default", "y", "default/g", Resource.from_mapping({"cpu": 1}))
    gang = WorkloadJob(JobInfo.from_podgroup(PodGroup("g", min_member=2), tasks=[x, y]), 0.0,
                       {x.uid: 0.0, y.uid: 100.0})
    big = TaskInfo.create("default", "w0", "default/w", Resource.from_mapping({"cpu": 8}))
    waits = WorkloadJob(JobInfo.from_podgroup(PodGroup("w", min_member=1), tasks=[big]), 0.0,
                        {big.uid: 1.0})
    node = NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10}))
    def runaway(simulator: Any) -> None:  # fail, rather than loop for ever, if it regresses
        assert simulator.sessions < 500, "the guard did not trip"

    simulator = engine.Simulator(Workload(name="loop", nodes=(node,), jobs=(gang, waits)),
                                 configuration_from_text('actions: "first-fit, kicker"\n'
                                                         "tiers: []\n"), registry=registry,
                                 observe=runaway)
    simulator.run()
    assert simulator.sessions < 100
    assert "sessions at t=0 without the clock moving" in caplog.text


@pytest.mark.parametrize("caller_froze", [False, True])
def test_a_replay_leaves_the_garbage_collector_as_it_found_it(caller_froze: bool) -> None:
    """The replay keeps full collections off the objects alive before it, and thaws
    them after; objects the caller froze stay frozen."""
    import gc

    scenario = load_scenario(DATA / "missing-queue.yaml")
    workload = workload_from(scenario)
    mine = [object() for _ in range(10)]
    if caller_froze:
        gc.freeze()
    before = gc.get_freeze_count()
    try:
        engine.Simulator(workload.without_oversized(), scenario.configuration).run()
        assert gc.get_freeze_count() == before
    finally:
        gc.unfreeze()
    assert mine


def test_a_cluster_file_without_a_default_queue_keeps_the_workload_s(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The cluster file's implicit default queue replaced the workload's declared one
    (its 1-cpu capability was lost: b started at 0 beside a)."""
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "version: 1\nconfig:\n  actions: \"enqueue, allocate\"\n  tiers:\n"
        "  - plugins: [{name: gang}]\n  - plugins: [{name: predicates}, {name: proportion}]\n"
        "queues: [{name: default, capability: {cpu: 1}}]\n"
        "nodes: [{name: n1, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}]\njobs:\n"
        "- {name: a, minMember: 1, createdAt: 0}\n- {name: b, minMember: 1, createdAt: 0}\n"
        "tasks:\n"
        "- {name: a1, job: a, requests: {cpu: 1}, annotations: {batchsched.io/run-time: '10'}}\n"
        "- {name: b1, job: b, requests: {cpu: 1}, annotations: {batchsched.io/run-time: '10'}}\n",
        encoding="utf-8")
    cluster = tmp_path / "c.yaml"
    cluster.write_text("version: 1\nnodes: [{name: n1, allocatable: {cpu: 4, memory: 4Gi, "
                       "pods: 10}}]\n", encoding="utf-8")
    makespans = []
    for options in ([], ["--cluster", str(cluster)]):
        assert main(["simulate", str(workload), "--output", "json", "--no-progress",
                     *options]) == 0
        makespans.append(json.loads(capsys.readouterr().out)["metrics"]["makespan"])
    assert makespans == [20, 20]


def test_a_run_time_past_the_clock_s_range_is_refused_outside_the_window(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """As an SWF trace's every line is checked: b is out of the window, still refused."""
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "version: 1\nnodes: [{name: n1, allocatable: {cpu: 2, memory: 2Gi, pods: 10}}]\n"
        "jobs:\n- {name: a, minMember: 1, createdAt: 0}\n- {name: b, minMember: 1, "
        "createdAt: 10}\ntasks:\n"
        "- {name: a1, job: a, requests: {cpu: 1}, annotations: {batchsched.io/run-time: '10'}}\n"
        "- {name: b1, job: b, requests: {cpu: 1}, annotations: {batchsched.io/run-time: "
        "'2e15'}}\n", encoding="utf-8")
    assert main(["simulate", str(workload), "--jobs", "1", "--no-progress"]) == 2
    assert "task default/b1: batchsched.io/run-time: 2e+15 is more seconds than a replay " \
           "counts exactly" in capsys.readouterr().err
