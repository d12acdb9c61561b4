"""Lean, single-file replay of RLScheduler's (SC'20) Table V heuristics on an SWF trace.

This is the *lean baseline* of the benchmarks: a special-purpose simulator that does
nothing but what Table V needs (a free-node counter, five static priority keys,
strict or greedy backfilling), so its cost per replayed job is a floor against
which the project's general simulator (``batchsched simulate``) is measured. It is
also an independent check of the published numbers.

It follows the rules of the reference implementation, DIR-LAB/deep-batch-scheduler
(``HPCSimPickJobs.py``, ``job.py``, ``cluster.py``), *including its quirks*, because
the published numbers come from those rules and not from textbook definitions:

* parsing: every field is an int; processors = max(allocated, requested); a
  requested time of -1 becomes the run time (before negative run times become 10);
  jobs with a zero run time are dropped; jobs are sorted by id;
* a sequence is the ``length`` jobs at list positions ``start ..``; the clock starts
  at the first job's submit time, with only that job queued and an empty cluster;
* priority keys never change while a job waits: WFP3 and UNICEP read a "scheduled
  time" that is still -1 for every queued job, so their "waiting time" is
  ``-(submit + 1)`` rather than ``now - submit``;
* the picked job is never re-picked while it waits; without backfilling nothing
  overtakes it; with backfilling a job may start only if it fits now and its
  requested time ends strictly before the head's shadow time, computed once;
* time advances one event at a time (one arrival, arrivals winning ties, or one
  completion) and the fit check runs between events;
* bounded slowdown = max(1, (wait + run) / max(run, 10)) with the real run time.

Ties are broken exactly as the reference's stable list sorts break them: its job
queue and running list are reproduced as Python lists sorted the same way, except
without backfilling, where only one sort key is ever applied to each list and heaps
give the same order for less work.

Usage::

    python benchmarks/lean_hpc_sim.py TRACE.swf [--starts 1981,2756,...] [--length 1024]
                                                [--json] [--check]

The trace path is always an argument. Only the standard library and numpy are used.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "DEFAULT_STARTS",
    "POLICIES",
    "PUBLISHED_LUBLIN_256",
    "SwfJob",
    "parse_swf",
    "priority_ranks",
    "run_table",
    "simulate",
]

POLICIES: tuple[str, ...] = ("fcfs", "wfp3", "unicep", "sjf", "f1")
"""The Table V heuristics, in the table's row order."""

DEFAULT_STARTS: tuple[int, ...] = (1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085)
"""The reference driver's sequence starts: ``randint(1024, N - 1024 - 1)`` ten times from
gym's ``seeding.np_random(1)`` with N = 10000 (both Lublin traces)."""

DEFAULT_LENGTH = 1024

PUBLISHED_LUBLIN_256: dict[str, tuple[float, float]] = {
    # policy: (no backfill, backfill), average bounded slowdown, Table V of the paper
    "fcfs": (7273.77, 235.82),
    "wfp3": (19753.53, 133.87),
    "unicep": (22274.74, 307.23),
    "sjf": (277.35, 73.31),
    "f1": (258.37, 75.07),
}


class SwfJob(NamedTuple):
    """The fields of one SWF line that the heuristics use, already normalised."""

    job_id: int
    submit: int
    run: int
    procs: int
    req: int


# -- parsing -------------------------------------------------------------------------------------


def parse_swf(path: str | os.PathLike[str]) -> tuple[list[SwfJob], int, int]:
    """Read an SWF trace the way the reference does; return ``(jobs, max_nodes, max_procs)``.

    The normalisation order matters and is the reference's: the -1 requested time is
    replaced by the *raw* run time before a negative run time becomes 10, so a job with
    both at -1 keeps a request of -1. ``MaxProcs`` defaults to ``MaxNodes``.
    """
    jobs: list[SwfJob] = []
    max_nodes = 0
    max_procs = 0
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if line.startswith(";"):
                if line.startswith("; MaxNodes:"):
                    max_nodes = int(line.split(":")[1].strip())
                elif line.startswith("; MaxProcs:"):
                    max_procs = int(line.split(":")[1].strip())
                continue
            fields = line.split()
            if not fields:
                continue
            try:
                job_id, submit, _wait, run, allocated = (int(f) for f in fields[:5])
                requested_procs, req = int(fields[7]), int(fields[8])
            except (ValueError, IndexError) as exc:
                raise ValueError(f"{path}:{line_no}: unreadable SWF line: {exc}") from exc
            if req == -1:
                req = run
            if run < 0:
                run = 10
            if run == 0:
                continue
            jobs.append(SwfJob(job_id, submit, run, max(allocated, requested_procs), req))
    if max_nodes <= 0:
        raise ValueError(f"{path}: no '; MaxNodes:' header")
    if max_procs == 0:
        max_procs = max_nodes
    jobs.sort(key=lambda job: job.job_id)
    return jobs, max_nodes, max_procs


# -- priority keys -------------------------------------------------------------------------------


def priority_ranks(window: Sequence[SwfJob], policy: str) -> list[int]:
    """Dense ranks of the reference's ascending sort key, one per job of ``window``.

    Every Table V key is static (it depends on the job alone), so it is computed once
    per sequence and replaced by its rank: equal keys get equal ranks, which keeps the
    stable-sort tie-breaking of the reference, and small ints sort faster than floats
    or tuples. The formulas are the reference's, quirks included (see module doc).
    """
    submit = np.array([job.submit for job in window], dtype=np.int64)
    req = np.array([job.req for job in window], dtype=np.int64)
    procs = np.array([job.procs for job in window], dtype=np.int64)
    key: np.ndarray
    if policy == "wfp3" and (req == 0).any():
        raise ValueError("WFP3 divides by the requested time, which is 0 for some job")
    if policy == "fcfs":
        key = submit
    elif policy == "sjf":
        # (request, submit): np.unique over rows orders lexicographically.
        _, inverse = np.unique(np.stack([req, submit], axis=1), axis=0, return_inverse=True)
        return [int(rank) for rank in inverse.reshape(-1)]
    elif policy == "f1":
        r = np.where(req > 0, req, 0.1)
        s = np.where(submit > 0, submit, 0.1)
        key = np.log10(r) * procs + 870 * np.log10(s)
    elif policy in ("wfp3", "unicep"):
        # The reference's waiting time is scheduled_time - submit with scheduled_time
        # still -1 for every queued job.
        wait = (-1 - submit).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):  # NaN is rejected below
            if policy == "wfp3":
                key = -np.power(wait / req, 3) * procs
            else:
                key = -(wait + 1e-15) / (np.log2(procs + 1e-15) * req)
    else:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if np.isnan(key).any():
        # NaN (UNICEP with a negative processor count) has no place in an order: the
        # reference's sort would then depend on its comparison sequence, not on the keys.
        bad = window[int(np.flatnonzero(np.isnan(key))[0])].job_id
        raise ValueError(f"{policy} key of job {bad} is NaN (processors {procs.min()})")
    _, inverse = np.unique(key, return_inverse=True)
    return [int(rank) for rank in inverse.reshape(-1)]


# -- simulation ----------------------------------------------------------------------------------


def simulate(
    jobs: Sequence[SwfJob],
    start: int,
    length: int,
    policy: str,
    *,
    backfill: bool,
    nodes: int,
    ppn: float,
) -> list[float]:
    """Replay ``jobs[start:start + length]`` under ``policy``; return each job's bounded
    slowdown, in list order.

    ``nodes`` and ``ppn`` (processors per node, a float as in the reference) describe the
    cluster; a job needs ``ceil(procs / ppn)`` nodes and only a free-node count is kept.
    Raises ``ValueError`` for a window outside the trace, a job larger than the cluster
    (the reference would wait for it forever) or an undefined priority key.
    """
    if start < 0 or length < 1 or start + length > len(jobs):
        raise ValueError(f"sequence {start}..{start + length - 1} outside 0..{len(jobs) - 1}")
    window = jobs[start:start + length]
    need = [math.ceil(float(job.procs) / float(ppn)) for job in window]
    too_big = [job.job_id for job, n in zip(window, need, strict=True) if n > nodes]
    if too_big:
        raise ValueError(f"job {too_big[0]} needs more than the cluster's {nodes} nodes")
    ranks = priority_ranks(window, policy)
    runner = _simulate_backfill if backfill else _simulate_strict
    return runner(window, need, ranks, nodes, float(ppn))


def _simulate_strict(
    window: Sequence[SwfJob], need: list[int], ranks: list[int], nodes: int, _ppn: float
) -> list[float]:
    """No backfilling: the picked job blocks everything until it fits.

    Without backfilling the reference only ever sorts its queue by the policy key and
    appends arrivals, so equal keys stay in arrival (= list) order; a heap of
    ``rank * n + position`` gives the same picks. Its running list is only ever sorted
    by end time, with starts appended, so equal ends leave in start order; a heap of
    ``end * n + start_sequence`` gives the same releases.
    """
    n = len(window)
    submit = [job.submit for job in window]
    run = [job.run for job in window]
    heappush, heappop = heapq.heappush, heapq.heappop
    out = [0.0] * n
    queue = [ranks[0] * n]
    running: list[int] = []  # end * n + start sequence number
    released = [0] * n  # nodes held, by start sequence number
    started = 0
    free = nodes
    now = submit[0]
    nxt = 1
    while True:
        head = heappop(queue) % n
        wanted = need[head]
        while wanted > free:  # skip_for_resources_greedy: one event per step
            end = running[0] // n
            if nxt < n and submit[nxt] <= end:
                now = max(now, submit[nxt])
                heappush(queue, ranks[nxt] * n + nxt)
                nxt += 1
            else:
                now = max(now, end)
                free += released[heappop(running) % n]
        free -= wanted
        r = run[head]
        heappush(running, (now + r) * n + started)
        released[started] = wanted
        started += 1
        out[head] = max(1.0, (now - submit[head] + r) / max(r, 10))
        if queue:
            continue
        if nxt >= n:
            return out
        while True:  # moveforward_for_job: release until exactly one arrival is added
            if not running or submit[nxt] <= running[0] // n:
                now = max(now, submit[nxt])
                heappush(queue, ranks[nxt] * n + nxt)
                nxt += 1
                break
            now = max(now, running[0] // n)
            free += released[heappop(running) % n]


def _simulate_backfill(
    window: Sequence[SwfJob], need: list[int], ranks: list[int], nodes: int, ppn: float
) -> list[float]:
    """Greedy backfilling behind the picked job, with the reference's list semantics.

    The queue is re-sorted by submit time before every backfill pass and by the policy
    key before every pick; both sorts are stable, so which of two equal-key jobs goes
    first depends on the order the other sort left. That history is kept by doing the
    same sorts on a list. The running list is likewise sorted by estimated end for the
    shadow time and by real end for releases, lazily (only when a start made it dirty).
    """
    n = len(window)
    submit = [job.submit for job in window]
    run = [job.run for job in window]
    req = [job.req for job in window]
    procs = [job.procs for job in window]
    min_need = min(need)
    by_rank: Callable[[int], int] = ranks.__getitem__
    by_submit: Callable[[int], int] = submit.__getitem__
    end_at = [0] * n  # real end, set at start
    est_end_at = [0] * n  # start + requested time
    by_end: Callable[[int], int] = end_at.__getitem__
    by_est_end: Callable[[int], int] = est_end_at.__getitem__
    out = [0.0] * n
    queue = [0]
    running: list[int] = []
    sorted_by_end = True
    free = nodes
    now = submit[0]
    nxt = 1

    while True:
        queue.sort(key=by_rank)
        head = queue[0]
        if need[head] > free:
            # Shadow time: computed once, from estimated ends.
            running.sort(key=by_est_end)
            sorted_by_end = False
            avail = free * ppn
            shadow = now
            for job in running:
                avail += need[job] * ppn
                shadow = est_end_at[job]
                if avail >= procs[head]:
                    break
            while need[head] > free:
                queue.sort(key=by_submit)
                if free >= min_need:
                    limit = shadow - now
                    taken: list[int] = []
                    for pos, job in enumerate(queue):
                        if req[job] < limit and need[job] <= free:
                            free -= need[job]
                            r = run[job]
                            end_at[job] = now + r
                            est_end_at[job] = now + req[job]
                            running.append(job)
                            out[job] = max(1.0, (now - submit[job] + r) / max(r, 10))
                            taken.append(pos)
                            if free < min_need:
                                break
                    if taken:
                        sorted_by_end = False
                        for pos in reversed(taken):
                            del queue[pos]
                # One event step.
                if not sorted_by_end:
                    running.sort(key=by_end)
                    sorted_by_end = True
                end = end_at[running[0]]
                if nxt < n and submit[nxt] <= end:
                    now = max(now, submit[nxt])
                    queue.append(nxt)
                    nxt += 1
                else:
                    now = max(now, end)
                    free += need[running.pop(0)]
        free -= need[head]
        r = run[head]
        end_at[head] = now + r
        est_end_at[head] = now + req[head]
        running.append(head)
        sorted_by_end = False
        out[head] = max(1.0, (now - submit[head] + r) / max(r, 10))
        queue.remove(head)
        if queue:
            continue
        if nxt >= n:
            return out
        while True:  # moveforward_for_job
            if running and not sorted_by_end:
                running.sort(key=by_end)
                sorted_by_end = True
            if not running or submit[nxt] <= end_at[running[0]]:
                now = max(now, submit[nxt])
                queue.append(nxt)
                nxt += 1
                break
            now = max(now, end_at[running[0]])
            free += need[running.pop(0)]


# -- the table -----------------------------------------------------------------------------------


def run_table(
    jobs: Sequence[SwfJob],
    starts: Sequence[int],
    length: int,
    nodes: int,
    ppn: float,
) -> dict[str, Any]:
    """All ten Table V cells: for each policy and backfill setting, the mean over the
    sequences of each sequence's mean bounded slowdown, with the time spent simulating."""
    cells: dict[str, dict[str, float]] = {}
    per_sequence: dict[str, dict[str, list[float]]] = {}
    seconds: dict[str, dict[str, float]] = {}
    for policy in POLICIES:
        cells[policy], per_sequence[policy], seconds[policy] = {}, {}, {}
        for backfill in (False, True):
            column = "backfill" if backfill else "no_backfill"
            begin = time.perf_counter()
            means = [
                sum(simulate(jobs, start, length, policy, backfill=backfill, nodes=nodes, ppn=ppn))
                / length
                for start in starts
            ]
            seconds[policy][column] = time.perf_counter() - begin
            per_sequence[policy][column] = means
            cells[policy][column] = sum(means) / len(means)
    simulated = sum(s for row in seconds.values() for s in row.values())
    replayed = 2 * len(POLICIES) * len(starts) * length
    return {
        "cells": cells,
        "per_sequence": per_sequence,
        "cell_seconds": seconds,
        "simulate_seconds": simulated,
        "replayed_jobs": replayed,
        "us_per_job": simulated / replayed * 1e6,
    }


def _check_published(cells: dict[str, dict[str, float]]) -> list[str]:
    """Cells that do not round to the published lublin_256 value (an empty list if all do)."""
    wrong = []
    for policy, published in PUBLISHED_LUBLIN_256.items():
        for column, value in zip(("no_backfill", "backfill"), published, strict=True):
            got = cells[policy][column]
            if abs(round(got, 2) - value) > 1e-9:
                wrong.append(f"{policy} {column}: {got:.2f} != published {value:.2f}")
    return wrong


def _format_table(report: dict[str, Any], check: bool) -> str:
    cells = report["cells"]
    header = f"{'policy':<8} {'no backfill':>12} {'backfill':>10}"
    if check:
        header += f"   {'published':>10} {'published':>10}"
    lines = [header]
    for policy in POLICIES:
        row = cells[policy]
        line = f"{policy.upper():<8} {row['no_backfill']:>12.2f} {row['backfill']:>10.2f}"
        if check:
            no_bf, bf = PUBLISHED_LUBLIN_256[policy]
            line += f"   {no_bf:>10.2f} {bf:>10.2f}"
        lines.append(line)
    t = report["timings"]
    lines.append(
        f"{report['replayed_jobs']} jobs replayed in {t['simulate_s']:.3f} s "
        f"({report['us_per_job']:.2f} us/job); parse {t['parse_s']:.3f} s, "
        f"total {t['total_s']:.3f} s"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: print the table (or ``--json``) for one trace."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="an SWF trace (e.g. lublin_256.swf)")
    parser.add_argument("--starts", default=",".join(map(str, DEFAULT_STARTS)),
                        help="comma-separated 0-based list positions of the sequences")
    parser.add_argument("--length", type=int, default=DEFAULT_LENGTH, help="jobs per sequence")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--check", action="store_true",
                        help="compare with the published lublin_256 Table V; exit 1 on mismatch")
    args = parser.parse_args(argv)
    try:
        starts = [int(s) for s in args.starts.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--starts: not a comma-separated list of integers: {args.starts!r}")
    if not starts:
        parser.error("--starts: no sequence given")

    begin = time.perf_counter()
    try:
        jobs, max_nodes, max_procs = parse_swf(args.trace)
        parsed = time.perf_counter()
        ppn = max_procs / max_nodes
        table = run_table(jobs, starts, args.length, max_nodes, ppn)
    except (OSError, ValueError) as exc:
        print(f"lean_hpc_sim: {exc}", file=sys.stderr)
        return 2
    total = time.perf_counter() - begin

    report: dict[str, Any] = {
        "trace": os.path.basename(args.trace),
        "jobs": len(jobs),
        "nodes": max_nodes,
        "ppn": ppn,
        "starts": starts,
        "length": args.length,
        "cells": table["cells"],
        "per_sequence": table["per_sequence"],
        "replayed_jobs": table["replayed_jobs"],
        "us_per_job": table["us_per_job"],
        "timings": {
            "parse_s": parsed - begin,
            "simulate_s": table["simulate_seconds"],
            "total_s": total,
            "cells_s": table["cell_seconds"],
        },
    }
    wrong = _check_published(table["cells"]) if args.check else []
    if args.check:
        report["published"] = {p: dict(zip(("no_backfill", "backfill"), v, strict=True))
                               for p, v in PUBLISHED_LUBLIN_256.items()}
        report["matches_published"] = not wrong
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_format_table(report, args.check))
        for line in wrong:
            print(f"MISMATCH {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
