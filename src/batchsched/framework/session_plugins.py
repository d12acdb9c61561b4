"""The plugin half of a session (Volcano's ``framework/session_plugins.go``).

How a plugin registers its functions at each extension point (the ``add_*_fn``
methods, snake_case of Volcano's ``AddXxxFn``), and how the session combines the
enabled plugins' answers, tier by tier, for the actions: orderings (jobs, queues,
tasks, victims) and verdicts (predicates, readiness, evictability...). The rule of
each point is in :mod:`batchsched.framework.extension_points`;
:class:`~batchsched.framework.session.Session` is built on :class:`SessionPlugins`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from batchsched.api.devices import best_fit_devices, gpu_ask, serves
from batchsched.api.fit import FitError
from batchsched.api.hypernode import NetworkTopology, Topology
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.priority_queue import PriorityQueue
from batchsched.api.queue import QueueInfo
from batchsched.api.sub_job import SubJobInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import Vote
from batchsched.conf import Tier
from batchsched.errors import DryRunError, PluginError
from batchsched.framework import combine
from batchsched.framework.events import EventHandler, EvictionContext, ValidateResult
from batchsched.framework.extension_points import EXTENSION_POINTS
from batchsched.framework.network_topology import sub_job_session_topology

if TYPE_CHECKING:
    from batchsched.framework.recording import Recorder

__all__ = ["SessionPlugins", "compare_task_default"]

Fn = Callable[..., Any]


class SessionPlugins:
    """The plugin functions a session holds, and their combined answers. Not built on
    its own: :class:`~batchsched.framework.session.Session` sets what it reads."""

    # Set by Session.__init__.
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    now: float
    tiers: tuple[Tier, ...]
    event_handlers: list[EventHandler]
    recorder: Recorder | None
    wake_ups: dict[str, float]
    _fns: dict[str, dict[str, Fn]]
    _bound: dict[str, combine.Bound]
    _configured: frozenset[str]
    _job_order_keys: dict[str, tuple[Callable[[JobInfo], Any], Fn]]
    _task_order_keys: dict[str, tuple[Callable[[TaskInfo], Any], Fn]]
    _queue_order_keys: dict[str, tuple[Callable[[QueueInfo], Any], Fn]]
    _preemptive_many: dict[str, tuple[Callable[[QueueInfo, Sequence[TaskInfo]], bool], Fn]]
    _nan_creation_time: bool | None

    @property
    def topology(self) -> Topology:
        raise NotImplementedError  # the session's hypernode tree (Session.topology)
    # -- registration (snake_case of Volcano's AddXxxFn) -----------------------------------

    def _add(self, point: str, plugin: str, fn: Fn) -> None:
        # Functions are found through the configuration's plugin names (that is how
        # tiers and enable flags apply), so one filed under another name would never
        # run: say so instead of ignoring it.
        if plugin not in self._configured:
            raise PluginError(
                f"{point} function registered under {plugin!r}, which is not a plugin of "
                f"this configuration ({', '.join(sorted(self._configured)) or 'none'}); "
                "register under the plugin's configured name", plugin=plugin, point=point,
            )
        if self.recorder is not None:
            fn = self.recorder.wrap(point, plugin, fn)
        self._fns[point][plugin] = fn
        self._bound.pop(point, None)

    def add_job_order_fn(self, plugin: str, fn: Callable[[JobInfo, JobInfo], int]) -> None:
        self._add("job_order", plugin, fn)

    def add_job_order_key_fn(self, plugin: str, key: Callable[[JobInfo], Any]) -> None:
        """Register the plugin's job order as a sort key: smaller keys go first, and jobs
        with equal keys are left to the next plugin.

        It is the same order as ``add_job_order_fn`` with the comparison of the keys
        (which is registered too, so every reader of the job order sees it), and lets
        actions that rank many jobs sort by key instead of comparing pairs through
        the plugins (:meth:`job_order_key`). Keys must be totally ordered (no NaN)
        and depend only on the job and the session, so that a job's key changes only
        when the job itself does.
        """
        self._add("job_order", plugin, combine.compare_by_key(key))
        self._job_order_keys[plugin] = (key, self._fns["job_order"][plugin])

    def job_order_key(self) -> Callable[[JobInfo], tuple[Any, ...]] | None:
        """The job order as a sort key, or None when some enabled job order plugin
        gave only a comparison (or a recorder watches the comparisons).

        ``sorted(jobs, key=ssn.job_order_key())`` orders as :meth:`job_order_total`
        does: the plugins' keys in tier order, then creation time, then id.
        """
        if self._nan_creation_time is None:
            # The session's tie-break compares creation times, which no key can do
            # for NaN (a NaN is neither before nor after anything).
            self._nan_creation_time = any(
                job.creation_time != job.creation_time for job in self.jobs.values())
        keys = self._plugin_keys("job_order", self._job_order_keys)
        if keys is None or self._nan_creation_time:
            return None
        return _sort_key("job_order", keys, _job_tail)

    def _plugin_keys(
        self, point: str, registered: Mapping[str, tuple[Callable[[Any], Any], Fn]]
    ) -> list[tuple[str, Callable[[Any], Any]]] | None:
        """The enabled plugins' keys of an order point, in tier order; None when one of
        them gave only a comparison, or a recorder watches the comparisons."""
        if self.recorder is not None:
            return None
        keys: list[tuple[str, Callable[[Any], Any]]] = []
        for tier in self.tiers_for(point):
            for plugin, fn in tier:
                kept = registered.get(plugin)
                if kept is None or kept[1] is not fn:
                    return None  # a comparison registered later replaced the key
                keys.append((plugin, kept[0]))
        return keys

    def order_key_fault(self, error: TypeError) -> PluginError | None:
        """For ``error``, a comparison an action failed on, the plugin whose order keys
        cannot be compared with each other (None beside numbers, say): found by sorting
        each plugin's keys on their own, the jobs' and the queues' all together, the
        tasks' job by job (as task queues hold them) and then all together. None when
        ``error`` is no failed comparison, or every plugin's keys sort.

        Keyed queues compare keys in C, where no plugin is named: an action that fails
        with a TypeError asks this to blame the plugin instead."""
        if "not supported between instances of" not in str(error):
            return None
        jobs = list(self.jobs.values())
        groups: tuple[tuple[str, Mapping[str, tuple[Callable[[Any], Any], Fn]],
                            list[Sequence[Any]]], ...] = (
            ("job_order", self._job_order_keys, [jobs]),
            ("task_order", self._task_order_keys,
             [*(list(job.tasks.values()) for job in jobs),
              [task for job in jobs for task in job.tasks.values()]]),
            ("queue_order", self._queue_order_keys, [list(self.queues.values())]))
        for point, keyed, item_groups in groups:
            for plugin, (key, _) in keyed.items():
                for items in item_groups:
                    try:
                        sorted(key(item) for item in items)
                    except TypeError as exc:
                        return PluginError(f"plugin {plugin!r}: its {point} keys cannot be "
                                           f"compared with each other: {exc}",
                                           plugin=plugin, point=point)
                    except Exception:  # a raising key is blamed where it is asked
                        break
        return None

    def job_queue(self, jobs: Iterable[JobInfo] = ()) -> PriorityQueue[JobInfo]:
        """A priority queue in job order (:meth:`job_order_total`) holding ``jobs``
        (none by default; pushed in the order given): keyed when
        :meth:`job_order_key` allows it, else by comparison.

        Keys are worked out at push, so it suits actions in which a queued job does
        not change until it is popped (allocate and its kin push a job back after
        changing it); actions that change queued jobs (evictions) compare instead.
        """
        key = self.job_order_key()
        if key is not None:
            return PriorityQueue.by_key(key, jobs)
        queue = PriorityQueue.by_comparison(self.job_order_total)
        for job in jobs:
            queue.push(job)
        return queue

    def sorted_jobs(self, jobs: Iterable[JobInfo]) -> list[JobInfo]:
        """``jobs`` in job order (:meth:`job_order_total`), by key when possible."""
        key = self.job_order_key()
        if key is None:
            return sorted(jobs, key=functools.cmp_to_key(self.job_order_total))
        return sorted(jobs, key=key)

    def add_queue_order_fn(self, plugin: str, fn: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self._add("queue_order", plugin, fn)

    def add_queue_order_key_fn(self, plugin: str, key: Callable[[QueueInfo], Any]) -> None:
        """The queue order as a sort key (smaller first), as :meth:`add_job_order_key_fn`
        is for jobs: the comparison of the keys is registered too. Keys must be totally
        ordered (no NaN)."""
        self._add("queue_order", plugin, combine.compare_by_key(key))
        self._queue_order_keys[plugin] = (key, self._fns["queue_order"][plugin])

    def queue_priority_queue(self, queues: Iterable[QueueInfo] = ()) -> PriorityQueue[QueueInfo]:
        """A priority queue in queue order (:meth:`queue_order_fn`) holding ``queues``:
        keyed when every enabled queue order plugin gave a key (and no queue has a NaN
        creation time), else by comparison.

        Keys are worked out at push, so it suits actions in which only the queue just
        popped changes before it is pushed back (allocate and enqueue: a placement moves
        its own queue's share); actions that evict from queued queues compare instead.
        """
        keys = self._plugin_keys("queue_order", self._queue_order_keys)
        items = list(queues)
        if keys is not None and not any(
                queue.creation_time != queue.creation_time for queue in self.queues.values()):
            return PriorityQueue.by_key(_sort_key("queue_order", keys, _queue_tail), items)
        return PriorityQueue(self.queue_order_fn, items)

    def add_task_order_fn(self, plugin: str, fn: Callable[[TaskInfo, TaskInfo], int]) -> None:
        self._add("task_order", plugin, fn)

    def add_task_order_key_fn(self, plugin: str, key: Callable[[TaskInfo], Any]) -> None:
        """The task order as a sort key (smaller first), as :meth:`add_job_order_key_fn`
        is for jobs; the key must depend only on the task and the session."""
        self._add("task_order", plugin, combine.compare_by_key(key))
        self._task_order_keys[plugin] = (key, self._fns["task_order"][plugin])

    def task_queue(self, tasks: Iterable[TaskInfo]) -> PriorityQueue[TaskInfo]:
        """``tasks`` in a priority queue in task order (:meth:`task_order_total`).

        Keyed when every enabled task order plugin gave a key and the session's own
        rule can be written as one for these tasks (the name index of every task,
        or of none, and no NaN creation time: the rule compares indexes only when
        both tasks have one, which no key can say for a mix); else by comparison.
        Keys are worked out now, so the tasks must not change while they wait.
        """
        items = list(tasks)
        keys = self._plugin_keys("task_order", self._task_order_keys)
        if keys is not None:
            indexed = sum(1 for task in items if _name_index(task.name) is not None)
            if not any(task.creation_time != task.creation_time for task in items):  # NaN
                if indexed == len(items):
                    return PriorityQueue.by_key(
                        _sort_key("task_order", keys, _task_tail_indexed), items)
                if indexed == 0:
                    return PriorityQueue.by_key(_sort_key("task_order", keys, _task_tail), items)
        queue = PriorityQueue.by_comparison(self.task_order_total)
        for task in items:
            queue.push(task)
        return queue

    def add_cluster_order_fn(self, plugin: str, fn: Callable[[Any, Any], int]) -> None:
        self._add("cluster_order", plugin, fn)

    def add_victim_queue_order_fn(
        self, plugin: str, fn: Callable[[QueueInfo, QueueInfo, QueueInfo], int]
    ) -> None:
        self._add("victim_queue_order", plugin, fn)

    def add_predicate_fn(
        self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], FitError | None]
    ) -> None:
        self._add("predicate", plugin, fn)

    def add_pre_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo], FitError | None]) -> None:
        self._add("pre_predicate", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self._add("allocatable", plugin, fn)

    def add_preemptive_fn(
        self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool], *,
        many: Callable[[QueueInfo, Sequence[TaskInfo]], bool] | None = None,
    ) -> None:
        """``fn(queue, task)``: may the queue reclaim for the task. ``many(queue, tasks)``
        (optional) judges several tasks together, as Volcano's ``PreemptiveFn`` does
        for a gang (their requests summed); without it several tasks pass when each
        does (:meth:`preemptive_all`)."""
        self._add("preemptive", plugin, fn)
        if many is not None:
            self._preemptive_many[plugin] = (many, self._fns["preemptive"][plugin])

    def add_job_ready_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_ready", plugin, fn)

    def add_job_valid_fn(
        self, plugin: str, fn: Callable[[JobInfo], ValidateResult | None]
    ) -> None:
        self._add("job_valid", plugin, fn)

    def add_overused_fn(self, plugin: str, fn: Callable[[QueueInfo], bool]) -> None:
        self._add("overused", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_enqueueable", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_pipelined", plugin, fn)

    def add_preemptable_fn(
        self, plugin: str, fn: Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo] | None]
    ) -> None:
        self._add("preemptable", plugin, fn)

    def add_reclaimable_fn(
        self, plugin: str, fn: Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo] | None]
    ) -> None:
        self._add("reclaimable", plugin, fn)

    def add_unified_evictable_fn(
        self,
        plugin: str,
        fn: Callable[[EvictionContext, list[TaskInfo]], list[TaskInfo] | None],
    ) -> None:
        self._add("unified_evictable", plugin, fn)

    def add_victim_tasks_fn(
        self, plugin: str, fn: Callable[[list[TaskInfo]], list[TaskInfo]]
    ) -> None:
        self._add("victim_tasks", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_starving", plugin, fn)

    def add_target_job_fn(self, plugin: str, fn: Callable[[list[JobInfo]], JobInfo | None]) -> None:
        self._add("target_job", plugin, fn)

    def add_best_node_fn(
        self, plugin: str, fn: Callable[[TaskInfo, dict[float, list[NodeInfo]]], NodeInfo | None]
    ) -> None:
        self._add("best_node", plugin, fn)

    def add_node_order_fn(self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], float]) -> None:
        self._add("node_order", plugin, fn)

    def add_device_select_fn(
        self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], tuple[int, ...] | None]
    ) -> None:
        self._add("device_select", plugin, fn)

    def add_batch_node_order_fn(
        self, plugin: str, fn: Callable[[TaskInfo, list[NodeInfo]], dict[str, float]]
    ) -> None:
        self._add("batch_node_order", plugin, fn)

    def add_sub_job_ready_fn(self, plugin: str, fn: Callable[[SubJobInfo], bool]) -> None:
        self._add("sub_job_ready", plugin, fn)

    def add_sub_job_pipelined_fn(self, plugin: str, fn: Callable[[SubJobInfo], Vote]) -> None:
        self._add("sub_job_pipelined", plugin, fn)

    def add_sub_job_order_fn(
        self, plugin: str, fn: Callable[[SubJobInfo, SubJobInfo], int]
    ) -> None:
        self._add("sub_job_order", plugin, fn)

    def add_hyper_node_order_fn(
        self, plugin: str, fn: Callable[[SubJobInfo, list[str]], Mapping[str, float]]
    ) -> None:
        self._add("hyper_node_order", plugin, fn)

    def add_hyper_node_gradient_for_job_fn(
        self, plugin: str, fn: Callable[[JobInfo, str, str], list[list[str]] | None]
    ) -> None:
        self._add("hyper_node_gradient_for_job", plugin, fn)

    def add_hyper_node_gradient_for_sub_job_fn(
        self, plugin: str, fn: Callable[[SubJobInfo, str, str], list[list[str]] | None]
    ) -> None:
        self._add("hyper_node_gradient_for_sub_job", plugin, fn)

    def add_queue_resource_fn(
        self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], Mapping[str, float]]
    ) -> None:
        """What a placed task's shared devices count in its queue's status at close
        (Volcano's ``AddQueueResource`` of a node's devices): resource name -> amount
        in milli, replacing the task's request for that resource."""
        self._add("queue_resource", plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: Callable[[JobInfo], None]) -> None:
        self._add("job_enqueued", plugin, fn)

    def add_reserved_nodes_fn(self, plugin: str, fn: Callable[[], None]) -> None:
        self._add("reserved_nodes", plugin, fn)

    def add_simulate_add_task_fn(
        self, plugin: str, fn: Callable[[TaskInfo, TaskInfo, NodeInfo], None]
    ) -> None:
        self._add("simulate_add_task", plugin, fn)

    def add_simulate_remove_task_fn(
        self, plugin: str, fn: Callable[[TaskInfo, TaskInfo, NodeInfo], None]
    ) -> None:
        self._add("simulate_remove_task", plugin, fn)

    def add_simulate_allocatable_fn(
        self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]
    ) -> None:
        self._add("simulate_allocatable", plugin, fn)

    def add_simulate_predicate_fn(
        self, plugin: str, fn: Callable[[TaskInfo, NodeInfo], FitError | None]
    ) -> None:
        self._add("simulate_predicate", plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def wake_up_at(self, plugin: str, at: float) -> None:
        """Tell the host that ``plugin``'s answers change at ``at`` (the session clock's
        seconds) with time alone: a waiting time that runs out (sla), a time window
        that opens or closes (tdm), a cooldown that ends (cdp). A host that opens
        sessions on cluster events only (the simulator) opens one then, as Volcano's
        periodic sessions would see the change; a host that schedules every period
        needs none of it. An instant not after ``now`` (or infinite) is no wake-up;
        the earliest of a plugin's is kept."""
        if not self.now < at < math.inf:
            return  # past, now, never or NaN
        kept = self.wake_ups.get(plugin)
        if kept is None or at < kept:
            self.wake_ups[plugin] = at

    @property
    def next_wake_up(self) -> float | None:
        """The earliest instant a plugin asked to be woken at (:meth:`wake_up_at`),
        None when none did."""
        return min(self.wake_ups.values()) if self.wake_ups else None

    def registered(self, point: str) -> Mapping[str, Fn]:
        """The functions registered on a point, by plugin (enabled or not)."""
        return self._fns[point]

    def tiers_for(self, point: str) -> combine.Bound:
        """The enabled functions of a point, grouped by tier, in configuration order."""
        bound = self._bound.get(point)
        if bound is None:
            flag, or_flag = EXTENSION_POINTS[point].flag, EXTENSION_POINTS[point].or_flag
            registered = self._fns[point]
            bound = [
                [(opt.name, registered[opt.name]) for opt in tier.plugins
                 if opt.name in registered
                 and (opt.enabled(flag) or (or_flag is not None and opt.enabled(or_flag)))]
                for tier in self.tiers
            ]
            self._bound[point] = bound
        return bound

    def has(self, point: str) -> bool:
        """Whether any enabled plugin serves the point."""
        return any(self.tiers_for(point))

    # -- orderings ---------------------------------------------------------------------------

    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        """The job order plugins' three-way answer alone (<0: ``left`` first; 0 when no
        plugin decides): :meth:`job_order_total` adds the session's tie-breaks."""
        return combine.first_nonzero("job_order", self.tiers_for("job_order"), left, right)

    def job_order_fn(self, left: JobInfo, right: JobInfo) -> bool:
        """Whether ``left`` goes before ``right`` (a bool, as Volcano's ``JobOrderFn``;
        not a comparison for ``cmp_to_key``: use :meth:`job_order_total` or
        :meth:`sorted_jobs`): plugins, then creation time, then id."""
        result = self.job_order_compare(left, right)
        if result:
            return result < 0
        if left.creation_time != right.creation_time:
            return left.creation_time < right.creation_time
        return left.uid < right.uid

    def job_order_total(self, left: JobInfo, right: JobInfo) -> int:
        """:meth:`job_order_fn` as one three-way comparison (<0: ``left`` first; 0 only
        for the same job), for priority queues that should compare once."""
        tiers = self._bound.get("job_order") or self.tiers_for("job_order")
        result = combine.first_nonzero("job_order", tiers, left, right)
        if result:
            return result
        if left.creation_time != right.creation_time:
            return -1 if left.creation_time < right.creation_time else 1
        if left.uid != right.uid:
            return -1 if left.uid < right.uid else 1
        return 0

    def queue_order_fn(self, left: QueueInfo, right: QueueInfo) -> bool:
        """Whether ``left`` goes before ``right`` (a bool, as Volcano's
        ``QueueOrderFn``: use :meth:`queue_priority_queue` to order queues)."""
        tiers = self._bound.get("queue_order") or self.tiers_for("queue_order")
        result = combine.first_nonzero("queue_order", tiers, left, right)
        if result:
            return result < 0
        if left.creation_time != right.creation_time:
            return left.creation_time < right.creation_time
        return left.uid < right.uid

    def cluster_order_fn(self, left: Any, right: Any) -> bool:
        result = combine.first_nonzero("cluster_order", self.tiers_for("cluster_order"),
                                       left, right)
        return result < 0 if result else False

    def task_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        """The task order plugins' three-way answer alone (0 when no plugin decides)."""
        return combine.first_nonzero("task_order", self.tiers_for("task_order"), left, right)

    def task_order_fn(self, left: TaskInfo, right: TaskInfo) -> bool:
        """Whether ``left`` goes before ``right`` (a bool, as Volcano's ``TaskOrderFn``:
        use :meth:`task_order_total` to sort)."""
        result = self.task_compare(left, right)
        if result:
            return result < 0
        return compare_task_default(left, right)

    def task_order_total(self, left: TaskInfo, right: TaskInfo) -> int:
        """:meth:`task_order_fn` as one three-way comparison (see :meth:`job_order_total`)."""
        tiers = self._bound.get("task_order") or self.tiers_for("task_order")
        result = combine.first_nonzero("task_order", tiers, left, right)
        if result:
            return result
        return _compare_task_default_total(left, right)

    def victim_queue_order_fn(
        self, left: QueueInfo, right: QueueInfo, preemptor_queue: QueueInfo | None
    ) -> bool:
        result = combine.first_nonzero(
            "victim_queue_order", self.tiers_for("victim_queue_order"), left, right,
            preemptor_queue,
        )
        if result:
            return result < 0
        return not self.queue_order_fn(left, right)

    def build_victims_priority_queue(
        self, victims: Iterable[TaskInfo], preemptor: TaskInfo
    ) -> PriorityQueue[TaskInfo]:
        """Victims in eviction order: same job, reverse task order; same queue, reverse
        job order then reverse task order; other queues, the victim-queue order."""
        jobs, queues = self.jobs, self.queues
        preemptor_job = jobs.get(preemptor.job)

        def job_then_task(lj: JobInfo, rj: JobInfo, lt: TaskInfo, rt: TaskInfo) -> bool:
            cmp = self.job_order_compare(lj, rj)
            if cmp:
                return cmp > 0
            return not self.task_order_fn(lt, rt)

        def before(lt: TaskInfo, rt: TaskInfo) -> bool:
            if lt.job == rt.job:
                return not self.task_order_fn(lt, rt)
            lj, rj = jobs.get(lt.job), jobs.get(rt.job)
            if lj is None or rj is None:
                if lj is None and rj is None:
                    return not self.task_order_fn(lt, rt)
                return lj is None
            if preemptor_job is None:
                return job_then_task(lj, rj, lt, rt)
            if lj.queue != rj.queue:
                return self.victim_queue_order_fn(
                    queues[lj.queue], queues[rj.queue], queues.get(preemptor_job.queue)
                )
            return job_then_task(lj, rj, lt, rt)

        return PriorityQueue(before, victims)

    # -- verdicts -----------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """None if every enabled predicate passes, else the first FitError."""
        return combine.first_failure("predicate", self.tiers_for("predicate"), task, node)

    def pre_predicate(self, task: TaskInfo) -> FitError | None:
        tiers = self._bound.get("pre_predicate") or self.tiers_for("pre_predicate")
        return combine.first_failure("pre_predicate", tiers, task)

    def simulate_predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return combine.first_failure(
            "simulate_predicate", self.tiers_for("simulate_predicate"), task, node
        )

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        tiers = self._bound.get("allocatable") or self.tiers_for("allocatable")
        return combine.all_pass("allocatable", tiers, queue, task)

    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return combine.all_pass(
            "simulate_allocatable", self.tiers_for("simulate_allocatable"), queue, task
        )

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return combine.all_pass("preemptive", self.tiers_for("preemptive"), queue, task)

    def preemptive_all(self, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
        """May the queue reclaim for all of ``tasks`` at once (Volcano's
        ``Preemptive(queue, candidates)``, as gangreclaim asks it): each enabled
        plugin judges them together when it gave a ``many`` form, else one by one."""
        plugin = "<unknown>"
        try:
            for tier in self.tiers_for("preemptive"):
                for plugin, fn in tier:
                    kept = self._preemptive_many.get(plugin)
                    if kept is not None and kept[1] is fn:
                        if not kept[0](queue, tasks):
                            return False
                    elif not all(fn(queue, task) for task in tasks):
                        return False
        except Exception as exc:
            raise combine.blamed("preemptive", plugin, exc)  # noqa: B904
        return True

    def overused(self, queue: QueueInfo) -> bool:
        return combine.any_true("overused", self.tiers_for("overused"), queue)

    def job_ready(self, job: JobInfo) -> bool:
        tiers = self._bound.get("job_ready") or self.tiers_for("job_ready")
        return combine.all_pass("job_ready", tiers, job)

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """None when every plugin accepts the job, else the first failing verdict."""
        result: ValidateResult | None = combine.first_invalid(
            "job_valid", self.tiers_for("job_valid"), job
        )
        return result

    def job_pipelined(self, job: JobInfo) -> bool:
        return combine.vote("job_pipelined", self.tiers_for("job_pipelined"), job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return combine.vote("job_enqueueable", self.tiers_for("job_enqueueable"), job)

    def job_enqueued(self, job: JobInfo) -> None:
        combine.call_all("job_enqueued", self.tiers_for("job_enqueued"), job)

    def job_starving(self, job: JobInfo) -> bool:
        return combine.first_tier_decides("job_starving", self.tiers_for("job_starving"), job)

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return combine.intersect_per_tier(
            "preemptable", self.tiers_for("preemptable"), preemptor, preemptees
        )

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return combine.intersect_per_tier(
            "reclaimable", self.tiers_for("reclaimable"), reclaimer, reclaimees
        )

    def unified_evictable(
        self, context: EvictionContext, candidates: list[TaskInfo]
    ) -> list[TaskInfo]:
        """Gang-level eviction's victim filter: Preemptable's rule, never flag-gated."""
        return combine.intersect_per_tier(
            "unified_evictable", self.tiers_for("unified_evictable"), context, candidates
        )

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Per tier the union of the plugins' victims (tasks of the session, each once,
        as its job holds it), the first tier with any wins."""
        return combine.union_first_nonempty("victim_tasks", self.tiers_for("victim_tasks"),
                                            tasks, self._own_task)

    def _own_task(self, task: Any) -> TaskInfo | None:
        """The session's own object for ``task`` (its job's), None for a stranger."""
        job = self.jobs.get(getattr(task, "job", None))  # type: ignore[arg-type]
        uid = getattr(task, "uid", None)
        return job.tasks.get(uid) if job is not None and isinstance(uid, str) else None

    def target_job(self, jobs: list[JobInfo]) -> JobInfo | None:
        """The first enabled target-job function decides, even when it answers None."""
        with combine.Blame("target_job") as blame:
            for tier in self.tiers_for("target_job"):
                for blame.plugin, fn in tier:
                    return fn(jobs)  # type: ignore[no-any-return]
        return None

    def reserved_nodes(self) -> None:
        combine.call_all("reserved_nodes", self.tiers_for("reserved_nodes"))

    def best_node(
        self, task: TaskInfo, node_scores: dict[float, list[NodeInfo]]
    ) -> NodeInfo | None:
        """The first enabled best-node function's answer (None when none names a node).

        The node named must be one of the candidates in ``node_scores``; any other
        answer is a PluginError naming the plugin (it would otherwise place the task
        on a node that failed the predicates, or that the session does not have).
        """
        with combine.Blame("best_node") as blame:
            for tier in self.tiers_for("best_node"):
                for blame.plugin, fn in tier:
                    answer = fn(task, node_scores)
                    if answer is None:
                        continue
                    name = getattr(answer, "name", None)
                    for nodes in node_scores.values():
                        for node in nodes:
                            if node.name == name:
                                return node
                    raise combine.plugin_failed("best_node", blame.plugin, ValueError(
                        f"answered {answer!r} for task {task.uid}, which is not one of "
                        "the candidate nodes"))
        return None

    def select_devices(self, task: TaskInfo, node: NodeInfo) -> tuple[int, ...]:
        """The GPUs of ``node`` a task being placed there gets: the first enabled
        device-select function's answer, else the node's default choice (empty: the
        task asks no GPU, or the node has none).

        An answer that names devices the node does not have, or that cannot serve
        the task, is a PluginError naming the plugin.
        """
        free = node.gpu_free
        if free is None:
            return ()
        ask = gpu_ask(task.resreq, strict=False)
        if ask is None:
            return ()
        with combine.Blame("device_select") as blame:
            for tier in self.tiers_for("device_select"):
                for blame.plugin, fn in tier:
                    answer = fn(task, node)
                    if answer is None:
                        continue
                    chosen = tuple(answer)
                    if not (all(isinstance(i, int) for i in chosen)
                            and serves(free, chosen, ask)):
                        raise combine.plugin_failed("device_select", blame.plugin, ValueError(
                            f"answered GPUs {answer!r} of node {node.name} for task "
                            f"{task.uid}, which cannot serve its {ask.count} x {ask.milli}m"))
                    return chosen
        return best_fit_devices(free, ask) or ()

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        return combine.sum_scores("node_order", self.tiers_for("node_order"), task, node)

    def sub_job_ready(self, job: JobInfo, sub_job: SubJobInfo) -> bool:
        """Whether the sub-job is placed enough: the job's readiness for a job without
        sub-group policies; else every enabled plugin agrees (yes with none)."""
        if not job.podgroup.sub_group_policies:
            return self.job_ready(job)
        return combine.all_pass("sub_job_ready", self.tiers_for("sub_job_ready"), sub_job)

    def sub_job_pipelined(self, job: JobInfo, sub_job: SubJobInfo) -> bool:
        """As :meth:`sub_job_ready`, for pipelined tasks (a vote, yes with none)."""
        if not job.podgroup.sub_group_policies:
            return self.job_pipelined(job)
        return combine.vote("sub_job_pipelined", self.tiers_for("sub_job_pipelined"), sub_job)

    def sub_job_less(self, left: SubJobInfo, right: SubJobInfo) -> bool:
        """Whether ``left`` goes before ``right``: the first plugin that tells them
        apart, then the lower match index, then the smaller id."""
        with combine.Blame("sub_job_order") as blame:
            for tier in self.tiers_for("sub_job_order"):
                for blame.plugin, fn in tier:
                    answer = fn(left, right)
                    if answer != 0:
                        return bool(answer < 0)
        if left.match_index != right.match_index:
            return left.match_index < right.match_index
        return left.uid < right.uid

    def sub_job_topology(self, job: JobInfo, sub_job: SubJobInfo) -> NetworkTopology | None:
        """The sub-job's network topology as the session reads it (Volcano's
        ``adjustNetworkTopologySpec``): tier names resolved, soft read as hard up to
        the job's tier (or the virtual root's)."""
        spec = sub_job.policy_topology
        if spec is None:
            return None
        if sub_job.default and not job.podgroup.sub_group_policies:
            return job.network_topology
        return sub_job_session_topology(spec, job.network_topology, self.topology)

    def hyper_node_order(self, sub_job: SubJobInfo, hyper_nodes: list[str]) -> dict[str, float]:
        """Each candidate hypernode's score, summed over the enabled plugins (0 for a
        hypernode no plugin scores; Volcano's ``PrioritizeHyperNodes``)."""
        total = dict.fromkeys(hyper_nodes, 0.0)
        with combine.Blame("hyper_node_order") as blame:
            for tier in self.tiers_for("hyper_node_order"):
                for blame.plugin, fn in tier:
                    for name, score in fn(sub_job, hyper_nodes).items():
                        if name in total:
                            total[name] += float(score)
        return total

    def hyper_node_gradient(self, job: JobInfo, hyper_node: str, purpose: str) -> list[list[str]]:
        """The hypernodes to try for the job under ``hyper_node``, tier by tier
        (``purpose``: ``allocate`` or ``evict``): the first enabled gradient plugin
        decides, even with nothing (None); with none, ``[[hyper_node]]``."""
        return self._gradient("hyper_node_gradient_for_job", job, hyper_node, purpose)

    def sub_job_hyper_node_gradient(
        self, sub_job: SubJobInfo, hyper_node: str, purpose: str
    ) -> list[list[str]]:
        """:meth:`hyper_node_gradient` for one sub-job, within the job's hypernode."""
        return self._gradient("hyper_node_gradient_for_sub_job", sub_job, hyper_node, purpose)

    def _gradient(self, point: str, subject: object, hyper_node: str,
                  purpose: str) -> list[list[str]]:
        with combine.Blame(point) as blame:
            for tier in self.tiers_for(point):
                for blame.plugin, fn in tier:
                    answer = fn(subject, hyper_node, purpose)
                    return [list(gradient) for gradient in answer or ()]
        return [[hyper_node]]

    def batch_node_order(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        return combine.sum_batch_scores(
            "batch_node_order", self.tiers_for("batch_node_order"), task, nodes
        )

    def simulate_add_task(self, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        self._simulate_step("simulate_add_task", "simulate_remove_task", preemptor, task, node)

    def simulate_remove_task(self, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        self._simulate_step("simulate_remove_task", "simulate_add_task", preemptor, task, node)

    def _simulate_step(self, point: str, undo: str, preemptor: TaskInfo, task: TaskInfo,
                       node: NodeInfo) -> None:
        """One step of a preemption dry run, for every plugin, or for none: when a
        plugin refuses it (:class:`~batchsched.errors.DryRunError`), the plugins that
        followed it already are given the opposite step, and the refusal goes on."""
        done: list[str] = []
        for tier in self.tiers_for(point):
            for plugin, fn in tier:
                try:
                    fn(preemptor, task, node)
                except DryRunError:
                    undoers = self._fns[undo]
                    for name in reversed(done):
                        if name in undoers:
                            undoers[name](preemptor, task, node)
                    raise
                except Exception as exc:
                    raise combine.blamed(point, plugin, exc)  # noqa: B904
                done.append(plugin)


def compare_task_default(left: TaskInfo, right: TaskInfo) -> bool:
    """Volcano's default task order (``CompareTask``): the numeric suffix of a pod name
    with at least three dash-separated parts, then creation time, then id."""
    lnum, rnum = _name_index(left.name), _name_index(right.name)
    if lnum is not None and rnum is not None and lnum != rnum:
        return lnum < rnum
    if left.creation_time != right.creation_time:
        return left.creation_time < right.creation_time
    return left.order_uid < right.order_uid


def _compare_task_default_total(left: TaskInfo, right: TaskInfo) -> int:
    """:func:`compare_task_default` both ways at once: -1 when it puts ``left`` first,
    1 when it puts ``right`` first, 0 when neither (each name parsed once)."""
    lnum, rnum = _name_index(left.name), _name_index(right.name)
    if lnum is not None and rnum is not None and lnum != rnum:
        return -1 if lnum < rnum else 1
    ltime, rtime = left.creation_time, right.creation_time
    if ltime != rtime:
        # Unequal yet neither smaller (NaN): neither way comes first.
        return -1 if ltime < rtime else (1 if rtime < ltime else 0)
    luid, ruid = left.order_uid, right.order_uid
    return -1 if luid < ruid else (1 if ruid < luid else 0)


_DIGITS = re.compile(r"[+-]?[0-9]+")


@functools.lru_cache(maxsize=65536)
def _name_index(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) < 3 or not _DIGITS.fullmatch(parts[-1]):
        return None
    index = int(parts[-1])
    # strconv.Atoi fails past int64: such a name has no index (creation time decides).
    return index if _INT64_MIN <= index <= _INT64_MAX else None


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

def _sort_key(
    point: str, keys: list[tuple[str, Callable[[Any], Any]]],
    tail: Callable[[Any], tuple[Any, ...]],
) -> Callable[[Any], tuple[Any, ...]]:
    """One tuple per item: each plugin's key in tier order, then ``tail`` (the
    session's own tie-break). A key that raises is blamed on its plugin."""
    functions = tuple(fn for _, fn in keys)
    first = functions[0] if functions else None
    second = functions[1] if len(functions) > 1 else None

    def sort_key(item: Any) -> tuple[Any, ...]:
        try:
            # Up to two plugins written out: this runs for every item pushed.
            if not functions:
                return tail(item)
            if len(functions) == 1:
                return (first(item), *tail(item))  # type: ignore[misc]
            if len(functions) == 2:
                return (first(item), second(item), *tail(item))  # type: ignore[misc]
            return (*[fn(item) for fn in functions], *tail(item))
        except Exception as exc:
            if combine.passes_through(exc):
                raise
            for plugin, fn in keys:  # find the plugin at fault (a key is a pure function)
                try:
                    fn(item)
                except Exception:
                    raise combine.plugin_failed(point, plugin, exc) from exc
            raise

    return sort_key


def _job_tail(job: JobInfo) -> tuple[float, str]:
    return (job.creation_time, job.uid)


def _queue_tail(queue: QueueInfo) -> tuple[float, str]:
    return (queue.creation_time, queue.uid)


def _task_tail_indexed(task: TaskInfo) -> tuple[int | None, float, str]:
    return (_name_index(task.name), task.creation_time, task.order_uid)


def _task_tail(task: TaskInfo) -> tuple[float, str]:
    return (task.creation_time, task.order_uid)
