"""What happened during a replay, and the metrics read off it.

A :class:`Timeline` records, per job, when it arrived, started (each run) and
ended, and, over time, what every queue held. The metrics are the batch
scheduling literature's:

* wait = start of the job's last run - submit; response = end - submit;
* bounded slowdown = max(1, (wait + run) / max(run, 10)), run being the job's
  real run time (the longest task's);
* utilisation = allocated cpu integrated over time / (cluster cpu x makespan),
  makespan being the clock's start (the first submit time) to the last end; per
  resource as well;
* per-queue share = the queue's time-averaged share of the cluster's cpu;
  Jain's fairness index over the queues' shares divided by their weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from batchsched.api.resource import CPU, Resource

GPU = "nvidia.com/gpu"

if TYPE_CHECKING:
    from batchsched.cache.memory import MemoryCache
    from batchsched.simulation.workload import Workload

__all__ = ["BOUNDED_SLOWDOWN_THRESHOLD", "JobRecord", "Timeline", "bounded_slowdown", "jain",
           "json_seconds"]

#: Run times below this count as this in bounded slowdown (the usual 10 s).
BOUNDED_SLOWDOWN_THRESHOLD = 10.0


def bounded_slowdown(wait: float, run: float) -> float:
    """max(1, (wait + run) / max(run, 10)).

    >>> bounded_slowdown(90.0, 10.0), bounded_slowdown(0.0, 1.0)
    (10.0, 1.0)
    """
    return max(1.0, (wait + run) / max(run, BOUNDED_SLOWDOWN_THRESHOLD))


def jain(values: Iterable[float]) -> float:
    """Jain's fairness index: 1 when all values are equal, 1/n when one has everything.

    >>> jain([1.0, 1.0]), jain([1.0, 0.0])
    (1.0, 0.5)
    """
    xs = list(values)
    squares = sum(x * x for x in xs)
    if not xs or squares == 0:
        return 1.0
    return sum(xs) ** 2 / (len(xs) * squares)


@attrs.define
class JobRecord:
    """One job's life in the replay (times in seconds, as in the trace)."""

    uid: str
    queue: str
    submit: float
    run_time: float
    origin: str = ""
    first_start: float | None = None
    start: float | None = None
    end: float | None = None
    restarts: int = 0

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit

    @property
    def response(self) -> float | None:
        return None if self.end is None else self.end - self.submit

    @property
    def bounded_slowdown(self) -> float | None:
        wait = self.wait
        return None if wait is None or self.end is None else bounded_slowdown(wait, self.run_time)

    def to_json(self) -> dict[str, Any]:
        return {"job": self.uid, "queue": self.queue, "submit": json_seconds(self.submit),
                "start": json_seconds(self.start), "end": json_seconds(self.end),
                "boundedSlowdown": self.bounded_slowdown, "wait": json_seconds(self.wait),
                "restarts": self.restarts}


def json_seconds(value: float | None) -> float | int | None:
    """A time for the JSON report: a whole number of seconds as an integer (as the
    simulation contract writes them; strictly typed readers take no ``12.0`` for an
    integer), any other as it is.

    >>> json_seconds(12.0), json_seconds(12.5), json_seconds(None)
    (12, 12.5, None)
    """
    if value is None or isinstance(value, int) or not math.isfinite(value) \
            or not value.is_integer():
        return value
    return int(value)


class Timeline:
    """Records a replay (fed by the simulator) and computes its metrics."""

    def __init__(self, workload: Workload, start: float) -> None:
        self.start = start
        #: Where the clock stopped (the last event, or the horizon).
        self.end = start
        #: Where the makespan ends: the last end of a task, or the clock's end when
        #: tasks still ran then (a horizon, pods that never leave).
        self.makespan_end = start
        self._last_release = start
        self.capacity: Resource = workload.capacity()
        self.jobs: dict[str, JobRecord] = {
            job.uid: JobRecord(job.uid, job.prototype.queue, job.submit, job.run_time,
                               job.origin)
            for job in workload.jobs
        }
        self.queue_weights = {queue.name: queue.weight for queue in workload.queues}
        self.finished_count = 0
        self.never_started: list[str] = []
        self.unfinished: list[str] = []
        #: Whether the replay was cut by its horizon (else it ran out of events).
        self.cut = False
        #: Allocated resources right now, per queue, and the integral so far.
        self._held: dict[str, Resource] = {}
        self._held_seconds: dict[str, dict[str, float]] = {}
        self._last = start
        #: (time, allocated cpu in cores) at each change: utilisation over time.
        self.usage: list[tuple[float, float]] = [(start, 0.0)]
        #: The GPU milli allocated once every job had arrived and been scheduled.
        self._gpu_at_last_arrival: float | None = None

    # -- fed by the simulator -----------------------------------------------------------

    def arrived(self, uid: str, now: float) -> None:
        self._advance(now)

    def placed(self, uid: str, task: str, now: float, cache: MemoryCache) -> None:
        self._advance(now)
        request = cache.jobs[uid].tasks[task].resreq
        self._held.setdefault(self.jobs[uid].queue, Resource()).add(request)
        self._note_usage(now)

    def released(self, uid: str, task: str, now: float, cache: MemoryCache) -> None:
        self._advance(now)
        self._last_release = max(self._last_release, now)
        request = cache.jobs[uid].tasks[task].resreq
        self._held[self.jobs[uid].queue].sub_unchecked(request)
        self._note_usage(now)

    def started(self, uid: str, now: float) -> None:
        record = self.jobs[uid]
        if record.first_start is None:
            record.first_start = now
        record.start = now

    def evicted(self, uid: str, now: float) -> None:
        record = self.jobs[uid]
        if record.start is not None and record.end is None:
            record.restarts += 1

    def finished(self, uid: str, now: float) -> None:
        self.jobs[uid].end = now
        self.finished_count += 1
        self.end = max(self.end, now)

    def last_arrival_scheduled(self) -> None:
        """Every job has arrived and the sessions after the last arrival have run: the
        allocated GPUs now are the contract's ``gpuAllocationRatio`` (kept once)."""
        if self._gpu_at_last_arrival is None:
            self._gpu_at_last_arrival = sum(held.get(GPU) for held in self._held.values())

    def close(self, now: float, waiting: Iterable[str], *, cut: bool = False) -> None:
        """The replay is over at ``now`` (``cut``: by its horizon)."""
        self._advance(now)
        self.end = max(self.end, now)
        self.cut = cut
        self.never_started = sorted(uid for uid in waiting if self.jobs[uid].start is None)
        # Started, not finished: cut by the horizon, or a member never ran (a task no
        # node takes, in a gang whose minimum the others met).
        self.unfinished = sorted(uid for uid, record in self.jobs.items()
                                 if record.start is not None and record.end is None)
        still_held = any(not held.is_empty() for held in self._held.values())
        # A job that arrives after the last end and never starts does not stretch the
        # makespan (nor thin out the utilisation): the cluster's work ended earlier.
        # (A job ends when its last task is released.)
        self.makespan_end = self.end if cut or still_held else self._last_release

    def _advance(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            for queue, held in self._held.items():
                seconds = self._held_seconds.setdefault(queue, {})
                for name in held.names():
                    seconds[name] = seconds.get(name, 0.0) + held.get(name) * elapsed
            self._last = now

    def _note_usage(self, now: float) -> None:
        cores = sum(held.get(CPU) for held in self._held.values()) / 1000.0
        if self.usage[-1][0] == now:
            self.usage[-1] = (now, cores)
        else:
            self.usage.append((now, cores))

    # -- metrics ------------------------------------------------------------------------

    def finished_jobs(self) -> list[JobRecord]:
        return [record for record in self.jobs.values() if record.end is not None]

    def metrics(self) -> dict[str, Any]:
        done = self.finished_jobs()
        makespan = self.makespan_end - self.start
        slowdowns = [record.bounded_slowdown or 1.0 for record in done]
        utilization: dict[str, float] = {}
        for name in self.capacity.names():
            capacity = self.capacity.get(name)
            if capacity <= 0 or makespan <= 0:
                continue
            used = sum(seconds.get(name, 0.0) for seconds in self._held_seconds.values())
            utilization[name] = used / (capacity * makespan)
        shares = self.queue_shares()
        # A queue of weight 0 is entitled to nothing: no part of the fairness.
        weighted = [share / weight for queue, share in shares.items()
                    if (weight := self.queue_weights.get(queue, 1)) > 0]
        extra: dict[str, Any] = {}
        gpus = self.capacity.get(GPU)
        if gpus > 0:
            # What was allocated when the last pod had arrived (and been scheduled), over
            # the cluster's GPUs: the FGD paper's ratio. A replay cut short by its
            # ``until`` before that moment reads what is allocated at its end.
            allocated = self._gpu_at_last_arrival
            if allocated is None:
                allocated = sum(held.get(GPU) for held in self._held.values())
            extra["gpuAllocationRatio"] = allocated / gpus
        return {
            # No job finished: no average (null), where 0 would be below the floor of 1.
            "averageBoundedSlowdown": _mean(slowdowns),
            "averageWait": _mean([record.wait or 0.0 for record in done]),
            "averageResponse": _mean([record.response or 0.0 for record in done]),
            "makespan": json_seconds(makespan),
            "utilization": utilization.get(CPU, 0.0),
            **extra,
            "utilizationByResource": utilization,
            "finishedJobs": len(done),
            "neverStarted": len(self.never_started),
            "unfinished": len(self.unfinished),
            "restarts": sum(record.restarts for record in self.jobs.values()),
            "queueShare": shares,
            "jainFairness": jain(weighted),
        }

    def left_out(self, source: str) -> list[str]:
        """One line per job a replay that ran out of events (no horizon cut it) left
        waiting or running: the averages, over the finished jobs, are then not over
        every replayed job, and ``simulate`` and ``compare`` say so (exit status 2).
        None in a replay where some job never ends (``--arrived-load``'s pods, a
        trace's pods still running): its cluster fills up for good by design."""
        if self.cut or any(record.run_time == math.inf for record in self.jobs.values()):
            return []
        return [*(f"{source}: job {uid} never started: the replay ended with it waiting, "
                  "and the averages leave it out" for uid in self.never_started),
                *(f"{source}: job {uid} did not finish: the replay ended with a task of it "
                  + ("waiting again after an eviction" if self.jobs[uid].restarts
                     else "never placed") + ", and the averages leave it out"
                  for uid in self.unfinished)]

    def queue_shares(self) -> dict[str, float]:
        """Each queue's time-averaged share of the cluster's cpu: every queue some job
        of the workload was submitted to (one that never ran anything at 0; a queue
        nobody asked anything of is no part of the fairness)."""
        makespan = self.makespan_end - self.start
        capacity = self.capacity.get(CPU)
        queues = {*(record.queue for record in self.jobs.values()), *self._held_seconds}
        if makespan <= 0 or capacity <= 0:
            # No time (a horizon of 0) or no cpu: every queue held nothing.
            return dict.fromkeys(sorted(queues), 0.0)
        return {queue: self._held_seconds.get(queue, {}).get(CPU, 0.0) / (capacity * makespan)
                for queue in sorted(queues)}


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None
