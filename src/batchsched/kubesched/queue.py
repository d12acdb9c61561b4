"""kube-scheduler's scheduling queue: active, backoff and unschedulable pods.

* **active**: pods ready to be tried, popped best first (the profile's
  QueueSort ``less``; by default higher priority first); pods the order leaves
  equal go by the time they were queued (kube-scheduler's ``Timestamp``, reset
  when a pod fails), then creation;
* **gated**: pods PreEnqueue keeps out (scheduling gates): they stay among the
  unschedulable pods. Every pod is asked again (``admit``) whenever it would move
  to active (with ``pop_from_backoff``, to backoff), and a refused pod is gated;
* **backoff**: pods that failed recently, each until its backoff ends
  (``initial x 2^(attempts - 1)``, at most ``maximum`` seconds); a pod an error
  failed waits in a backoff of its own (kube's ``podErrorBackoffQ``);
* **unschedulable**: pods that failed and wait for a cluster event that may
  help (:meth:`SchedulingQueue.move_all_to_active_or_backoff`), or for
  ``unschedulable_timeout`` seconds at most. With queueing hints (``hints``, which
  :class:`~batchsched.kubesched.scheduler.PodScheduler` sets from its profiles), an
  event moves only the pods whose rejecting plugins registered it and whose hints
  say it may help (:mod:`batchsched.kubesched.events`); an event received while a
  pod was being scheduled counts for it when it fails. With hints whose functions
  are off (kube's ``SchedulerQueueingHints`` off), the events registered still choose
  the pods, every hint answers Queue, and any event received while a pod was in
  flight counts for it. Without hints (a queue of no profile), every event moves
  every unschedulable pod.

With ``pop_from_backoff`` (kube-scheduler's ``SchedulerPopFromBackoffQ``, on by
default since kube 1.33), backoff ends are truncated to whole seconds (kube's
ordering window: a backoff ends once the clock is past its window) and, when no
pod is active, the backoff pod whose backoff ends first (in the same window, the
best by the active order) is popped at once; a pod an error failed waits its
backoff out. Without it, a backoff ends at its exact time and the queue pops
only active pods.

Time is whatever clock the host passes in (``now``): a simulation's or the wall
clock's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable

import attrs

from batchsched.api.task import TaskInfo
from batchsched.kubesched.events import (
    FORCE_ACTIVATE,
    ClusterEvent,
    QueueingHints,
    Strategy,
    _Received,
    event_named,
)

__all__ = ["PodWait", "QueuedPod", "SchedulingQueue", "default_less"]

Less = Callable[[TaskInfo, TaskInfo], bool]


def default_less(left: TaskInfo, right: TaskInfo) -> bool:
    """kube-scheduler's PrioritySort: higher priority first (the pod's own, which a
    ``volcano.sh/task-priority`` annotation does not change; the queue orders equal
    priorities by when they were queued, as PrioritySort's timestamp does)."""
    return left.pod_priority > right.pod_priority


@attrs.define
class QueuedPod:
    """A pod in the queue: its attempts, when it was queued (``since``), when it may be
    tried again, and whether PreEnqueue keeps it out (``gated``)."""

    pod: TaskInfo
    attempts: int = 0
    since: float = 0.0
    ready_at: float = 0.0
    gated: bool = False
    #: In backoff because of an error (kube's ``podErrorBackoffQ``): never popped
    #: before its backoff ends.
    error: bool = False
    #: The scheduling cycle the pod was last popped in (kube's ``podSchedulingCycle``).
    cycle: int = 0
    #: The plugins that rejected it last (kube's ``UnschedulablePlugins``): the
    #: queueing hints of these decide which events move it.
    unschedulable_plugins: frozenset[str] = frozenset()


@attrs.frozen
class PodWait:
    """Where a queued pod stands and what may move it (:meth:`SchedulingQueue.where`)."""

    pod: str
    #: ``active``, ``backoff``, ``unschedulable`` or ``gated`` (PreEnqueue keeps it out).
    state: str
    attempts: int
    #: The plugins that turned it down last (empty: none did, or not tried yet).
    rejected_by: tuple[str, ...]
    #: The events that may move it (what its rejecting plugins registered; ``*``: any);
    #: for a pod waiting at Permit, the plugins still to allow it.
    awaits: tuple[str, ...]
    #: When it is tried again at the latest (its backoff's end; an unschedulable pod:
    #: the end of its timeout, which the clock must pass; for a pod waiting at Permit,
    #: its first deadline; None: a gated pod, which waits for its gates).
    retry_by: float | None
    #: The node a pod waiting at Permit is assumed on.
    node: str = ""

    def __str__(self) -> str:
        text = f"{self.pod}: {self.state}"
        if self.attempts:
            text += f" after {self.attempts} attempt(s)"
        if self.rejected_by:
            text += f", turned down by {', '.join(self.rejected_by)}"
        if self.state == "waiting at permit":
            text += f" on {self.node}, for {', '.join(self.awaits)} to allow it"
        if self.state == "unschedulable":
            events = "any event" if "*" in self.awaits else " or ".join(self.awaits) \
                or "no event"
            text += f"; waits for {events}"
        if self.retry_by is not None and self.state == "waiting at permit":
            text += f"; times out at t={_time(self.retry_by)}"
        elif self.retry_by is not None and self.state == "unschedulable":
            text += f"; tried again once t is past {_time(self.retry_by)}"
        elif self.retry_by is not None:
            text += f"; tried again by t={_time(self.retry_by)}"
        return text


def _time(seconds: float) -> str:
    """A time as written in full (a wall clock's seconds too), to the microsecond."""
    return f"{seconds:.6f}".rstrip("0").rstrip(".")


class SchedulingQueue:
    """Active, backoff and unschedulable sub-queues (see the module docstring)."""

    def __init__(self, less: Less | None = None, *, initial_backoff: float = 1.0,
                 max_backoff: float = 10.0, unschedulable_timeout: float = 300.0,
                 admit: Callable[[TaskInfo], bool] | None = None,
                 pop_from_backoff: bool = True) -> None:
        self.less = less or default_less
        self.pop_from_backoff = pop_from_backoff
        #: PreEnqueue, asked again before a pod moves to active (see the module docstring).
        self.admit = admit
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        self.active: dict[str, QueuedPod] = {}
        self.backoff: dict[str, QueuedPod] = {}
        self.unschedulable: dict[str, QueuedPod] = {}
        #: How many pods were popped (kube's ``schedulingCycle``), and the count when
        #: the last cluster event moved the unschedulable pods (``moveRequestCycle``).
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        #: The profiles' queueing hints; None: every event moves every pod.
        self.hints: QueueingHints | None = None
        #: Pods popped and not yet back or done, by the cycle they were popped in
        #: (kube's in-flight pods), and the events received meanwhile.
        self.in_flight: dict[str, int] = {}
        self._received: list[_Received] = []

    def __contains__(self, uid: object) -> bool:
        return uid in self.active or uid in self.backoff or uid in self.unschedulable

    def __len__(self) -> int:
        return len(self.active) + len(self.backoff) + len(self.unschedulable)

    def add(self, pod: TaskInfo, now: float) -> None:
        """A new pod (or one whose spec changed): straight to active."""
        self.delete(pod.uid)
        self.active[pod.uid] = QueuedPod(pod, since=now)

    def queued(self, uid: str) -> QueuedPod | None:
        """The pod's entry, in whichever sub-queue it is (None: not queued)."""
        return self.active.get(uid) or self.backoff.get(uid) or self.unschedulable.get(uid)

    def where(self, uid: str) -> PodWait | None:
        """Where the pod stands in the queue and what may move it (None: not queued)."""
        queued = self.queued(uid)
        if queued is None:
            return None
        rejected_by = tuple(sorted(queued.unschedulable_plugins))
        if uid in self.active:
            state, retry_by = "active", queued.since
        elif uid in self.backoff:
            # With pop_from_backoff a backoff ends once the clock is past its window
            # (the whole second it ends in).
            end = math.floor(queued.ready_at) + 1 if self.pop_from_backoff else queued.ready_at
            state, retry_by = "backoff", float(end)
        elif queued.gated:
            state, retry_by = "gated", None
        else:
            # Strictly after the timeout (kube's flushUnschedulablePodsLeftover).
            state, retry_by = "unschedulable", queued.since + self.unschedulable_timeout
        if self.hints is None:
            awaits: tuple[str, ...] = ("*",)
        else:
            awaits = self.hints.awaited(queued.pod, queued.unschedulable_plugins)
        return PodWait(uid, state, queued.attempts, rejected_by, awaits, retry_by)

    def delete(self, uid: str) -> None:
        for queue in (self.active, self.backoff, self.unschedulable):
            queue.pop(uid, None)

    def backoff_seconds(self, attempts: int) -> float:
        seconds = self.initial_backoff * 2.0 ** max(attempts - 1, 0)
        return min(seconds, self.max_backoff)

    def add_unschedulable(self, pod: TaskInfo, now: float, *, attempts: int,
                          cycle: int | None = None, plugins: Iterable[str] = ()) -> None:
        """A pod that failed its cycle, turned down by ``plugins``: it waits for an
        event (or the timeout). When an event that may help it came while it was being
        scheduled (popped in ``cycle``, or waiting at Permit since), the pod goes to
        backoff while its backoff runs, else to active, as kube's
        ``AddUnschedulableIfNotPresent`` requeues a pod in flight. Without hints any
        event counts (and with hints whose functions are off, any event some plugin
        registered); with hints, one its rejecting plugins' hints queue it for; with
        hints, a pod no plugin rejected waits out an error backoff (kube counts a
        consecutive error: no event is awaited)."""
        rejected_by = frozenset(plugins)
        if self.hints is not None and not rejected_by:
            self.add_backoff(pod, now, attempts=attempts)
            return
        self.delete(pod.uid)
        queued = QueuedPod(pod, attempts, now, now + self.backoff_seconds(attempts),
                           unschedulable_plugins=rejected_by)
        if self.hints is not None and self.hints.hint_functions:
            received = [entry for entry in self._received
                        if cycle is not None and entry.cycle >= cycle]
            helped = self.hints.strategy_in_flight(
                pod, rejected_by, received) is Strategy.AFTER_BACKOFF
        else:
            helped = cycle is not None and self.move_request_cycle >= cycle
        self.done(pod.uid)
        if helped:
            to_backoff = self.backing_off(queued, now)
            if (not to_backoff or self.pop_from_backoff) and not self._admitted(queued):
                self.unschedulable[pod.uid] = queued
                return
            (self.backoff if to_backoff else self.active)[pod.uid] = queued
            return
        self.unschedulable[pod.uid] = queued

    def add_gated(self, pod: TaskInfo, now: float) -> None:
        """A pod PreEnqueue keeps out: among the unschedulable pods until admitted."""
        self.delete(pod.uid)
        self.unschedulable[pod.uid] = QueuedPod(pod, 0, now, now, gated=True)

    def _admitted(self, queued: QueuedPod) -> bool:
        """PreEnqueue, asked again of every pod about to move to active (and, with
        ``pop_from_backoff``, to backoff), as kube's ``moveToActiveQ`` asks it: a pod
        admitted once may be refused now, and is gated again."""
        if self.admit is None:
            return not queued.gated
        queued.gated = not self.admit(queued.pod)
        return not queued.gated

    def _gate(self, queued: QueuedPod) -> None:
        """A pod PreEnqueue refused on its way out of backoff: unschedulable, gated."""
        self.backoff.pop(queued.pod.uid, None)
        self.unschedulable.setdefault(queued.pod.uid, queued)

    def add_backoff(self, pod: TaskInfo, now: float, *, attempts: int) -> None:
        """A pod that failed for a reason that may pass by itself (an error). With
        ``pop_from_backoff``, PreEnqueue is asked on the way in (kube's
        ``moveToBackoffQ``): a pod it refuses is gated instead."""
        self.delete(pod.uid)
        self.done(pod.uid)
        queued = QueuedPod(pod, attempts, now, now + self.backoff_seconds(attempts), error=True)
        if self.pop_from_backoff and not self._admitted(queued):
            self.unschedulable[pod.uid] = queued
            return
        self.backoff[pod.uid] = queued

    def readmit(self, pod: TaskInfo) -> None:
        """A gated pod PreEnqueue now admits (its gate lifted): to active, keeping its
        attempts and when it was queued (kube updates the queued pod in place; a gated
        pod is not backing off)."""
        queued = self.unschedulable.pop(pod.uid)
        queued.pod, queued.gated = pod, False
        self.active[pod.uid] = queued

    def backing_off(self, queued: QueuedPod, now: float) -> bool:
        """Whether the pod's backoff still runs at ``now`` (kube's ``isPodBackingoff``:
        with ``pop_from_backoff``, by whole-second windows; a pod never tried, or a
        queue without backoff, has none)."""
        if not self.pop_from_backoff:
            return queued.ready_at > now
        if queued.attempts == 0 or self.max_backoff <= 0:
            return False
        return math.floor(queued.ready_at) >= math.floor(now)

    def move_all_to_active_or_backoff(self, now: float, event: str | ClusterEvent = "", *,
                                      exclude: str = "", old: object = None,
                                      new: object = None,
                                      pre_check: Callable[[TaskInfo], bool] | None = None,
                                      ) -> int:
        """A cluster event that may make pods schedulable (``NodeAdd``,
        ``AssignedPodDelete``, ...: :func:`~batchsched.kubesched.events.event_named`;
        ``old`` and ``new`` are the objects it changed, which hints look at): the
        unschedulable pods it may help (all of them without hints; but ``exclude``, the
        pod whose failure caused the event) go to backoff while their backoff runs,
        else to active. Returns how many moved. A pod being scheduled meanwhile
        (popped, or waiting at Permit) is requeued as if it had been among them when
        it fails (:meth:`add_unschedulable`). An event no plugin registered moves
        nothing and is not kept. ``pre_check`` narrows the pods it may move (kube's
        ``PreEnqueueCheck``)."""
        incoming = event_named(event)
        hints = self.hints
        if hints is not None and not hints.interested(incoming):
            return 0
        self.move_request_cycle = self.scheduling_cycle
        if hints is not None and hints.hint_functions and self.in_flight:
            self._received.append(_Received(self.scheduling_cycle, incoming, old, new))
        moved = 0
        for uid, queued in list(self.unschedulable.items()):
            if uid == exclude or (pre_check is not None and not pre_check(queued.pod)):
                continue
            if hints is not None and not queued.gated and hints.strategy(
                    queued.pod, queued.unschedulable_plugins, incoming, old,
                    new) is Strategy.SKIP:
                continue
            # A gated pod is not backing off (kube's isPodBackingoff); without
            # pop_from_backoff, kube asks PreEnqueue when the backoff ends.
            to_backoff = not queued.gated and self.backing_off(queued, now)
            if (not to_backoff or self.pop_from_backoff) and not self._admitted(queued):
                continue
            del self.unschedulable[uid]
            (self.backoff if to_backoff else self.active)[uid] = queued
            moved += 1
        return moved

    def activate(self, uids: Iterable[str]) -> None:
        """Move these pods, if they wait unschedulable or in backoff, to active (a
        gated pod only once PreEnqueue admits it): kube-scheduler's ``Activate``. A pod
        being scheduled meanwhile is requeued when it fails, as an event that may help
        it only (kube's ``ForceActivate`` of an in-flight pod)."""
        for uid in uids:
            queued = self.backoff.get(uid) or self.unschedulable.get(uid)
            if queued is None:
                if uid in self.in_flight:
                    self._received.append(_Received(self.scheduling_cycle, FORCE_ACTIVATE,
                                                    None, uid))
                    self.move_request_cycle = self.scheduling_cycle
                continue
            if not self._admitted(queued):
                self._gate(queued)
                continue
            self.backoff.pop(uid, None)
            self.unschedulable.pop(uid, None)
            self.active[uid] = queued

    def flush(self, now: float) -> None:
        """Backoff pods whose backoff ended, and unschedulable pods that waited the
        timeout, become active."""
        for uid, queued in list(self.backoff.items()):
            if not self.backing_off(queued, now):
                # With pop_from_backoff, PreEnqueue was asked on the way into backoff.
                if not self.pop_from_backoff and not self._admitted(queued):
                    self._gate(queued)
                    continue
                del self.backoff[uid]
                self.active[uid] = queued
        for uid, queued in list(self.unschedulable.items()):
            # Strictly longer than the timeout (kube's flushUnschedulablePodsLeftover).
            if now - queued.since > self.unschedulable_timeout and self._admitted(queued):
                del self.unschedulable[uid]
                self.active[uid] = queued

    def pop(self, now: float) -> QueuedPod | None:
        """The best active pod (after a :meth:`flush`); with ``pop_from_backoff`` and no
        active pod, the first of backoff (an error's backoff aside); else None."""
        self.flush(now)
        if self.active:
            best = min(self.active.values(), key=functools.cmp_to_key(self._compare))
            return self._popped(self.active.pop(best.pod.uid))
        if not self.pop_from_backoff:
            return None
        waiting = [queued for queued in self.backoff.values() if not queued.error]
        if not waiting:
            return None

        def by_window(left: QueuedPod, right: QueuedPod) -> int:
            # kube's backoff order: the window the backoff ends in, then the active order.
            mine, theirs = math.floor(left.ready_at), math.floor(right.ready_at)
            if mine != theirs:
                return -1 if mine < theirs else 1
            return self._compare(left, right)

        first = min(waiting, key=functools.cmp_to_key(by_window))
        return self._popped(self.backoff.pop(first.pod.uid))

    def _popped(self, queued: QueuedPod) -> QueuedPod:
        self.scheduling_cycle += 1
        queued.cycle = self.scheduling_cycle
        self.in_flight[queued.pod.uid] = queued.cycle
        return queued

    def done(self, uid: str) -> None:
        """The pod is no longer being scheduled (bound, requeued or dropped: kube's
        ``Done``); the events no pod in flight can see any more are let go."""
        if self.in_flight.pop(uid, None) is None:
            return
        if not self.in_flight:
            self._received.clear()
        elif self._received:
            oldest = min(self.in_flight.values())
            self._received = [entry for entry in self._received if entry.cycle >= oldest]

    def _compare(self, left: QueuedPod, right: QueuedPod) -> int:
        """The active order: the profile's ``less``, then when queued, creation, uid.
        A ``less`` answering anything but a bool is a ``TypeError``."""
        before = self.less(left.pod, right.pod)
        if before is True:
            return -1
        after = self.less(right.pod, left.pod)
        if before is not False or not isinstance(after, bool):
            raise TypeError(f"less answered {before!r} and {after!r}, not bools")
        if after:
            return 1
        mine = (left.since, left.pod.creation_time, left.pod.uid)
        theirs = (right.since, right.pod.creation_time, right.pod.uid)
        return -1 if mine < theirs else 1 if theirs < mine else 0
