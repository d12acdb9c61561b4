"""The discrete-event clock: a workload replayed through real scheduling sessions.

The cluster is a :class:`~batchsched.cache.MemoryCache`; the decisions are
those of a :class:`~batchsched.scheduler.Scheduler` over it, with any
configuration and any installed plugin, exactly as ``batchsched run`` decides.
The simulator only plays the parts a cluster plays around the scheduler:

* a job **arrives** at its submit time (its pod group and pods are created);
* a bound task **starts** at once and **ends** after its real run time, which
  frees its node;
* an **evicted** task's pod goes at once and is created again (Pending); with
  the job's restart rule ``gang`` (the default) every other member of its gang
  goes too, finished ones included, and the whole gang runs again (seed 001: a
  gang that loses a member restarts whole; Volcano's RestartJob keeps no pod),
  with ``task`` only the victims do;
* a plugin whose answers change with time alone (sla's waiting time, tdm's
  windows, cdp's cooldown, rescheduling's interval) asks for a session then
  (``Session.wake_up_at``), as Volcano's periodic sessions would see the change.

Events are taken one at a time in time order (arrivals before completions at
the same instant, then in the order they were scheduled), and a session runs
after each one while some task waits, or, with ``schedule_period``, at the first
multiple of the period after something changed (strictly after: an event on a
multiple waits for the next one, as what a tick's own session causes does). Two
sessions at the same instant are normal: simultaneous completions are released one
by one, with a chance to schedule between them.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import itertools
import logging
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from batchsched.api.queue import ROOT_QUEUE
from batchsched.api.types import TaskStatus
from batchsched.cache.memory import MemoryCache
from batchsched.conf import SchedulerConfiguration
from batchsched.errors import WorkloadError
from batchsched.framework.registry import Registry
from batchsched.scheduler import Scheduler
from batchsched.simulation.controllers import ClusterControllers
from batchsched.simulation.timeline import Timeline
from batchsched.simulation.workload import MOST_SECONDS, RESTART_GANG, RESTART_TASK, Workload

__all__ = ["MAX_IDLE_WAKE_UPS", "MAX_RESTARTS_WITHOUT_PROGRESS", "MAX_SCHEDULE_PERIOD",
           "MAX_SESSIONS_PER_INSTANT", "Simulator",
           "simulate"]

#: The longest schedule period taken (about 31,700 years): a longer one lets the clock
#: and the metrics overflow a float.
MAX_SCHEDULE_PERIOD = 1e12

log = logging.getLogger("batchsched")

#: Sessions at one instant since the last arrival or completion after which the replay
#: moves on to the next event (a guard against evictions that undo each other without
#: the clock moving).
MAX_SESSIONS_PER_INSTANT = 1000

#: Runs one job may lose to evictions (gang restarts, victims run again) while no job
#: finishes, after which the replay stops: jobs that take their room back from each
#: other for ever (each restart ending a member, the clock moving) would never let it
#: end. The jobs still there are reported unfinished.
MAX_RESTARTS_WITHOUT_PROGRESS = 100

#: Wake-up sessions in a row that one plugin asked for, with no arrival, completion or
#: eviction left to come, after which that plugin's wake-ups (``Session.wake_up_at``)
#: are no longer honoured: a job that never fits would otherwise be tried at every
#: window or interval for ever. The other plugins' still are (a deadline of sla's
#: comes after a hundred of rescheduling's intervals).
MAX_IDLE_WAKE_UPS = 100

_ARRIVAL, _EVICTED, _COMPLETION, _TICK, _WAKE = 0, 1, 2, 3, 4
_ENDED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
#: Statuses of a task that arrives on a node and runs from then on.
_RUNNING_ON_ARRIVAL = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING})

Progress = Callable[[int, int], None]


@attrs.define
class _Running:
    """A job's tasks that are running, and the run they belong to."""

    generation: int = 0
    tasks: set[str] = attrs.field(factory=set)


@contextlib.contextmanager
def _long_lived_objects_frozen() -> Iterator[None]:
    """Keep the garbage collector's full collections off what already lives (the
    modules, the workload, the caller's objects) for the replay, and hand it back
    after: each full collection walked them all again, a sixth of a Lublin replay.
    Left alone when the collector is off or the caller froze objects of its own
    (unfreezing would thaw theirs too)."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def first_multiple_from(at: float, period: float) -> float:
    """The first multiple of ``period`` (``k * period`` as floats compute it) at or
    after ``at``: a plugin's wake-up is the first instant its answer changes, so the
    tick must not fall a rounding short of it."""
    k = math.ceil(at / period)
    while k * period < at:
        k += 1
    while (k - 1) * period >= at:
        k -= 1
    return float(k * period)


def next_multiple(now: float, period: float) -> float:
    """The first multiple of ``period`` strictly after ``now``; a ``now`` within float
    rounding of a multiple (0.5 with a period of 0.1, where ``0.5 // 0.1`` is 4) counts
    as on it, so the next one is a whole period on. Rounding is a few units in the
    last place of ``now``: the tolerance does not grow with the clock's reading (at
    Unix-epoch times a second of it would skip a tick)."""
    on = round(now / period)
    if abs(now - on * period) <= 1e-9 * period + 8 * math.ulp(abs(now)):
        return (on + 1) * period
    after = (math.floor(now / period) + 1) * period
    while after <= now:  # float division a hair short of a whole number
        after += period
    return after


class Simulator:
    """Replays ``workload`` under ``configuration`` (see the module docstring).

    ``until`` stops the clock (simulated seconds after its start, the first job's
    submit time);
    ``progress(done, total)`` is called as jobs finish; ``observe(simulator)``
    after every session, once its binds started and its evictions were taken (a
    platform test asserts on ``simulator.cache`` and ``simulator.now`` there).
    Sessions copy only the
    nodes and jobs that changed since the last one (``incremental_snapshots``,
    see :class:`~batchsched.cache.MemoryCache`); turning it off decides the same,
    slower. Events (``FailedScheduling`` and the like) are dropped unless
    ``keep_events``: a long replay would build millions, and they decide nothing.
    With ``settle_arrivals``, jobs arriving at one instant all arrive before a session
    runs (a cluster's state replayed forward: every job is there at once); by default
    each arrival has its session, as the trace replays of the contract do. With
    ``snapshot_statuses`` the workload is a cluster's state replayed forward: the
    quotas' given use counts the pods that arrive at the start, and the budgets keep
    their given status (:class:`~batchsched.simulation.controllers.ClusterControllers`).
    """

    def __init__(
        self,
        workload: Workload,
        configuration: SchedulerConfiguration | None = None,
        *,
        registry: Registry | None = None,
        schedule_period: float | None = None,
        until: float | None = None,
        progress: Progress | None = None,
        observe: Callable[[Simulator], None] | None = None,
        incremental_snapshots: bool = True,
        keep_events: bool = False,
        settle_arrivals: bool = False,
        snapshot_statuses: bool = False,
    ) -> None:
        if not isinstance(workload, Workload):
            hint = (" (batchsched.testing.simulate takes a ScenarioBuilder)"
                    if type(workload).__name__ == "ScenarioBuilder" else "")
            raise TypeError(f"a replay takes a batchsched.simulation.Workload, not "
                            f"{type(workload).__name__}{hint}")
        if schedule_period is not None and (not _is_seconds(schedule_period) or not (
                0 < schedule_period <= MAX_SCHEDULE_PERIOD)):  # NaN fails both tests
            raise WorkloadError(f"the schedule period must be a positive number of "
                                f"seconds up to {MAX_SCHEDULE_PERIOD:g}, not {schedule_period!r}",
                                source=workload.name)
        if until is not None and (not _is_seconds(until)
                                  or not 0 <= until <= MOST_SECONDS):  # NaN fails it too
            # A horizon beyond the clock's range (infinity) would become the report's
            # simulated time, which JSON cannot hold.
            raise WorkloadError(f"until must be a number of seconds from 0 to "
                                f"{MOST_SECONDS:.0e}, not {until!r}", source=workload.name)
        check_workload(workload)
        self.workload = workload
        self._ran = False
        self.settle_arrivals = settle_arrivals
        self.schedule_period = schedule_period
        self.progress = progress
        self.observe = observe
        self.start = workload.start if workload.start is not None else \
            (workload.jobs[0].submit if workload.jobs else 0.0)
        self.until = None if until is None else self.start + until
        self.cache = MemoryCache(now=self.start, keep_events=keep_events,
                                 incremental_snapshots=incremental_snapshots)
        for node in workload.nodes:
            self.cache.add_node(node.clone())
        for queue in workload.queues:
            self.cache.add_queue(queue.clone())
        for priority_class in workload.priority_classes:
            self.cache.add_priority_class(priority_class)
        for key, data in workload.config_maps.items():
            namespace, _, name = key.partition("/")
            self.cache.set_config_map(namespace, name, dict(data))
        for hyper_node in workload.hyper_nodes:
            self.cache.set_hyper_node(hyper_node)
        for shard in workload.node_shards:
            self.cache.set_node_shard(shard)
        self.cache.set_dra_objects(workload.dra)
        self.cache.pdbs = [attrs.evolve(pdb) for pdb in workload.pdbs]
        self.cache.resource_quotas = [attrs.evolve(quota, used=quota.used.clone())
                                      for quota in workload.resource_quotas]
        self.controllers = ClusterControllers(self.cache.resource_quotas, self.cache.pdbs,
                                              self.cache.jobs.values(),
                                              snapshot=snapshot_statuses)
        self.scheduler = Scheduler(self.cache, configuration, registry=registry)
        self.timeline = Timeline(self.workload, self.start)
        # (time, kind, order of scheduling, payload): kinds rank events at the same time.
        self._events: list[tuple[float, int, int, Any]] = []
        self._sequence = itertools.count()
        self._running: dict[str, _Running] = {}
        self._waiting: set[str] = set()  # jobs with a Pending task
        #: (instant, sessions run at it), for the guard in _schedule.
        self._instant: tuple[float, int] = (-math.inf, 0)
        self._looped = False
        self._jobs = {job.uid: job for job in workload.jobs}
        self._job_of_task = {task: job.uid for job in workload.jobs for task in job.run_times}
        self._binds_seen = 0
        self._evictions_seen = 0
        self._unbinds_seen = 0
        self._tick_due = False
        #: Ticks asked for by evictions alone since a job arrived or a task completed:
        #: with a schedule period, evictions undoing each other move the clock a tick
        #: at a time, which the guard per instant does not see.
        self._eviction_ticks = 0
        self._looped_ticks = False
        #: Runs each job lost since a job last finished (``MAX_RESTARTS_WITHOUT_PROGRESS``).
        self._runs_lost: dict[str, int] = {}
        #: Whether the replay stopped there (the jobs left unfinished, not cut by ``until``).
        self.stopped_looping = False
        #: The wake-ups queued (event time -> the plugins that asked for it).
        self._wakes: dict[float, set[str]] = {}
        #: The last session's wake-ups (plugin -> instant), asked again when a plugin's
        #: are given up.
        self._last_wake_ups: dict[str, float] = {}
        #: Wake-up sessions in a row with nothing else to come, and the clock when the
        #: run of them began (what they changed: nothing, or they would not be in a row).
        self._idle_wakes = 0
        self._quiet_since = 0.0
        #: The same, per plugin that asked; the plugins whose wake-ups are given up.
        self._idle_wakes_of: dict[str, int] = {}
        self._wakes_spent: set[str] = set()
        self.sessions = 0

    # -- the clock ----------------------------------------------------------------------

    @property
    def now(self) -> float:
        return float(self.cache.now or 0.0)

    def _push(self, at: float, kind: int, payload: Any) -> None:
        heapq.heappush(self._events, (at, kind, next(self._sequence), payload))

    def run(self) -> Timeline:
        """Replay until every job has finished (or can never start), or ``until``. A
        simulator replays once: build another for another replay."""
        if self._ran:
            raise WorkloadError("this simulator has already replayed its workload; build "
                                "another one to replay it again", source=self.workload.name)
        self._ran = True
        with _long_lived_objects_frozen():
            return self._replay()

    def _replay(self) -> Timeline:
        for job in self.workload.jobs:  # in trace order: equal submit times keep it
            self._push(job.submit, _ARRIVAL, job.uid)
        to_arrive = len(self.workload.jobs)
        cut = False
        while self._events:
            at, kind, _, payload = heapq.heappop(self._events)
            if kind == _COMPLETION and self._stale(payload):
                # The end of a run an eviction already ended: nothing happens, and the
                # clock does not move to it.
                continue
            if kind < _TICK:
                # Something happens: the wake-ups count afresh.
                self._idle_wakes = 0
                self._idle_wakes_of.clear()
            if kind == _TICK and not self._waiting:
                # Nothing to schedule: a tick does not move the clock (after the last
                # job ended, the clock stops there, not at the next tick).
                self._tick_due = False
                if not to_arrive:
                    self.timeline.last_arrival_scheduled()
                continue
            if kind == _WAKE:
                askers = self._wakes.pop(at, set()) - self._wakes_spent
                if not self._waiting or not askers or at == self._instant[0]:
                    # Nothing waits, the plugins' wake-ups were given up, or a session
                    # already ran at this instant (and asked again if it needed to).
                    continue
                self._wake_session(at, askers)
                continue
            if self.until is not None and at > self.until:
                self.cache.now = max(self.now, self.until)  # the clock runs to the horizon
                cut = True
                break
            self.cache.now = max(self.now, at)
            if kind == _ARRIVAL:
                # A change from outside the sessions: the sessions at this instant
                # count afresh (the guard in _schedule is against evictions undoing
                # each other, not against many jobs arriving at once).
                self._instant = (self.now, 0)
                self._arrive(payload)
                self._eviction_ticks = 0
                to_arrive -= 1
                if (self.settle_arrivals and self._events and self._events[0][0] == at
                        and self._events[0][1] == _ARRIVAL):
                    continue  # every job arriving at this instant is there first
            elif kind == _COMPLETION:
                uid, _, tasks, scheduled_at = payload
                self._complete(uid, tasks)
                if scheduled_at < self.now:
                    # A run that began before this instant: no loop of this instant
                    # (a run of no time, restarted by it, would be).
                    self._instant = (self.now, 0)
                self._eviction_ticks = 0
            elif kind == _EVICTED:
                self._evicted(payload)
                looping = [uid for uid, lost in self._runs_lost.items()
                           if lost >= MAX_RESTARTS_WITHOUT_PROGRESS]
                if looping:
                    later = (f", and {to_arrive} job(s) still to arrive never do"
                             if to_arrive else "")
                    log.warning("batchsched: %s: job %s lost %d runs to evictions while no "
                                "job finished, at t=%g (jobs taking their room back from "
                                "each other); the replay stops, the jobs left unfinished%s",
                                self.workload.name, looping[0],
                                MAX_RESTARTS_WITHOUT_PROGRESS, self.now, later)
                    self.stopped_looping = True
                    break
            if self.schedule_period is None:
                self._schedule()
            elif kind == _TICK:
                self._tick_due = False
                self._schedule()
            elif not self._tick_due and self._tick_for(kind):
                self._tick_due = True
                self._push(next_multiple(self.now, self.schedule_period), _TICK, None)
            if not to_arrive and not self._tick_due:
                # Every job arrived and the sessions since have placed what they could.
                self.timeline.last_arrival_scheduled()
        if (not cut and not self.stopped_looping and self.until is not None
                and (self._running or self._waiting)):
            # No event is left, yet pods run on (a pod that never ends) or wait: the
            # clock runs to the horizon, as when an event lies past it.
            self.cache.now = max(self.now, self.until)
            cut = True
        # Wake-up sessions at the end that changed nothing do not stretch the clock.
        end = self._quiet_since if self._idle_wakes and not cut else self.now
        self.timeline.close(end, self._waiting, cut=cut)
        return self.timeline

    def _wake_session(self, at: float, askers: set[str]) -> None:
        """The session the plugins ``askers`` asked for. One that changes nothing
        (binds, evicts, takes back nothing) with nothing else to come counts toward
        ``MAX_IDLE_WAKE_UPS`` for each of them, after which their wake-ups are no
        longer honoured (the others' still are)."""
        before = self.now
        moves = self._moves()
        self.cache.now = max(self.now, at)
        self._schedule()
        if self._moves() != moves or any(event[1] < _TICK for event in self._events):
            self._idle_wakes = 0
            self._idle_wakes_of.clear()
            return
        if self._idle_wakes == 0:
            self._quiet_since = before
        self._idle_wakes += 1
        spent = []
        for plugin in sorted(askers):
            self._idle_wakes_of[plugin] = self._idle_wakes_of.get(plugin, 0) + 1
            if self._idle_wakes_of[plugin] >= MAX_IDLE_WAKE_UPS:
                spent.append(plugin)
        if spent:
            for plugin in spent:
                log.warning("batchsched: %s: %d sessions in a row at %s's wake-ups changed "
                            "nothing, and nothing else is to come; no more of its wake-ups",
                            self.workload.name, MAX_IDLE_WAKE_UPS, plugin)
            self._wakes_spent.update(spent)
            # The session asked for its earliest wake-up, which may be one given up
            # now: the other plugins' are asked again.
            self._ask_wake_up(self._last_wake_ups)

    def _moves(self) -> tuple[int, int, int]:
        """How many binds, evictions and unbinds the cache has seen."""
        cache = self.cache
        return len(cache.binds), len(cache.evictions), len(cache.unbinds)

    def _ask_wake_up(self, wake_ups: Mapping[str, float]) -> None:
        """Queue a session at the earliest of the plugins' wake-ups (plugin -> instant
        its answers change with time alone, ``Session.wake_up_at``) but those given
        up: at that instant, or with a period at the first tick from it on (strictly
        after now: the session of this instant ran). The session then asks again."""
        self._last_wake_ups = dict(wake_ups)
        honoured = {plugin: at for plugin, at in wake_ups.items()
                    if plugin not in self._wakes_spent}
        if not honoured:
            return
        earliest = min(honoured.values())
        askers = {plugin for plugin, at in honoured.items() if at == earliest}
        at = earliest
        if self.schedule_period is not None:
            at = first_multiple_from(at, self.schedule_period)
            if at <= self.now:
                at = next_multiple(self.now, self.schedule_period)
            # Every wake-up that falls on the same tick is that tick's.
            askers = {plugin for plugin, when in honoured.items()
                      if first_multiple_from(when, self.schedule_period) <= at}
        if at <= self.now or (self.until is not None and at > self.until):
            return
        if at not in self._wakes:
            self._push(at, _WAKE, None)
        self._wakes.setdefault(at, set()).update(askers)

    def _tick_for(self, kind: int) -> bool:
        """Whether the change just taken asks for a tick. Evictions alone do, up to
        ``MAX_SESSIONS_PER_INSTANT`` in a row: evictions that undo each other from tick
        to tick would otherwise move the clock for ever; the next arrival or
        completion schedules again."""
        if kind != _EVICTED:
            return True
        if self._eviction_ticks >= MAX_SESSIONS_PER_INSTANT:
            if not self._looped_ticks:
                log.warning("batchsched: %s: %d ticks in a row asked for by evictions alone "
                            "(evictions undoing each other); none more until a job arrives "
                            "or a task completes", self.workload.name,
                            MAX_SESSIONS_PER_INSTANT)
                self._looped_ticks = True
            return False
        self._eviction_ticks += 1
        return True

    # -- what happens to jobs -------------------------------------------------------------

    def _arrive(self, uid: str) -> None:
        job = self._jobs[uid].arrive()
        self.cache.add_job(job)
        self.timeline.arrived(uid, self.now)
        # A job may arrive with tasks already on nodes (a snapshot of a live cluster
        # replayed forward): they run from their start time, or from now.
        placed = {task.uid: task.start_time if task.start_time is not None else self.now
                  for task in job.tasks.values()
                  if task.node_name and task.status in _RUNNING_ON_ARRIVAL}
        for task in list(job.tasks_in(TaskStatus.RELEASING).values()):
            self.cache.task_ended(uid, task.uid)  # its pod was already going away
        if placed:
            self._run(uid, placed)
        elif job.tasks_in(TaskStatus.PENDING):
            self._waiting.add(uid)

    def _stale(self, completion: tuple[Any, ...]) -> bool:
        """Whether a completion event ends a run that is over already (evicted)."""
        running = self._running.get(completion[0])
        return running is None or running.generation != completion[1]

    def _complete(self, uid: str, tasks: tuple[str, ...]) -> None:
        """The end of a run's tasks (the loop skipped the stale ones, :meth:`_stale`)."""
        running = self._running[uid]
        for task in tasks:
            if task in running.tasks:  # not ended already by an eviction at its end
                self._end(uid, running, task)
        self._finish_if_done(uid)

    def _end(self, uid: str, running: _Running, task: str) -> None:
        gone = self.cache.jobs[uid].tasks[task]
        on, pod, name = gone.node_name, gone.order_uid, gone.uid
        self.cache.task_ended(uid, task)
        self._exporter_sees_gone(on, pod, name)
        running.tasks.discard(task)
        self.timeline.released(uid, task, self.now, self.cache)

    def _exporter_sees_gone(self, node_name: str, pod_uid: str, pod_name: str) -> None:
        """A pod that left its node: the node's NUMA exporter, if it reported the pod
        (``podAllocations``, a cluster's state replayed forward), reports its CPUs free
        once no pod it reports runs there (it does not say which CPUs each pod holds:
        until the last one leaves, they stay taken). CPUs the replay's own sessions
        handed out are the cache's to give back, as it does."""
        node = self.cache.nodes.get(node_name)
        topology = node.numa_topology if node is not None else None
        if (node is None or topology is None or not topology.reports(pod_uid, pod_name)
                or any(topology.reports(held.order_uid, held.uid)
                       for held in node.tasks.values())):
            return
        reported = node.clone()
        reported.numa_topology = topology.fresh()
        self.cache.add_node(reported)

    def _finish_if_done(self, uid: str) -> None:
        job = self.cache.jobs[uid]
        if all(task.status in _ENDED for task in job.tasks.values()):
            del self._running[uid]
            self.cache.delete_job(uid)
            self.timeline.finished(uid, self.now)
            self._runs_lost.clear()
            if self.progress is not None:
                self.progress(self.timeline.finished_count, len(self.workload.jobs))

    def _evicted(self, victims: tuple[tuple[str, str], ...]) -> None:
        # A victim whose pod is no longer being deleted was already recreated by an
        # earlier eviction at this instant (its gang restarted), and may be running
        # again: the scheduler evicted the old pod, not this one.
        victims = tuple((uid, task) for uid, task in victims if self._releasing(uid, task))
        # A victim whose run ends at this very instant (its completion not yet taken:
        # arrivals come first) has done its work: it completes, it is not run again.
        over = dict.fromkeys(victim for victim in victims if self._run_over(*victim))
        for uid, task in over:
            self._end(uid, self._running[uid], task)
        for uid in dict.fromkeys(uid for uid, _ in over):
            self._finish_if_done(uid)
        victims = tuple(victim for victim in victims if victim not in over)
        restart_whole = {uid for uid, _ in victims if self._jobs[uid].restart == RESTART_GANG}
        # One run lost per job, however many of its tasks went at once; none when no
        # victim was still in the job's run (an earlier eviction at this instant
        # already restarted the gang).
        for uid in dict.fromkeys(uid for uid, task in victims if self._in_run(uid, task)):
            self.timeline.evicted(uid, self.now)
            self._runs_lost[uid] = self._runs_lost.get(uid, 0) + 1
        for uid, task in victims:
            if uid not in restart_whole:
                self._recreate(uid, task)
        for uid in restart_whole:
            # Volcano's RestartJob kills every pod of the job, finished ones included
            # (PodRetainPhaseNone), and its controller creates them all again.
            job = self.cache.jobs[uid]
            for member in list(job.tasks.values()):
                if member.status is TaskStatus.PENDING:
                    continue
                if member.status in _ENDED:
                    self.cache.task_recreated(uid, member.uid)  # it held nothing
                    self._waiting.add(uid)
                else:
                    self._recreate(uid, member.uid)

    def _releasing(self, uid: str, task: str) -> bool:
        job = self.cache.jobs.get(uid)
        held = job.tasks.get(task) if job is not None else None
        return held is not None and held.status is TaskStatus.RELEASING

    def _run_over(self, uid: str, task: str) -> bool:
        """Whether the task, in the job's run, has run its whole run time by now."""
        if not self._in_run(uid, task):
            return False
        started = self.cache.jobs[uid].tasks[task].start_time
        return started is not None and started + self._jobs[uid].run_times[task] <= self.now

    def _in_run(self, uid: str, task: str) -> bool:
        running = self._running.get(uid)
        return running is not None and task in running.tasks

    def _recreate(self, uid: str, task: str) -> None:
        running = self._running.get(uid)
        if running is not None and task in running.tasks:
            running.tasks.discard(task)
            running.generation += 1  # the completions scheduled for this run are void
            self._reschedule(uid, running)
        gone = self.cache.jobs[uid].tasks[task]
        on, pod, name = gone.node_name, gone.order_uid, gone.uid
        self.cache.task_recreated(uid, task)
        self._exporter_sees_gone(on, pod, name)
        self.timeline.released(uid, task, self.now, self.cache)
        self._waiting.add(uid)

    def _reschedule(self, uid: str, running: _Running) -> None:
        """Schedule again the completions of the job's tasks that still run."""
        job = self.cache.jobs[uid]
        ends: dict[float, list[str]] = {}
        for task in running.tasks:
            started = job.tasks[task].start_time
            start = started if started is not None else self.now  # 0.0 is a start time
            ends.setdefault(start + self._jobs[uid].run_times[task], []).append(task)
        for end, tasks in sorted(ends.items()):
            if end != math.inf:
                self._push(end, _COMPLETION,
                           (uid, running.generation, tuple(sorted(tasks)), self.now))

    # -- sessions -----------------------------------------------------------------------

    def _schedule(self) -> None:
        if not self._waiting:
            return
        if self.now != self._instant[0]:
            self._instant = (self.now, 0)
        if self._instant[1] >= MAX_SESSIONS_PER_INSTANT:
            # Evictions that come back Pending at once may evict again, and again,
            # without the clock moving or a job arriving or ending: the instant is
            # over; the next event goes on.
            if not self._looped:
                log.warning("batchsched: %s: %d sessions at t=%g without the clock moving "
                            "(evictions undoing each other); no more at this instant",
                            self.workload.name, MAX_SESSIONS_PER_INSTANT, self.now)
                self._looped = True
            return
        self._instant = (self.now, self._instant[1] + 1)
        self.controllers.refresh(self.cache.jobs.values())
        ssn = self.scheduler.run_once()
        self.sessions += 1
        self._ask_wake_up(ssn.wake_ups)
        self._start_bound_tasks()
        self._take_unbinds()
        self._take_evictions()
        if self.observe is not None:
            self.observe(self)

    def _start_bound_tasks(self) -> None:
        binds = self.cache.binds
        if self._binds_seen == len(binds):
            return
        started: dict[str, list[str]] = {}
        for bind in binds[self._binds_seen:]:
            job_uid = self._job_of_task[bind.task]
            job = self.cache.jobs.get(job_uid)
            task = job.tasks.get(bind.task) if job is not None else None
            if task is None or task.status is not TaskStatus.BOUND or not task.node_name:
                continue  # a bind taken back since (a gang's other bind failed)
            started.setdefault(job_uid, []).append(bind.task)
        self._binds_seen = len(binds)
        now = self.now
        for uid, tasks in started.items():
            self._run(uid, dict.fromkeys(tasks, now))

    def _run(self, uid: str, starts: dict[str, float]) -> None:
        """The job's tasks ``starts`` (task uid -> start time) run: their completions
        are scheduled at start plus run time."""
        running = self._running.setdefault(uid, _Running())
        ends: dict[float, list[str]] = {}
        now = self.now
        for task, start in starts.items():
            self.cache.task_started(uid, task, at=start)
            running.tasks.add(task)
            end = max(start + self._jobs[uid].run_times[task], now)
            ends.setdefault(end, []).append(task)
            self.timeline.placed(uid, task, now, self.cache)
        for end, ending in sorted(ends.items()):
            if end != math.inf:  # a task that never ends (a GPU packing experiment)
                self._push(end, _COMPLETION, (uid, running.generation, tuple(ending), now))
        job = self.cache.jobs[uid]
        if job.tasks_in(TaskStatus.PENDING):
            self._waiting.add(uid)
        else:
            self._waiting.discard(uid)
        self.timeline.started(uid, now)

    def _take_unbinds(self) -> None:
        """Binds taken back in the session (a gang's other bind failed): those tasks are
        Pending again, and their jobs wait for the next session."""
        unbinds = self.cache.unbinds
        for unbind in unbinds[self._unbinds_seen:]:
            self._waiting.add(self._job_of_task[unbind.task])
        self._unbinds_seen = len(unbinds)

    def _take_evictions(self) -> None:
        evictions = self.cache.evictions
        if self._evictions_seen == len(evictions):
            return
        victims = tuple(
            (self._job_of_task[eviction.task], eviction.task)
            for eviction in evictions[self._evictions_seen:]
        )
        self._evictions_seen = len(evictions)
        self._push(self.now, _EVICTED, victims)


def simulate(
    workload: Workload,
    configuration: SchedulerConfiguration | None = None,
    **options: Any,
) -> Timeline:
    """Replay ``workload`` under ``configuration`` and return its timeline
    (see :class:`Simulator` for the options)."""
    return Simulator(workload, configuration, **options).run()


def check_workload(workload: Workload) -> None:
    """Raise WorkloadError naming the job, task or node a replay cannot take as it is:
    a run time missing, for a task not the job's, or no number of seconds >= 0; a
    submit time that is none; a restart rule that is neither gang nor task; a job, a
    task or a node given twice (the scenario loader refuses these too); a job of a
    queue the workload does not declare (the scenario loader leaves such a job out,
    with a warning: one built in code is refused)."""
    queues = {queue.name for queue in workload.queues} | {"default", ROOT_QUEUE}
    nodes: set[str] = set()
    for node in workload.nodes:
        if node.name in nodes:
            raise WorkloadError(f"node {node.name}: given twice", source=workload.name)
        nodes.add(node.name)
    owners: dict[str, str] = {}  # task -> its job
    jobs: set[str] = set()
    for job in workload.jobs:
        where = job.origin or workload.name
        if job.restart not in (RESTART_GANG, RESTART_TASK):
            raise WorkloadError(f"job {job.uid}: restart {job.restart!r} is not "
                                f"{RESTART_GANG} or {RESTART_TASK}", source=where)
        missing = sorted(set(job.prototype.tasks) - set(job.run_times))
        if missing:
            raise WorkloadError(f"job {job.uid}: no run time for task {missing[0]} "
                                f"(run_times are keyed by task uid: "
                                f"{', '.join(sorted(job.prototype.tasks))})", source=where)
        foreign = sorted(set(job.run_times) - set(job.prototype.tasks))
        if foreign:
            raise WorkloadError(f"job {job.uid}: a run time for {foreign[0]}, which is not "
                                "one of its tasks", source=where)
        if job.uid in jobs:
            raise WorkloadError(f"job {job.uid}: given twice", source=where)
        if job.prototype.queue not in queues:
            raise WorkloadError(f"job {job.uid}: queue {job.prototype.queue!r} is not one of "
                                f"the workload's queues ({', '.join(sorted(queues))})",
                                source=where)
        jobs.add(job.uid)
        for task in job.prototype.tasks:
            other = owners.get(task)
            if other is not None:
                raise WorkloadError(f"job {job.uid}: task {task} is job {other}'s too (a pod "
                                    "id is one pod)", source=where)
            owners[task] = job.uid
        if not _is_seconds(job.submit) or not math.isfinite(job.submit):
            raise WorkloadError(f"job {job.uid}: submit time {job.submit!r} is no number "
                                "of seconds", source=where)
        if abs(job.submit) > MOST_SECONDS:
            raise WorkloadError(f"job {job.uid}: submit time {job.submit:g} is more "
                                "seconds than a replay counts exactly (at most "
                                f"{MOST_SECONDS:.0e})", source=where)
        # inf is a pod that never ends (a trace's pod still running); NaN fails too.
        wrong = next((task for task, seconds in sorted(job.run_times.items())
                      if not (_is_seconds(seconds) and seconds >= 0)), None)
        if wrong is not None:
            raise WorkloadError(f"job {job.uid}: task {wrong}'s run time "
                                f"{job.run_times[wrong]!r} is no number of seconds >= 0",
                                source=where)
        too_long = next((task for task, seconds in sorted(job.run_times.items())
                         if MOST_SECONDS < seconds < math.inf), None)
        if too_long is not None:
            raise WorkloadError(f"job {job.uid}: task {too_long}'s run time "
                                f"{job.run_times[too_long]:g} is more seconds than a "
                                f"replay counts exactly (at most {MOST_SECONDS:.0e})",
                                source=where)


def _is_seconds(value: object) -> bool:
    """A real number (numpy's included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
