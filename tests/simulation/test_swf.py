"""Reading SWF traces: the archive's conventions as the reference reads them, and errors
that name file and line."""

from __future__ import annotations

import pytest
from sim_support import HEADER, swf_line

from batchsched.api.job import REQUESTED_RUNTIME_ANNOTATION
from batchsched.errors import WorkloadError
from batchsched.simulation import swf_workload
from batchsched.simulation.swf import read_swf

TEXT = HEADER.format(nodes=4, procs=8) + "\n".join([
    swf_line(3, 20, 50, 3),            # 3 processors on nodes of 2: a gang of 2 tasks
    swf_line(1, 10, 100, 2, 400),      # requested 400 s
    swf_line(2, 10, -1, 1),            # run -1: requested is read first (-1), run becomes 10
    swf_line(4, 30, 0, 1),             # ran 0 s: dropped
]) + "\n"


def test_jobs_follow_the_archive_conventions() -> None:
    jobs, header, dropped = read_swf("t.swf", text=TEXT)
    assert header["MaxNodes"] == "4" and header["MaxProcs"] == "8"
    assert [job.job_id for job in jobs] == [1, 2, 3]  # job-number order
    assert [(job.run_time, job.requested_time) for job in jobs] == [(100, 400), (10, -1),
                                                                     (50, 50)]
    assert [d.reason for d in dropped] == ["it ran 0 s"]


def test_a_job_becomes_a_gang_of_whole_nodes() -> None:
    workload = swf_workload("t.swf", text=TEXT)
    assert len(workload.nodes) == 4
    assert {node.allocatable.milli_cpu for node in workload.nodes} == {2000}
    third = workload.jobs[2].prototype
    assert third.min_available == 2 and len(third.tasks) == 2
    assert {task.resreq.milli_cpu for task in third.tasks.values()} == {2000}
    assert third.creation_time == 20.0
    first = workload.jobs[0]
    assert first.prototype.podgroup.annotations[REQUESTED_RUNTIME_ANNOTATION] == "400"
    assert first.prototype.requested_runtime == 400.0
    assert first.run_time == 100.0


def test_a_window_takes_trace_positions() -> None:
    workload = swf_workload("t.swf", text=TEXT)
    assert [job.uid for job in workload.window(1, 2).jobs] == ["swf/job-2", "swf/job-3"]


def test_a_window_read_from_the_file_equals_the_window_of_the_whole_trace() -> None:
    whole = swf_workload("t.swf", text=TEXT).window(1, 2)
    read = swf_workload("t.swf", text=TEXT, first=1, count=2)
    assert [(j.uid, j.submit, dict(j.run_times)) for j in read.jobs] == [
        (j.uid, j.submit, dict(j.run_times)) for j in whole.jobs]


def test_a_job_keeps_its_name_whatever_the_window() -> None:
    text = HEADER.format(nodes=4, procs=4) + "\n".join(
        swf_line(i, i, 5, 1) for i in range(1, 121)) + "\n"
    read = swf_workload("t.swf", text=text, first=0, count=3)
    assert [j.uid for j in read.jobs] == ["swf/job-001", "swf/job-002", "swf/job-003"]


def test_a_malformed_line_outside_the_window_is_still_reported() -> None:
    text = HEADER.format(nodes=4, procs=4) + swf_line(1, 0, 5, 1) + "\n1 10 -1 5 1\n"
    with pytest.raises(WorkloadError, match=r"bad\.swf:5"):
        swf_workload("bad.swf", text=text, first=0, count=1)


@pytest.mark.parametrize(("line", "problem"), [
    ("1 10 -1 x 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1", "field 4 (run time) 'x' is not a number"),
    ("1 10 -1 5 1", "a job line has 18 fields, this one 5"),
    # What Python's int() would take but no SWF number is.
    ("1 10 -1 1_00 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 4 (run time) '1_00' is not a number"),
    ("1 10 -1 inf 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 4 (run time) 'inf' is not a number"),
    ("1 10 -1 1e400 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 4 (run time) '1e400' is not a finite number"),
    ("1 10 -1 5 1.5 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 5 (allocated processors) '1.5' is not a whole number"),
    ("1 \u0661\u0660 -1 5 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 2 (submit time) '\u0661\u0660' is not a number"),
    # Beyond what the replay's float clock counts to the second.
    ("1 1e17 -1 5 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 2 (submit time) '1e17' is more seconds than a replay counts exactly "
     "(at most 1e+15)"),
    ("1 10 -1 5 1 -1 -1 -1 1000000000000001 -1 1 -1 -1 -1 0 -1 -1 -1",
     "field 9 (requested time) '1000000000000001' is more seconds than a replay counts "
     "exactly (at most 1e+15)"),
])
def test_a_malformed_line_names_file_and_line(line: str, problem: str) -> None:
    text = HEADER.format(nodes=4, procs=4) + swf_line(1, 0, 5, 1) + "\n" + line + "\n"
    with pytest.raises(WorkloadError) as caught:
        swf_workload("bad.swf", text=text)
    assert str(caught.value) == f"bad.swf:5: {problem}"


def test_a_header_without_the_machine_is_refused() -> None:
    with pytest.raises(WorkloadError, match="neither MaxNodes nor MaxProcs"):
        swf_workload("t.swf", text=swf_line(1, 0, 5, 1) + "\n")


def test_a_job_larger_than_the_cluster_is_skipped_and_reported() -> None:
    text = HEADER.format(nodes=2, procs=2) + swf_line(1, 0, 5, 1) + "\n" + swf_line(2, 1, 5, 3)
    workload = swf_workload("t.swf", text=text).without_oversized()
    assert [job.uid for job in workload.jobs] == ["swf/job-1"]
    assert [(s.job, s.origin, s.oversized) for s in workload.skipped] == [
        ("swf/job-2", "t.swf:5", True)
    ]


def test_times_may_be_fractional_seconds_as_the_format_allows() -> None:
    text = HEADER.format(nodes=4, procs=4) + \
        "1 0.25 -1 100.5 2 -1 -1 2 200.75 -1 1 -1 -1 -1 0 -1 -1 -1\n"
    [job] = swf_workload("t.swf", text=text).jobs
    assert job.submit == 0.25 and job.run_time == 100.5
    assert job.prototype.requested_runtime == 200.75
    # Whole times stay integers: annotations read "400", not "400.0".
    first = swf_workload("t.swf", text=TEXT).jobs[0]
    assert first.prototype.podgroup.annotations[REQUESTED_RUNTIME_ANNOTATION] == "400"


def test_the_header_is_the_comments_before_the_first_job_line() -> None:
    text = HEADER.format(nodes=4, procs=8) + swf_line(1, 0, 5, 2) + "\n; MaxNodes: 2\n"
    workload = swf_workload("t.swf", text=text)
    assert len(workload.nodes) == 4
    assert {node.allocatable.milli_cpu for node in workload.nodes} == {2000}


@pytest.mark.parametrize(("value", "problem"), [
    ("inf", "header MaxNodes: 'inf' is not a whole number"),
    ("1e400", "header MaxNodes: '1e400' is not a whole number"),
    ("4.9", "header MaxNodes: '4.9' is not a whole number"),
    ("four", "header MaxNodes: 'four' is not a whole number"),
    ("0", "header MaxNodes: '0' must be positive"),
    # One node object each: a machine this large is given as a cluster file.
    ("100000001", "header MaxNodes: 100000001 nodes are more than a replay builds from "
                  "a header (at most 100,000); give the cluster with --cluster"),
])
def test_a_bad_machine_in_the_header_names_file_and_line(value: str, problem: str) -> None:
    text = f"; Version: 2\n; MaxNodes: {value}\n" + swf_line(1, 0, 5, 1) + "\n"
    with pytest.raises(WorkloadError) as caught:
        swf_workload("bad.swf", text=text)
    assert str(caught.value) == f"bad.swf:2: {problem}"


def test_a_job_wider_than_the_cluster_is_skipped_with_what_its_whole_gang_asks() -> None:
    """Its task objects stop at what the cluster could hold; the reason names what its
    minimum of tasks asks (8 cpu), not those objects (5)."""
    text = HEADER.format(nodes=4, procs=4) + swf_line(1, 0, 100, 8) + "\n" \
        + swf_line(2, 0, 100, 2) + "\n"
    workload = swf_workload("t.swf", text=text).without_oversized()
    assert [job.uid for job in workload.jobs] == ["swf/job-2"]
    (skipped,) = workload.skipped
    assert skipped.job == "swf/job-1" and "cpu 8000m" in skipped.reason


def test_a_window_reports_only_the_jobs_the_trace_drops_among_its_own() -> None:
    text = HEADER.format(nodes=4, procs=4) + "".join(
        swf_line(job, job, 0 if job == 4 else 5, 1) + "\n" for job in range(1, 7))
    assert swf_workload("t.swf", text=text, first=0, count=2).skipped == ()
    [dropped] = swf_workload("t.swf", text=text, first=2, count=2).skipped
    assert (dropped.job, dropped.origin, dropped.reason) == ("swf/job-4", "t.swf:7", "it ran 0 s")
    assert [s.job for s in swf_workload("t.swf", text=text).skipped] == ["swf/job-4"]
