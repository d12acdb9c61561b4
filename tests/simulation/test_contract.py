"""``batchsched simulate`` against its public contract (the simulation contract page):
each case is a point where the command had drifted from it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sim_support import HEADER, swf_line, write

from batchsched.cli import main
from batchsched.errors import WorkloadError
from batchsched.simulation.swf import swf_workload


def simulate(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["simulate", *args, "--output", "json", "--no-progress"])
    return code, (json.loads(out.getvalue()) if out.getvalue() else None), err.getvalue()


def workload(tmp_path: Path, jobs: list[dict[str, Any]], *, queues: tuple[str, ...] = (),
             nodes: int = 1, cpu: int = 1, config: dict[str, Any] | None = None) -> Path:
    """A workload file: each job ``{name, submit, run, tasks?, requested?, queue?}`` is a
    gang of ``tasks`` (default 1) tasks of 1 cpu."""
    doc: dict[str, Any] = {
        "version": 1, "name": "contract",
        "config": config or {"actions": "strict-allocate", "tiers": [{"plugins": [
            {"name": "gang"}]}]},
        "queues": [{"name": q, "weight": 1} for q in queues],
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": 10}}
                  for i in range(nodes)],
        "jobs": [], "tasks": [],
    }
    for job in jobs:
        annotations = {}
        if "requested" in job:
            annotations["batchsched.io/requested-runtime"] = str(job["requested"])
        size = job.get("tasks", 1)
        doc["jobs"].append({"name": job["name"], "minMember": size, "createdAt": job["submit"],
                            "queue": job.get("queue", "default"), "annotations": annotations})
        doc["tasks"].extend({"name": f"{job['name']}-{k}", "job": job["name"],
                             "requests": {"cpu": 1},
                             "annotations": {"batchsched.io/run-time": str(job["run"])}}
                            for k in range(size))
    return write(tmp_path, "w.yaml", yaml.safe_dump(doc))


def starts(data: dict[str, Any]) -> dict[str, Any]:
    return {job["job"].split("/")[1]: job["start"] for job in data["perJob"]}


def test_times_that_are_whole_seconds_are_written_as_integers(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2)
                  + swf_line(1, 0, 50, 1) + "\n" + swf_line(2, 10, 20, 2) + "\n")
    code, data, _ = simulate(str(trace))
    assert code == 0 and data is not None
    assert data["simulatedSeconds"] == 70 and type(data["simulatedSeconds"]) is int
    assert type(data["metrics"]["makespan"]) is int
    first = data["perJob"][0]
    assert [type(first[key]) for key in ("submit", "start", "end")] == [int, int, int]
    assert data["workload"] == "t.swf"


def test_the_workload_is_named_by_its_file_whatever_its_kind(tmp_path: Path) -> None:
    path = workload(tmp_path, [{"name": "a", "submit": 0, "run": 5}])
    code, data, _ = simulate(str(path))
    assert code == 0 and data is not None and data["workload"] == "w.yaml"


def test_fcfs_keeps_trace_order_among_jobs_submitted_together(tmp_path: Path) -> None:
    """``zeta`` comes first in the file: FCFS starts it first, although ``alpha``'s id
    sorts before it."""
    path = workload(tmp_path, [{"name": "zeta", "submit": 1, "run": 100},
                               {"name": "alpha", "submit": 1, "run": 100}])
    code, data, _ = simulate(str(path))
    assert code == 0 and data is not None
    assert starts(data) == {"zeta": 1, "alpha": 101}
    assert {job["submit"] for job in data["perJob"]} == {1}  # reported as submitted


def test_strict_allocate_lets_no_job_of_any_queue_overtake_a_blocked_one(tmp_path: Path) -> None:
    jobs = [{"name": "run", "submit": 0, "run": 100, "queue": "q1"},
            {"name": "head", "submit": 1, "run": 10, "tasks": 2, "queue": "q1"},
            {"name": "late", "submit": 2, "run": 500, "queue": "q2"}]
    path = workload(tmp_path, jobs, queues=("q1", "q2"), nodes=2)
    code, data, _ = simulate(str(path))
    assert code == 0 and data is not None
    # q2's job waits behind q1's blocked head: it starts once the head has run.
    assert starts(data) == {"run": 0, "head": 100, "late": 110}
    per_queue = {"actions": "strict-allocate", "tiers": [{"plugins": [{"name": "gang"}]}],
                 "configurations": [{"name": "strict-allocate",
                                     "arguments": {"blockPerQueue": True}}]}
    path = workload(tmp_path, jobs, queues=("q1", "q2"), nodes=2, config=per_queue)
    code, data, _ = simulate(str(path))
    assert data is not None and starts(data) == {"run": 0, "head": 502, "late": 2}


@pytest.mark.parametrize(("late_run", "started"), [(97, 2), (98, 110), (500, 110)])
def test_easy_backfill_starts_what_ends_before_the_reserved_start(
        tmp_path: Path, late_run: int, started: int) -> None:
    """The head's reserved start is 100: a job that ends strictly before it (2 + 97)
    is backfilled at 2, on the node the head waits for; one that ends at it or after
    is not (no extra-nodes rule by default) and starts once the head has run."""
    backfill = {"actions": "strict-allocate, easy-backfill",
                "tiers": [{"plugins": [{"name": "gang"}]}]}
    jobs = [{"name": "run", "submit": 0, "run": 100, "requested": 100},
            {"name": "head", "submit": 1, "run": 10, "tasks": 2, "requested": 10},
            {"name": "late", "submit": 2, "run": late_run, "requested": late_run}]
    path = workload(tmp_path, jobs, nodes=2, config=backfill)
    code, data, _ = simulate(str(path))
    assert code == 0 and data is not None
    assert starts(data)["late"] == started
    assert starts(data)["head"] == 100


def test_the_gpu_allocation_ratio_is_read_when_the_last_pod_has_arrived(tmp_path: Path) -> None:
    nodes = write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,8192,2,T4\n")
    pods = write(tmp_path, "p.csv", (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1000,,LS,Running,0,1000,0\n"
        "p1,1000,1024,1,1000,,LS,Running,10,20,10\n"))
    code, data, _ = simulate(str(pods), "--cluster", str(nodes))
    assert code == 0 and data is not None
    # At 10 both pods hold a GPU (2 of 2); by the end of the replay both have left.
    assert data["metrics"]["gpuAllocationRatio"] == 1.0


def test_a_gang_s_size_is_worked_out_in_integers() -> None:
    """17 processors on 7 nodes of 17/7 cpu fill the machine: 7 nodes, not 8."""
    text = HEADER.format(nodes=7, procs=17) + swf_line(1, 0, 5, 17) + "\n"
    (job,) = swf_workload("t.swf", text=text).without_oversized().jobs
    assert job.prototype.min_available == 7
    text = HEADER.format(nodes=14, procs=34) + swf_line(1, 0, 5, 17) + "\n"
    assert swf_workload("t.swf", text=text).jobs[0].prototype.min_available == 7


@pytest.mark.parametrize(("line", "problem"), [
    (swf_line(1, 10, 5, 1), "job number 1 again (first at line 4)"),
    ("2 10 xyz 5 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1", "field 3 (unused) 'xyz' is not a number"),
    ("2 10 -1 5 1.5 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 5 (allocated processors) '1.5' is not a whole number"),
])
def test_a_bad_job_line_names_its_line(line: str, problem: str) -> None:
    text = HEADER.format(nodes=4, procs=4) + swf_line(1, 0, 5, 1) + "\n" + line + "\n"
    with pytest.raises(WorkloadError) as caught:
        swf_workload("bad.swf", text=text)
    assert str(caught.value) == f"bad.swf:5: {problem}"


def test_a_comment_may_hold_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_bytes(HEADER.format(nodes=2, procs=2).encode() + b"; Note: caf\xe9\n"
                     + swf_line(1, 0, 5, 1).encode() + b"\n")
    assert [job.uid for job in swf_workload(path).jobs] == ["swf/job-1"]


def test_a_trace_without_a_header_runs_on_the_cluster_given(tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", swf_line(1, 0, 5, 2) + "\n")
    cluster = write(tmp_path, "c.yaml", yaml.safe_dump({
        "version": 1, "config": {"actions": ""},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 1, "pods": 10}} for i in range(2)]}))
    code, data, _ = simulate(str(trace), "--cluster", str(cluster))
    assert code == 0 and data is not None and data["metrics"]["finishedJobs"] == 1


def test_the_clock_starts_at_the_first_job_s_submit_even_when_it_is_skipped(
        tmp_path: Path) -> None:
    trace = write(tmp_path, "t.swf", HEADER.format(nodes=2, procs=2)
                  + swf_line(1, 10, 5, 3) + "\n" + swf_line(2, 20, 5, 1) + "\n")
    code, data, err = simulate(str(trace))
    assert code == 2 and data is not None and "t.swf:4" in err
    assert data["simulatedSeconds"] == 15  # from 10 (job 1's submit) to 25


def test_a_held_head_waits_for_its_queue_s_turn(tmp_path: Path) -> None:
    """With holdBlockedHead, a held head keeps its queue's first place, and queues
    still take their turns in queue order: at 5, the queue with the smaller share
    goes first and its jobs start on the cpu that frees up; q1's head, which its
    queue's share refuses, then blocks the rest (they waited until 1000 when the
    held head went before every queue)."""
    jobs = [*({"name": f"r{i}", "submit": 0, "run": 1000, "queue": "q1"} for i in range(4)),
            {"name": "x", "submit": 0, "run": 5, "queue": "q2"},
            {"name": "head", "submit": 1, "run": 10, "tasks": 2, "queue": "q1"},
            {"name": "y1", "submit": 5, "run": 100, "queue": "q2"},
            {"name": "y2", "submit": 5, "run": 100, "queue": "q2"}]
    config = {"actions": "strict-allocate",
              "tiers": [{"plugins": [{"name": "gang"}, {"name": "proportion"}]}],
              "configurations": [{"name": "strict-allocate",
                                  "arguments": {"holdBlockedHead": True}}]}
    path = workload(tmp_path, jobs, queues=("q1", "q2"), nodes=6, config=config)
    code, data, _ = simulate(str(path))
    assert code == 0 and data is not None
    got = starts(data)
    assert (got["y1"], got["y2"]) == (5, 5)


def test_an_swf_comment_may_hold_a_form_feed(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_bytes(HEADER.format(nodes=2, procs=2).encode() + b"; Note: page\x0cbreak\n"
                     + swf_line(1, 0, 5, 1).encode() + b"\n")
    assert [job.uid for job in swf_workload(path).jobs] == ["swf/job-1"]


def test_a_workload_built_in_code_with_integer_times_reports(tmp_path: Path) -> None:
    """``json_seconds`` takes ints too (``int.is_integer`` is Python 3.12's)."""
    from batchsched.simulation.timeline import json_seconds

    assert json_seconds(7) == 7 and type(json_seconds(7)) is int


def test_a_gang_that_can_never_be_packed_is_reported_as_too_large(tmp_path: Path) -> None:
    """Three tasks of 2.5 cpu on two nodes of 4: at most one per node, never three."""
    doc = {"version": 1, "config": {"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "predicates"}]}]},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 4, "pods": 10}} for i in range(2)],
        "jobs": [{"name": "wide", "minMember": 3, "createdAt": 0},
                 {"name": "ok", "minMember": 2, "createdAt": 0}],
        "tasks": [*({"name": f"wide-{k}", "job": "wide", "requests": {"cpu": "2500m"},
                     "annotations": {"batchsched.io/run-time": "10"}} for k in range(3)),
                  *({"name": f"ok-{k}", "job": "ok", "requests": {"cpu": "2500m"},
                     "annotations": {"batchsched.io/run-time": "10"}} for k in range(2))]}
    path = write(tmp_path, "w.yaml", yaml.safe_dump(doc))
    code, data, err = simulate(str(path))
    assert code == 2 and data is not None
    assert "job default/wide skipped: its gang of 3 tasks" in err and "fits only 2 times" in err
    assert [job["job"] for job in data["perJob"]] == ["default/ok"]


def test_a_workload_job_whose_queue_does_not_exist_is_left_out(tmp_path: Path) -> None:
    path = workload(tmp_path, [{"name": "ok", "submit": 0, "run": 100},
                               {"name": "lost", "submit": 0, "run": 100, "queue": "nosuch"}])
    # It could never start: listed as skipped, one line on stderr, exit 2 (it was
    # in no list of the report, and the replay exited 0).
    code, data, err = simulate(str(path))
    assert code == 2 and data is not None
    assert data["jobs"] == 1 and data["metrics"]["neverStarted"] == 0
    assert [s["job"] for s in data["skipped"]] == ["default/lost"]
    assert "queue 'nosuch' does not exist" in err
