"""Pods one at a time: kube-scheduler's scheduling and binding cycles over a host Cache.

:class:`PodScheduler` is for hosts that schedule pod by pod (kube-scheduler's
way) with kube-style plugins; Volcano-style hosts use sessions and may still run
kube-style Filter and Score plugins there (the ``kube-plugins`` plugin). One
call of :meth:`PodScheduler.run` at time ``now``:

1. pending pods of the cache that a profile owns (the pod's ``scheduler_name``,
   empty meaning ``default-scheduler``) and passing PreEnqueue join the queue;
2. waiting pods are settled: a pod every Permit plugin allowed is bound, a pod
   rejected or timed out is unreserved, forgotten and goes back to the queue;
3. pods are popped and scheduled one by one on the cluster as the cache shows
   it plus the pods already assumed (reserved, waiting or binding):
   PreFilter, Filter from where the last pod's filtering stopped until enough
   nodes passed (kube's ``percentageOfNodesToScore``), PostFilter if none
   passes, PreScore and Score (the highest total wins, the first examined among
   equals),
   Reserve (the pod is assumed on the node), Permit, then PreBind, Bind
   (the built-in ``DefaultBinder`` calls the cache's ``bind``) and PostBind.

A pod that fails goes to the queue's unschedulable pods (or to backoff after an
error: a plugin's error status, or a plugin raising, fails that pod only) and is
tried again after an event that may help it (with queueing hints, one a plugin that
turned it down registered) or its timeout. The events are what changed in the
cluster since the last run's snapshot (:mod:`~batchsched.kubesched.informer`), the
scheduler's own (a failed binding cycle frees its node), and any the host reports.
Every failure unreserves what was reserved, so no pod is left assumed without a
decision; a binding cycle that fails (Permit rejection or timeout, PreBind, Bind)
frees its node, an event that moves the unschedulable pods back (kube-scheduler's
``AssignedPodDelete``). :meth:`PodScheduler.where` says where a pod stands and
what may move it. A pod that
PreEnqueue keeps out (a scheduling gate) is asked again at every run and whenever
it would move to active. A node a PostFilter plugin nominates is handed to the
cache (``nominate``), as kube-scheduler records ``nominatedNodeName``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping

import attrs

from batchsched.api.cluster import ClusterInfo
from batchsched.api.node import NodeInfo
from batchsched.api.task import TaskInfo, same_pod
from batchsched.api.types import TaskStatus
from batchsched.cache.protocol import Cache
from batchsched.errors import BatchSchedError, CacheError, ConfigError, PluginError
from batchsched.kube.go_strconv import quote
from batchsched.kubesched.cycle_state import PODS_TO_ACTIVATE_KEY, CycleState, PodsToActivate
from batchsched.kubesched.events import QueueingHints
from batchsched.kubesched.framework import (
    Framework,
    check_percentage_of_nodes_to_score,
)
from batchsched.kubesched.informer import cluster_changes, not_ready_nodes
from batchsched.kubesched.queue import PodWait, QueuedPod, SchedulingQueue, default_less
from batchsched.kubesched.status import Code, Status

__all__ = ["DEFAULT_SCHEDULER_NAME", "CycleResult", "PodScheduler", "fit_error_message",
           "num_feasible_nodes_to_find"]

log = logging.getLogger("batchsched")

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@attrs.frozen
class CycleResult:
    """What became of one pod in a cycle: bound, waiting, or failed (with why)."""

    pod: str
    node: str | None
    status: Status


@attrs.define
class _Assumed:
    pod: TaskInfo
    node: str
    framework: Framework
    state: CycleState


class PodScheduler:
    """kube-scheduler's loop over a host cache (see the module docstring)."""

    def __init__(self, cache: Cache, frameworks: Framework | Mapping[str, Framework], *,
                 queue: SchedulingQueue | None = None,
                 percentage_of_nodes_to_score: int = 0,
                 queueing_hints: bool = True, cluster_events: bool = True) -> None:
        """``percentage_of_nodes_to_score`` is kube-scheduler's global setting (a
        profile's own wins): once that share of the nodes passed the filters, filtering
        stops; 0 (the default) is kube's adaptive share, 50% less a point per 125
        nodes, at least 5%; clusters under 100 nodes are always filtered whole.
        The queue gets the profiles' queueing hints (:mod:`batchsched.kubesched.events`)
        unless it has its own: an event moves the pods whose rejecting plugins
        registered it. ``queueing_hints`` (kube's ``SchedulerQueueingHints``, on by
        default) asks their hint functions too; off, each answers Queue.
        ``cluster_events`` reports what changed from one run's snapshot to the next
        to the queue (nodes added, updated or deleted, pods placed or gone), as kube's
        informers do (:mod:`batchsched.kubesched.informer`); off, only the events the
        host reports itself move pods."""
        self.cluster_events = cluster_events
        self.percentage_of_nodes_to_score = check_percentage_of_nodes_to_score(
            percentage_of_nodes_to_score, source="PodScheduler",
            key="percentage_of_nodes_to_score")
        #: Where the next pod's filtering starts in node order (kube's
        #: ``nextStartNodeIndex``): every node gets the same chance to be examined.
        self.next_start_node_index = 0
        self.cache = cache
        if isinstance(frameworks, Framework):
            frameworks = {frameworks.profile.scheduler_name: frameworks}
        if not isinstance(frameworks, Mapping):
            raise ConfigError(f"must be a Framework or a mapping of scheduler names to "
                              f"Frameworks, not {type(frameworks).__name__}",
                              source="PodScheduler", key="frameworks")
        self.frameworks = dict(frameworks)
        _check_profiles(self.frameworks)
        # One map of waiting pods for every profile, as kube-scheduler hands every
        # framework the same one: a plugin of one profile may allow or reject a pod
        # waiting in another. The first profile's own map is it (a plugin may have
        # kept its handle's map when it was built).
        waiting = next(iter(self.frameworks.values())).waiting_pods
        for framework in self.frameworks.values():
            framework.host = cache
            if framework.waiting_pods is not waiting:
                for pod in framework.waiting_pods:
                    waiting.add(pod)
                framework.waiting_pods = waiting
        default = self.frameworks.get(DEFAULT_SCHEDULER_NAME) or next(
            iter(self.frameworks.values()))
        # An empty queue is falsy (it has a length): test for None.
        self.queue = queue if queue is not None else SchedulingQueue(default.queue_sort_less())
        if self.queue.less is default_less:
            # A queue built without an order of its own takes the profile's QueueSort.
            self.queue.less = default.queue_sort_less() or default_less
        self._queue_sort = default.queue_sort_name()
        if self.queue.admit is None:
            self.queue.admit = self._admitted
        if self.queue.hints is None:
            self.queue.hints = QueueingHints(
                {name: framework.registrations for name, framework in self.frameworks.items()},
                profile_of=lambda pod: pod.scheduler_name or DEFAULT_SCHEDULER_NAME,
                hint_functions=queueing_hints)
        self.assumed: dict[str, _Assumed] = {}
        #: Node -> the pending pods nominated to it, not assumed (kube's nominator).
        self._nominees: dict[str, dict[str, TaskInfo]] = {}
        self.attempts: dict[str, int] = {}
        # The pods bound since the last view (uid -> the pod and its node): the host's
        # next snapshot shows them bound, which kube's informer reports as an
        # AssignedPodAdd, though the view had them assumed there already.
        self._bound_since_view: dict[str, tuple[TaskInfo, str]] = {}
        self.view: ClusterInfo | None = None
        self.results: list[CycleResult] = []

    def where(self, uid: str) -> PodWait | None:
        """Where a pod of this scheduler stands and what may move it: waiting at Permit
        (for the plugins still to allow it, by its first deadline), or in the queue
        (:meth:`SchedulingQueue.where`); None: neither (bound, say)."""
        assumed = self.assumed.get(uid)
        waiting = assumed.framework.waiting_pods.get(uid) if assumed is not None else None
        if assumed is not None and waiting is not None:
            return PodWait(uid, "waiting at permit", self.attempts.get(uid, 0), (),
                           tuple(sorted(waiting.pending)),
                           min(waiting.pending.values(), default=None), assumed.node)
        return self.queue.where(uid)

    def framework_for(self, pod: TaskInfo) -> Framework | None:
        return self.frameworks.get(pod.scheduler_name or DEFAULT_SCHEDULER_NAME)

    # -- the loop --------------------------------------------------------------------------

    def run(self, now: float, *, max_pods: int | None = None) -> list[CycleResult]:
        """Queue, settle waiting pods, schedule until the queue has no active pod."""
        self.results = []
        self._refresh_view(now)
        self._enqueue_pending(now)
        self.settle_waiting(now)
        scheduled = 0
        while max_pods is None or scheduled < max_pods:
            queued = self._pop(now)
            if queued is None:
                break
            assert self.view is not None
            # The queue may hold the pod as an earlier view had it: take today's.
            pod = _task(self.view, queued.pod)
            if pod is None or pod.node_name or pod.status != TaskStatus.PENDING:
                self.queue.done(queued.pod.uid)
                continue  # deleted, or bound meanwhile
            # In flight (the queue's ``in_flight``) until it binds or fails: an event
            # meanwhile requeues it on failure.
            self.schedule_one(pod, now)
            scheduled += 1
        self.settle_waiting(now)
        return self.results

    def _pop(self, now: float) -> QueuedPod | None:
        """The queue's next pod; the QueueSort plugin raising is a
        :class:`PluginError` naming it (no pod to fail: the order itself broke)."""
        try:
            return self.queue.pop(now)
        except PluginError:
            raise
        except Exception as exc:
            name = self._queue_sort
            raise PluginError(f"kube plugin {name!r} raised at queueSort: "
                              f"{type(exc).__name__}: {exc}", plugin=name,
                              point="queueSort") from exc

    def _refresh_view(self, now: float) -> None:
        try:
            view: ClusterInfo = self.cache.snapshot()
        except BatchSchedError:
            raise
        except Exception as exc:
            raise CacheError(f"the cache's snapshot raised {type(exc).__name__}: {exc}",
                             operation="snapshot") from exc
        forgotten: set[str] = set()
        for uid, assumed in list(self.assumed.items()):
            task = _task(view, assumed.pod)
            # A node that stopped being Ready is still the cache's: the pod assumed on
            # it stays assumed (kube keeps it), only a node deleted forgets it.
            node = _view_node(view, assumed.node)
            if task is None or node is None or not same_pod(task, assumed.pod):
                # Deleted (or its node gone, or the pod deleted and created again under
                # its name: another pod, kube's new UID) while assumed: kube-scheduler
                # rejects it if it waits at Permit, and its plugins unreserve what they
                # reserved; a rejected waiting pod frees its node, which moves the pods
                # that could not be placed (kube's AssignedPodDelete).
                was_waiting = assumed.framework.waiting_pods.remove(uid)
                self._unreserve(assumed)
                gone = _placed_copy(assumed)
                self._forget(uid)
                forgotten.add(uid)
                self.queue.done(uid)
                self.attempts.pop(uid, None)  # a pod created again starts afresh
                if was_waiting is not None:
                    self.queue.move_all_to_active_or_backoff(now, "AssignedPodDelete",
                                                             old=gone)
                continue
            if not task.node_name:
                _place(view, task, node)
                # The devices it holds in this view (its first ones may have gone to
                # another pod since): the ones its bind will name.
                assumed.pod.gpu_devices = task.gpu_devices
        bound, self._bound_since_view = self._bound_since_view, {}
        if self.cluster_events and self.view is not None:
            for pod, node_name in bound.values():
                task = _task(view, pod)
                # Bound elsewhere or gone meanwhile: the changes below tell it.
                if task is not None and task.node_name == node_name and same_pod(task, pod):
                    self.queue.move_all_to_active_or_backoff(now, "AssignedPodAdd", new=task)
            # A pod forgotten just now was reported as it left its node (once: the
            # old view has it pending again).
            for change in cluster_changes(
                    self.view, view, owned=lambda pod: pod.uid not in forgotten
                    and self.framework_for(pod) is not None):
                pre_check = None
                if isinstance(change.old, TaskInfo) and not change.old.node_name:
                    # A nominated pod deleted frees room for pods of its priority or
                    # lower only (kube's getLEPriorityPreCheck).
                    pre_check = _priority_at_most(change.old.pod_priority)
                self.queue.move_all_to_active_or_backoff(now, change.event, old=change.old,
                                                         new=change.new, pre_check=pre_check)
        self.view = view
        for framework in self.frameworks.values():
            framework.cluster = view
            framework.now = now
        self._nominees = {}
        for job in view.jobs.values():
            for task in job.tasks.values():
                # kube's nominator holds the pods of this scheduler's profiles only.
                if task.nominated_node and task.status == TaskStatus.PENDING \
                        and not task.node_name and task.uid not in self.assumed \
                        and self.framework_for(task) is not None:
                    self._nominees.setdefault(task.nominated_node, {})[task.uid] = task

    def _enqueue_pending(self, now: float) -> None:
        assert self.view is not None
        gated = self.queue.unschedulable
        pending: set[str] = set()
        for job in self.view.jobs.values():
            for task in job.tasks.values():
                if task.status != TaskStatus.PENDING or task.node_name \
                        or task.uid in self.assumed:
                    continue
                pending.add(task.uid)
                known = self.queue.queued(task.uid)
                if known is not None and not same_pod(known.pod, task):
                    # Deleted and created again since it was queued: a new pod, queued
                    # afresh (kube's new UID), without the old one's attempts.
                    self.queue.delete(task.uid)
                    self.attempts.pop(task.uid, None)
                queued = gated.get(task.uid)
                if task.uid in self.queue and (queued is None or not queued.gated):
                    continue
                framework = self.framework_for(task)
                if framework is None:
                    continue  # another scheduler's pod
                # A gated pod is asked again at every run, as a pod update (its gate
                # lifted) asks kube-scheduler's queue.
                if self._admitted(task):
                    if queued is not None:
                        # kube updates the queued pod in place: it keeps its attempts
                        # and when it was queued.
                        self.queue.readmit(task)
                    else:
                        self.queue.add(task, now)
                elif queued is None:
                    self.queue.add_gated(task, now)
        # A queued pod the cluster no longer has pending (deleted, or bound by another
        # scheduler) leaves the queue, as kube's queue drops a deleted or assigned pod.
        for sub_queue in (self.queue.active, self.queue.backoff, self.queue.unschedulable):
            for uid in [uid for uid in sub_queue if uid not in pending]:
                self.queue.delete(uid)
        # Nor are its attempts kept: a pod created again under its name starts afresh.
        for uid in [uid for uid in self.attempts
                    if uid not in pending and uid not in self.assumed]:
            del self.attempts[uid]

    def _admitted(self, pod: TaskInfo) -> bool:
        """PreEnqueue: may the pod join the active queue? (A plugin raising keeps it out,
        and is logged.)"""
        framework = self.framework_for(pod)
        if framework is None:
            return False
        status = _guarded(lambda: framework.run_pre_enqueue(pod))
        return status.is_success()

    # -- one pod ---------------------------------------------------------------------------

    def schedule_one(self, pod: TaskInfo, now: float) -> CycleResult:
        """The scheduling cycle of one pod, and its binding cycle unless it waits. A
        plugin raising (or answering in a shape its point does not take) fails this
        pod with an error, logged; the queue goes on."""
        assert self.view is not None, "run() prepares the cluster view"
        framework = self.framework_for(pod)
        if framework is None:
            self.queue.done(pod.uid)
            return self._record(pod, None, Status.error("no profile schedules this pod"))
        state = CycleState()
        state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
        try:
            chosen = self._select_node(framework, state, pod, now)
        except PluginError as exc:
            log.warning("batchsched: scheduling %s: %s", pod.uid, exc)
            return self._failed(pod, Status.error(str(exc), plugin=exc.plugin), now)
        if isinstance(chosen, CycleResult):
            return chosen
        return self._reserve_and_permit(framework, state, pod, chosen, now)

    def _select_node(self, framework: Framework, state: CycleState, pod: TaskInfo,
                     now: float) -> NodeInfo | CycleResult:
        """kube-scheduler's ``schedulePod`` and ``RunPostFilterPlugins``: the node, or
        the pod's failed result."""
        assert self.view is not None
        nodes = list(self.view.nodes.values())
        if not nodes:
            # kube's ErrNoNodesAvailable: before PreFilter, and no PostFilter. No plugin
            # rejected the pod, so no event is awaited: it retries after a backoff.
            return self._failed(pod, Status.unschedulable(
                "no nodes available to schedule pods", unresolvable=True), now, backoff=True)
        status = framework.run_pre_filter(state, pod)
        feasible: list[NodeInfo] = []
        statuses: dict[str, Status] = {}
        if status.code == Code.ERROR:
            return self._failed(pod, status, now)
        scoring = bool(framework.plugins_at("score"))
        if not status.is_success():
            # Every node carries the PreFilter's rejection; PostFilter still runs.
            statuses = dict.fromkeys((node.name for node in nodes), status)
        else:
            nominated_node = self.view.nodes.get(pod.nominated_node) \
                if pod.nominated_node else None
            if nominated_node is not None:
                # kube tries the node a preemption nominated first: passing there, it
                # is the pod's node, unscored (an error there is only logged).
                verdict = self._filter(framework, state, pod, nominated_node)
                if verdict.is_success():
                    return nominated_node
                if verdict.code == Code.ERROR:
                    log.warning("batchsched: %s on its nominated node %s: %s", pod.uid,
                                nominated_node.name, verdict.message)
                else:
                    statuses[nominated_node.name] = verdict
            allowed = state.pre_filter_nodes
            candidates = nodes
            if allowed is not None:
                candidates = [node for node in nodes if node.name in allowed]
                # kube's status for the nodes a PreFilterResult leaves out.
                outside = Status.unschedulable(
                    "node(s) didn't satisfy plugin(s) "
                    f"[{' '.join(state.pre_filter_node_plugins)}]", unresolvable=True)
                for node in nodes:
                    if node.name not in allowed:
                        # A nominated node refused on its own keeps that status
                        # (kube's SetAbsentNodesStatus fills only the nodes without one).
                        statuses.setdefault(node.name, outside)
            error = self._find_feasible(framework, state, pod, candidates, feasible=feasible,
                                        statuses=statuses, total=len(nodes),
                                        scoring=scoring, nominated=nominated_node)
            if error is not None:
                return self._failed(pod, error, now)  # the cycle ends: no PostFilter
        if not feasible:
            pre_filter = None if status.is_success() else status.message
            # kube's diagnosis: the PreFilter plugins that turned the pod down, or the
            # Filter plugins that turned down a node.
            rejectors = set(state.pre_filter_rejectors)
            if status.is_success():
                rejectors |= {verdict.plugin for verdict in statuses.values() if verdict.plugin}
            if not framework.plugins_at("postFilter"):
                # kube fails the pod with clearNominatedNode when nothing could preempt.
                return self._failed(pod, Status.unschedulable(
                    fit_error_message(len(nodes), statuses, pre_filter)), now,
                    rejectors=rejectors)
            try:
                nominated, post = framework.run_post_filter(state, pod, statuses)
            except PluginError as exc:
                # As an error status: kube's failed PostFilter nominates nothing.
                nominated, post = None, Status.error(str(exc), plugin=exc.plugin)
            if post.code == Code.ERROR:
                # Logged; the pod still fails as unschedulable by its filters.
                log.warning("batchsched: postFilter for %s: %s", pod.uid, post.message)
            message = fit_error_message(len(nodes), statuses, pre_filter,
                                        post_filter=post.message)
            # The PostFilter's nomination, if it made one ("" clears the pod's); else
            # the pod's nomination stays.
            return self._failed(pod, Status.unschedulable(message), now, nominating=nominated,
                                rejectors=rejectors)
        if len(feasible) == 1 or not scoring:
            return feasible[0]
        status = framework.run_pre_score(state, pod, feasible)
        if not status.is_success():
            return self._failed(pod, status, now)
        totals = framework.run_score(state, pod, feasible)
        best = max(totals.values())
        return next(node for node in feasible if totals[node.name] == best)

    def _find_feasible(self, framework: Framework, state: CycleState, pod: TaskInfo,
                       candidates: list[NodeInfo], *, feasible: list[NodeInfo],
                       statuses: dict[str, Status], total: int, scoring: bool,
                       nominated: NodeInfo | None) -> Status | None:
        """kube-scheduler's ``findNodesThatPassFilters``, one node after the other:
        from ``next_start_node_index`` round the candidates, until as many feasible
        nodes as ``numFeasibleNodesToFind`` says (one when nothing scores) were found
        or every candidate was filtered; the index then moves past the nodes
        examined, as kube's ``processedNodes``. A Filter error is returned (the index
        moves all the same)."""
        count = len(candidates)
        profile = framework.profile.percentage_of_nodes_to_score
        wanted = num_feasible_nodes_to_find(
            self.percentage_of_nodes_to_score if profile is None else profile, count)
        if not scoring:
            wanted = 1
        start = self.next_start_node_index
        # The nominated node's failure, when it was filtered first, counts as examined
        # (kube records it in the same diagnosis), once.
        failed = {nominated.name} if nominated is not None and nominated.name in statuses \
            else set()
        error: Status | None = None
        if not framework.plugins_at("filter"):
            feasible.extend(candidates[(start + i) % count] for i in range(min(wanted, count)))
        else:
            for i in range(count):
                node = candidates[(start + i) % count]
                verdict = self._filter(framework, state, pod, node)
                if verdict.code == Code.ERROR:
                    error = verdict
                    break
                if verdict.is_success():
                    feasible.append(node)
                    if len(feasible) >= wanted:
                        break
                else:
                    statuses[node.name] = verdict
                    failed.add(node.name)
        if total:
            self.next_start_node_index = (start + len(feasible) + len(failed)) % total
        return error

    def _filter(self, framework: Framework, state: CycleState, pod: TaskInfo,
                node: NodeInfo) -> Status:
        """kube-scheduler's ``RunFilterPluginsWithNominatedPods``: when pods of the
        pod's priority or higher are nominated to the node, the filters run first
        with them on it (each added through the PreFilter plugins' ``add_pod``, on
        copies of the state and node) and, if they pass, again without them: the
        pod must fit both ways, and never takes room a preemption freed for a pod
        it must yield to."""
        nominees = self._nominees.get(node.name)
        ahead = [other for uid, other in nominees.items()
                 if uid != pod.uid and other.pod_priority >= pod.pod_priority] \
            if nominees else []
        if not ahead:
            return framework.run_filter(state, pod, node)
        with_them, node_with_them = state.clone(), node.clone()
        for other in ahead:
            placed = other.clone()
            placed.status = TaskStatus.ALLOCATED
            placed.node_name = node.name
            node_with_them.add_task(placed)
            added = _guarded(functools.partial(framework.run_pre_filter_add_pod,
                                               with_them, pod, placed, node_with_them))
            if not added.is_success():
                return Status.error(f"running AddPod on PreFilter plugin {quote(added.plugin)}: "
                                    f"{added.message}", plugin=added.plugin)
        verdict = framework.run_filter(with_them, pod, node_with_them)
        if not verdict.is_success():
            return verdict
        return framework.run_filter(state, pod, node)

    def _nominate(self, pod: TaskInfo, node: str) -> None:
        """Record a PostFilter's nominated node on the pod and with the host ("" clears
        it)."""
        nominate = getattr(self.cache, "nominate", None)
        if nominate is not None:
            try:
                nominate(pod, node)
            except Exception as exc:
                log.warning("batchsched: nominating %s to %s: %s", pod.uid, node, exc)
        self._drop_nominee(pod)
        pod.nominated_node = node
        if node and pod.uid not in self.assumed:
            self._nominees.setdefault(node, {})[pod.uid] = pod

    def _drop_nominee(self, pod: TaskInfo) -> None:
        nominees = self._nominees.get(pod.nominated_node)
        if nominees is not None:
            nominees.pop(pod.uid, None)

    def _reserve_and_permit(self, framework: Framework, state: CycleState, pod: TaskInfo,
                            node: NodeInfo, now: float) -> CycleResult:
        assert self.view is not None
        _place(self.view, pod, node)
        # An assumed pod is no nominee any more (kube's DeleteNominatedPodIfExists).
        self._drop_nominee(pod)
        assumed = self.assumed[pod.uid] = _Assumed(pod, node.name, framework, state)
        status = _guarded(lambda: framework.run_reserve(state, pod, node.name))
        if not status.is_success():
            self._unreserve(assumed)  # once: kube-scheduler unreserves a failed Reserve
            self._forget(pod.uid)
            return self._failed(pod, _on_one_node(status, node.name), now)
        status = _guarded(lambda: framework.run_permit(state, pod, node.name))
        if status.is_success() or status.is_wait():
            self._activate(state)  # the scheduling cycle succeeded
        if status.is_wait():
            return self._record(pod, node.name, status)
        if not status.is_success():
            # Still the scheduling cycle: no other pod moves (kube moves them only when
            # a binding cycle fails).
            framework.waiting_pods.remove(pod.uid)
            self._unreserve(assumed)
            self._forget(pod.uid)
            return self._failed(pod, _on_one_node(status, node.name), now)
        return self._bind(pod.uid, now)

    def settle_waiting(self, now: float) -> None:
        """Bind the waiting pods every plugin allowed; unreserve and requeue the ones
        rejected or timed out (a rejection may reject others: settled until none moves)."""
        for framework in self.frameworks.values():
            framework.now = now
        moved = True
        while moved:
            moved = False
            for framework in self.frameworks.values():
                for waiting in framework.waiting_pods:
                    waiting.expire(now)
                    if waiting.decision is None:
                        continue
                    framework.waiting_pods.remove(waiting.pod.uid)
                    moved = True
                    assumed = self.assumed.get(waiting.pod.uid)
                    if assumed is None:
                        continue  # gone meanwhile: nothing to bind or undo
                    if waiting.decision.is_success():
                        self._bind(waiting.pod.uid, now)
                        continue
                    self._unreserve(assumed)
                    gone = _placed_copy(assumed)
                    self._forget(waiting.pod.uid)
                    decision = waiting.decision
                    if not decision.is_rejected():
                        decision = Status.error(
                            f"waiting on permit for pod: {decision.message}",
                            plugin=decision.plugin)
                    self._binding_failed(waiting.pod, _on_one_node(decision, assumed.node),
                                         now, gone=gone)

    def _bind(self, uid: str, now: float) -> CycleResult:
        assumed = self.assumed[uid]
        framework, state, pod, node = (assumed.framework, assumed.state, assumed.pod,
                                       assumed.node)
        status = _guarded(lambda: framework.run_pre_bind(state, pod, node))
        if status.is_success():
            status = _guarded(lambda: framework.run_bind(state, pod, node))
        if not status.is_success():
            # kube-scheduler's handleBindingCycleError: unreserve, forget, requeue. A
            # PreBind or Bind failure is no fit error: the pod backs off and retries.
            self._unreserve(assumed)
            gone = _placed_copy(assumed)
            self._forget(uid)
            return self._binding_failed(pod, status, now, backoff=True, gone=gone)
        del self.assumed[uid]
        self._bound_since_view[uid] = (pod, node)
        self.attempts.pop(uid, None)
        self.queue.done(uid)
        framework.run_post_bind(state, pod, node)
        self._activate(state)  # the binding cycle succeeded
        return self._record(pod, node, Status.success())

    def _activate(self, state: CycleState) -> None:
        """Move the pods the cycle's plugins asked for to the active queue, and empty
        the request (kube-scheduler's ``SchedulingQueue.Activate``)."""
        if PODS_TO_ACTIVATE_KEY not in state:
            return
        wanted = state.read(PODS_TO_ACTIVATE_KEY)
        if isinstance(wanted, PodsToActivate) and wanted.pods:
            self.queue.activate(list(wanted.pods))
            wanted.pods = {}

    # -- bookkeeping -----------------------------------------------------------------------

    @staticmethod
    def _unreserve(assumed: _Assumed) -> None:
        """Run Unreserve; a plugin raising there is logged, and the pod is forgotten
        anyway (no pod stays assumed without a decision)."""
        try:
            assumed.framework.run_unreserve(assumed.state, assumed.pod, assumed.node)
        except Exception as exc:
            log.warning("batchsched: unreserving %s raised %s: %s", assumed.pod.uid,
                        type(exc).__name__, exc)

    def _forget(self, uid: str) -> None:
        """Take an assumed pod off the view's node."""
        assumed = self.assumed.pop(uid, None)
        if assumed is None or self.view is None:
            return
        task = _task(self.view, assumed.pod) or assumed.pod
        node = _view_node(self.view, assumed.node)
        job = self.view.jobs.get(task.job)
        if node is not None and task.uid in node.tasks:
            node.remove_task(task)
        if job is not None and task.uid in job.tasks:
            job.update_task_status(task, TaskStatus.PENDING)
        task.node_name = ""
        task.gpu_devices = ()

    def _binding_failed(self, pod: TaskInfo, status: Status, now: float, *,
                        gone: TaskInfo, backoff: bool = False) -> CycleResult:
        """A failed binding cycle: the pod is requeued (to backoff with ``backoff``),
        and its node is free again, an event that may let the other unschedulable pods
        in (kube-scheduler's ``AssignedPodDelete`` of ``gone``, the pod as it was
        assumed)."""
        result = self._failed(pod, status, now, backoff=backoff)
        # After the pod's own requeue, and not the pod itself: it stays unschedulable.
        self.queue.move_all_to_active_or_backoff(now, "AssignedPodDelete", exclude=pod.uid,
                                                 old=gone)
        return result

    def _failed(self, pod: TaskInfo, status: Status, now: float, *,
                nominating: str | None = "", backoff: bool = False,
                rejectors: Iterable[str] | None = None) -> CycleResult:
        """The pod failed its cycle: requeued, and its nomination set to ``nominating``
        (kube-scheduler's ``handleSchedulingFailure``). By default that is "": kube
        fails a pod with ``clearNominatedNode`` on every path but a PostFilter's,
        whose nomination (None: none) is passed instead. ``rejectors`` are the plugins
        that turned it down (by default the status's own plugin, if it rejected): the
        events their queueing hints accept move it back."""
        if rejectors is None:
            rejectors = (status.plugin,) if status.is_rejected() and status.plugin else ()
        if nominating is not None and (nominating or pod.nominated_node):
            self._nominate(pod, nominating)
        attempts = self.attempts[pod.uid] = self.attempts.get(pod.uid, 0) + 1
        cycle = self.queue.in_flight.get(pod.uid)
        if backoff or status.code == Code.ERROR:
            self.queue.add_backoff(pod, now, attempts=attempts)
        else:
            self.queue.add_unschedulable(pod, now, attempts=attempts, cycle=cycle,
                                         plugins=rejectors)
        return self._record(pod, nominating or None, status)

    def _record(self, pod: TaskInfo, node: str | None, status: Status) -> CycleResult:
        result = CycleResult(pod.uid, node, status)
        self.results.append(result)
        return result


def fit_error_message(nodes: int, statuses: Mapping[str, Status],
                      pre_filter: str | None = None, *, post_filter: str = "") -> str:
    """kube-scheduler's ``FitError.Error``: ``0/N nodes are available:`` then, when
    PreFilter rejected the pod with a message, that message; else each reason the
    nodes gave with the number of nodes that gave it (``2 Insufficient cpu``), sorted
    as text; each of these parts ending with a period; then the PostFilter plugins'
    message, if any, as it is."""
    message = f"0/{nodes} nodes are available:"
    if pre_filter:
        message += f" {pre_filter}."
    else:
        counts: dict[str, int] = {}
        for status in statuses.values():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if post_filter:
        # No period of its own (kubernetes#117588): the PostFilter's message ends as it ends.
        message += f" {post_filter}"
    return message


#: kube-scheduler's ``minFeasibleNodesToFind`` and ``minFeasibleNodesPercentageToFind``.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, nodes: int) -> int:
    """How many feasible nodes end a pod's filtering among ``nodes`` (kube-scheduler's
    ``numFeasibleNodesToFind``): every node under 100 nodes; else ``percentage`` of
    them (0: 50 less one per 125 nodes, at least 5), never fewer than 100."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _check_profiles(frameworks: Mapping[str, Framework]) -> None:
    """What kube-scheduler refuses in a set of profiles: none at all, one without
    exactly one QueueSort plugin or without a Bind plugin (its ``NewFramework``), and
    profiles that sort the queue differently (they share one queue). Each is found
    under its scheduler name (kube's profile map)."""
    if not frameworks:
        raise ConfigError("at least one profile is required", source="PodScheduler",
                          key="frameworks")
    sorts = set()
    for name, framework in frameworks.items():
        if not isinstance(framework, Framework):
            raise ConfigError(f"must be a Framework, not {type(framework).__name__}",
                              source="PodScheduler", key=f"frameworks[{name!r}]")
        if framework.profile.scheduler_name != name:
            raise ConfigError(f"the profile's scheduler name is "
                              f"{framework.profile.scheduler_name!r}: a pod names it in "
                              "its schedulerName", source="PodScheduler",
                              key=f"frameworks[{name!r}]")
        count = len(framework.plugins_at("queueSort"))
        if count != 1:
            raise ConfigError(f"only one queue sort plugin required for profile with scheduler "
                              f"name {name!r}, but got {count}", source=f"profile {name}",
                              key="plugins.queueSort")
        if not framework.plugins_at("bind"):
            raise ConfigError("at least one bind plugin is needed", source=f"profile {name}",
                              key="plugins.bind")
        sorts.add(tuple(plugin for plugin, _ in framework.plugins_at("queueSort")))
    if len(sorts) > 1:
        raise ConfigError("different queue sort plugins for different profiles: the profiles "
                          "share one queue", source="profiles", key="plugins.queueSort")


def _on_one_node(status: Status, node: str) -> Status:
    """A rejection at Reserve, Permit or while waiting at Permit as kube-scheduler words
    it: a fit error over the one node the pod was assumed on (``0/1 nodes are
    available: 1 <reason>.``), keeping the code and the plugin; any other status as
    it is."""
    if not status.is_rejected():
        return status
    return Status(status.code, (fit_error_message(1, {node: status}),), status.plugin)


def _guarded(point: Callable[[], Status]) -> Status:
    """A point's status; a plugin (or the host's bind) raising is an error status, as
    kube-scheduler turns a failed binding into one, so the pod is unreserved and
    requeued with backoff instead of staying assumed."""
    try:
        return point()
    except Exception as exc:
        log.warning("batchsched: %s", exc)
        status = Status.error(str(exc))
        plugin = getattr(exc, "plugin", "")  # a PluginError names its plugin
        return status.with_plugin(plugin) if isinstance(plugin, str) and plugin else status


def _view_node(view: ClusterInfo, name: str) -> NodeInfo | None:
    """The view's node of that name, Ready or not."""
    return view.nodes.get(name) or not_ready_nodes(view).get(name)


def _priority_at_most(top: int) -> Callable[[TaskInfo], bool]:
    return lambda pod: pod.pod_priority <= top


def _placed_copy(assumed: _Assumed) -> TaskInfo:
    """The assumed pod as it stood on its node (what an ``AssignedPodDelete`` event
    carries once it is forgotten)."""
    placed = assumed.pod.clone()
    placed.node_name = assumed.node
    return placed


def _task(view: ClusterInfo, pod: TaskInfo) -> TaskInfo | None:
    """The view's own object for ``pod`` (None when its job or the pod is gone)."""
    job = view.jobs.get(pod.job)
    return None if job is None else job.tasks.get(pod.uid)


def _place(view: ClusterInfo, task: TaskInfo, node: NodeInfo) -> None:
    """Assume the task on the node in the view: Allocated there, as a bind to come."""
    job = view.jobs.get(task.job)
    if job is not None and task.uid in job.tasks and job.tasks[task.uid] is task:
        job.update_task_status(task, TaskStatus.ALLOCATED)
    else:
        task.status = TaskStatus.ALLOCATED
    task.node_name = node.name
    node.add_task(task)
