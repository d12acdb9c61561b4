"""kube-scheduler's queueing hints in PodScheduler's queue: an event moves an
unschedulable pod only when a plugin that turned it down registered the event and
its hint says the change may help; an event received while the pod was being
scheduled counts when it fails. Each test failed before the queue read the hints
(every event moved every pod)."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.api.job import JobInfo, PodGroup
from batchsched.api.node import NodeInfo
from batchsched.api.resource import Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import TaskStatus
from batchsched.cache.memory import MemoryCache
from batchsched.errors import PluginError
from batchsched.kubesched import (
    CycleState,
    Framework,
    PluginRef,
    PodScheduler,
    Profile,
    Registry,
    Status,
    default_profile,
    from_entry_points,
)
from batchsched.kubesched.builtin_plugins import BUILTIN_KUBE_PLUGINS, NodeResourcesFit
from batchsched.kubesched.events import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    event_named,
    matches,
)
from batchsched.scenario import parse_scenario


def cache(nodes: dict[str, int], pods: list[tuple[str, int]]) -> MemoryCache:
    """``nodes``: name -> cpus; ``pods``: (name, cpus), each its own job."""
    doc = {
        "version": 1, "name": "hints", "config": {"actions": ""},
        "nodes": [{"name": n, "allocatable": {"cpu": c, "memory": "4Gi", "pods": 10}}
                  for n, c in nodes.items()],
        "jobs": [{"name": f"j-{name}", "minMember": 1, "phase": "Inqueue"} for name, _ in pods],
        "tasks": [{"name": name, "job": f"j-{name}", "requests": {"cpu": cpu}}
                  for name, cpu in pods],
    }
    return parse_scenario(doc, source="<test>").build_cache()


def scheduler(c: MemoryCache, *, filters: tuple[str, ...] = ("NodeResourcesFit",),
              plugins: dict[str, Any] | None = None, hints: bool = True,
              pre_filters: tuple[str, ...] = ()) -> PodScheduler:
    factories = {spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS}
    for name, plugin in (plugins or {}).items():
        factories[name] = _returning(plugin)
    profile = Profile("default-scheduler", {
        "queueSort": (PluginRef("PrioritySort"),), "bind": (PluginRef("DefaultBinder"),),
        "filter": tuple(PluginRef(name) for name in filters),
        "preFilter": tuple(PluginRef(name) for name in pre_filters)})
    return PodScheduler(c, Framework(Registry(factories), profile), queueing_hints=hints)


def _returning(plugin: Any) -> Any:
    def build(args: Any, handle: Any) -> Any:
        return plugin
    return build


def node(name: str, cpus: int, *, ready: bool = True) -> NodeInfo:
    return NodeInfo.create(name, Resource.from_mapping(
        {"cpu": cpus, "memory": "4Gi", "pods": 10}), ready=ready)


class _Waiting:
    """A Permit plugin that makes every pod wait ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        return Status.wait(), self.seconds


def waiting_scheduler(c: MemoryCache, seconds: float) -> PodScheduler:
    """A scheduler whose one Permit plugin, ``Waiting``, makes every pod wait."""
    factories = {spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS}
    factories["Waiting"] = _returning(_Waiting(seconds))
    profile = Profile("default-scheduler", {
        "queueSort": (PluginRef("PrioritySort"),), "bind": (PluginRef("DefaultBinder"),),
        "permit": (PluginRef("Waiting"),)})
    return PodScheduler(c, Framework(Registry(factories), profile))


def reported_events(s: PodScheduler) -> list[str]:
    """The events reported to the scheduler's queue from now on, as they come."""
    seen: list[str] = []
    move = s.queue.move_all_to_active_or_backoff

    def spy(now: float, event: Any = "", **given: Any) -> int:
        seen.append(str(event))
        return move(now, event, **given)

    s.queue.move_all_to_active_or_backoff = spy  # type: ignore[method-assign]
    return seen


def placed(c: MemoryCache, uid: str, on: str) -> Any:
    pod = next(task for job in c.snapshot().jobs.values() for task in job.tasks.values()
               if task.uid == uid).clone()
    pod.node_name = on
    return pod


def test_an_event_no_rejecting_plugin_registered_moves_nothing() -> None:
    c = cache({"n0": 1}, [("big", 4)])
    s = scheduler(c)
    s.run(0.0)
    assert "default/big" in s.queue.unschedulable
    # NodeResourcesFit registers node additions and allocatable changes, not labels.
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeUpdateNodeLabel") == 0
    assert "default/big" in s.queue.unschedulable
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeAdd") == 1


def test_a_node_added_moves_only_the_pods_it_could_hold() -> None:
    c = cache({"n0": 1}, [("big", 4), ("huge", 16)])
    s = scheduler(c)
    s.run(0.0)
    new = node("n1", 8)
    c.add_node(new)
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeAdd", new=new) == 1
    assert "default/huge" in s.queue.unschedulable
    s.run(20.0)
    assert {b.task: b.node for b in c.binds} == {"default/big": "n1"}


def test_a_node_whose_allocatable_did_not_grow_moves_nothing() -> None:
    c = cache({"n0": 2}, [("big", 4)])
    s = scheduler(c)
    s.run(0.0)
    same, more = node("n0", 2), node("n0", 4)
    assert s.queue.move_all_to_active_or_backoff(
        5.0, "NodeUpdateNodeAllocatable", old=same, new=same) == 0
    assert s.queue.move_all_to_active_or_backoff(
        5.0, "NodeUpdateNodeAllocatable", old=same, new=more) == 1


def test_only_a_placed_pod_deleted_moves_pods_turned_down_for_room() -> None:
    c = cache({"n0": 1}, [("big", 4), ("other", 1)])
    s = scheduler(c)
    s.run(0.0)
    waiting = placed(c, "default/big", "")
    assert s.queue.move_all_to_active_or_backoff(5.0, "AssignedPodDelete", old=waiting) == 0
    gone = placed(c, "default/other", "n0")
    assert s.queue.move_all_to_active_or_backoff(5.0, "AssignedPodDelete", old=gone) == 1


class Picky:
    """Turns every pod down; what it registers is set per test."""

    def __init__(self, events: list[Any] | None) -> None:
        if events is not None:
            self.events_to_register = lambda: events

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        return Status.unschedulable("no")


def test_a_plugin_that_registers_nothing_waits_for_the_timeout() -> None:
    c = cache({"n0": 4}, [("p", 1)])
    s = scheduler(c, filters=("Picky",), plugins={"Picky": Picky([])})
    s.run(0.0)
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeAdd") == 0
    assert s.queue.move_all_to_active_or_backoff(5.0, "") == 1  # the wildcard moves all


def test_a_plugin_without_events_to_register_is_retried_on_every_event() -> None:
    c = cache({"n0": 4}, [("p", 1)])
    s = scheduler(c, filters=("Picky",), plugins={"Picky": Picky(None)})
    s.run(0.0)
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeUpdateNodeLabel") == 1


def test_a_hint_that_raises_queues_the_pod() -> None:
    def broken(pod: Any, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("boom")

    c = cache({"n0": 4}, [("p", 1)])
    events = [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), broken)]
    s = scheduler(c, filters=("Picky",), plugins={"Picky": Picky(events)})
    s.run(0.0)
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeAdd", new=node("n1", 1)) == 1


@pytest.mark.parametrize(("hints", "moved"), [(True, 0), (False, 1)])
def test_without_hint_functions_the_registered_events_still_choose(
        hints: bool, moved: int) -> None:
    # kube with SchedulerQueueingHints off: its hint map holds the registered events
    # with hints that always queue (buildQueueingHintMap), so an event no rejector
    # registered moves nothing, and a registered one moves the pod unasked.
    c = cache({"n0": 1}, [("big", 4)])
    s = scheduler(c, hints=hints)
    s.run(0.0)
    assert s.view is not None
    node = s.view.nodes["n0"]
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeUpdateNodeLabel") == 0
    assert s.queue.move_all_to_active_or_backoff(
        5.0, "NodeUpdateNodeAllocatable", old=node, new=node) == moved


class Freeing:
    """A filter that deletes a placed pod's node room while the pod is in flight: it
    reports an event to the queue, then turns the pod down."""

    def __init__(self, queue_of: Any, event: str, old: Any) -> None:
        self.queue_of, self.event, self.old = queue_of, event, old

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return NodeResourcesFit().events_to_register()

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
        self.queue_of().move_all_to_active_or_backoff(1.0, self.event, old=self.old)
        return Status.unschedulable("Insufficient cpu")


@pytest.mark.parametrize(("event", "on", "requeued"), [
    ("AssignedPodDelete", "n0", True),   # a placed pod went: it may help
    ("AssignedPodDelete", "", False),    # an unplaced pod went: it cannot
    ("NodeUpdateNodeLabel", "n0", False),  # nothing the plugin registered
])
def test_an_event_while_in_flight_counts_when_the_pod_fails(
        event: str, on: str, requeued: bool) -> None:
    c = cache({"n0": 4}, [("p", 1), ("other", 1)])
    holder: list[PodScheduler] = []
    freeing = Freeing(lambda: holder[0].queue, event, placed(c, "default/other", on))
    s = scheduler(c, filters=("Freeing",), plugins={"Freeing": freeing})
    holder.append(s)
    s.run(1.0, max_pods=1)
    first = s.results[0].pod
    queue = s.queue
    assert (first in queue.unschedulable) is not requeued
    assert (first in queue.backoff or first in queue.active) is requeued
    assert queue.in_flight == {}


@pytest.mark.parametrize(("event", "on", "requeued"), [
    ("AssignedPodDelete", "n0", True),
    ("AssignedPodDelete", "", True),     # no hint asked: any registered event counts
    ("NodeUpdateNodeLabel", "n0", False),  # no plugin registered it: no move request
])
def test_without_hint_functions_a_registered_event_while_in_flight_counts(
        event: str, on: str, requeued: bool) -> None:
    # kube's addUnschedulableWithoutQueueingHint: a move request received since the
    # pod was popped sends it to backoff, whichever plugins turned it down.
    c = cache({"n0": 4}, [("p", 1), ("other", 1)])
    holder: list[PodScheduler] = []
    freeing = Freeing(lambda: holder[0].queue, event, placed(c, "default/other", on))
    s = scheduler(c, filters=("Freeing",), plugins={"Freeing": freeing}, hints=False)
    holder.append(s)
    s.run(1.0, max_pods=1)
    first = s.results[0].pod
    assert (first in s.queue.unschedulable) is not requeued


def test_event_labels_are_kube_s_and_a_typo_is_named() -> None:
    assert event_named("NodeAdd") == ClusterEvent(NODE, ActionType.ADD)
    assert event_named("AssignedPodDelete").name == "AssignedPodDelete"
    assert event_named("").is_wildcard()
    assert matches(ClusterEvent("Pod", ActionType.DELETE), event_named("AssignedPodDelete"))
    assert not matches(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), event_named("NodeUpdate"))
    assert matches(ClusterEvent(NODE, ActionType.UPDATE), event_named("NodeUpdateNodeLabel"))
    with pytest.raises(ValueError, match="'NodeAdded' is no cluster event"):
        event_named("NodeAdded")


def test_a_plugin_whose_events_to_register_raises_is_named() -> None:
    class Bad(Picky):
        def events_to_register(self) -> list[Any]:
            raise RuntimeError("boom")

    with pytest.raises(PluginError, match="'Bad' raised at eventsToRegister"):
        scheduler(cache({"n0": 1}, []), filters=("Bad",), plugins={"Bad": Bad(None)})
    with pytest.raises(PluginError, match="registered 'node', not a ClusterEventWithHint"):
        scheduler(cache({"n0": 1}, []), filters=("Picky",),
                  plugins={"Picky": Picky(["node"])})


class Zone:
    """A PreFilter narrowing the nodes to ``allowed``; a node label change may help."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed

    def pre_filter(self, state: CycleState, pod: Any) -> tuple[set[str], Status]:
        return set(self.allowed), Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL))]


class Refusing:
    def pre_filter(self, state: CycleState, pod: Any) -> Status:
        return Status.unschedulable("no")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return []


def test_the_prefilter_plugins_that_narrowed_the_nodes_are_among_the_rejectors() -> None:
    c = cache({"n0": 1, "n1": 8}, [("big", 4)])
    s = scheduler(c, pre_filters=("Zone",), plugins={"Zone": Zone({"n0"})})
    s.run(0.0)
    assert s.queue.unschedulable["default/big"].unschedulable_plugins == {
        "Zone", "NodeResourcesFit"}
    assert s.queue.move_all_to_active_or_backoff(5.0, "NodeUpdateNodeLabel") == 1
    c = cache({"n0": 8}, [("p", 1)])
    s = scheduler(c, pre_filters=("Zone", "Refusing"),
                  plugins={"Zone": Zone({"n0"}), "Refusing": Refusing()})
    s.run(0.0)
    assert s.queue.unschedulable["default/p"].unschedulable_plugins == {"Zone", "Refusing"}


def test_a_pod_no_plugin_turned_down_waits_out_an_error_backoff() -> None:
    c = cache({"n0": 1}, [("p", 1)])
    s = scheduler(c)
    pod = next(t for job in c.snapshot().jobs.values() for t in job.tasks.values())
    s.queue.add_unschedulable(pod, 0.0, attempts=1, plugins=())
    assert s.queue.backoff["default/p"].error  # never popped before its backoff ends
    assert s.queue.pop(0.5) is None


def test_a_pod_activated_while_in_flight_is_requeued_when_it_fails() -> None:
    c = cache({"n0": 1}, [("a", 1), ("b", 1)])
    s = scheduler(c)
    queue = s.queue
    pods = {t.name: t for job in c.snapshot().jobs.values() for t in job.tasks.values()}
    for pod in pods.values():
        queue.add(pod, 0.0)
    first, second = queue.pop(0.0), queue.pop(0.0)
    assert first is not None and second is not None
    queue.activate([first.pod.uid])
    queue.add_unschedulable(first.pod, 1.0, attempts=1, cycle=first.cycle,
                            plugins=("NodeResourcesFit",))
    queue.add_unschedulable(second.pod, 1.0, attempts=1, cycle=second.cycle,
                            plugins=("NodeResourcesFit",))
    assert first.pod.uid in queue.backoff  # the activation was for it
    assert second.pod.uid in queue.unschedulable  # and for it only
    assert queue.in_flight == {}


def test_fit_queues_a_pod_for_a_deletion_it_cannot_read() -> None:
    pod = next(t for job in cache({"n0": 1}, [("p", 1)]).snapshot().jobs.values()
               for t in job.tasks.values())
    assert NodeResourcesFit.after_pod_event(pod, {"nodeName": "n0"}, None) \
        is QueueingHint.QUEUE


def test_a_registration_of_no_cluster_event_is_named_when_the_profile_is_built() -> None:
    with pytest.raises(PluginError, match="registered ClusterEventWithHint"):
        scheduler(cache({"n0": 1}, []), filters=("Picky",),
                  plugins={"Picky": Picky([ClusterEventWithHint("NodeAdd")])})  # type: ignore[arg-type]


def test_a_pod_no_profile_schedules_any_more_is_no_longer_in_flight() -> None:
    c = cache({"n0": 1}, [("big", 4)])
    s = scheduler(c)
    s._refresh_view(0.0)
    pod = next(t for job in c.snapshot().jobs.values() for t in job.tasks.values())
    s.queue.add(pod, 0.0)
    popped = s.queue.pop(0.0)
    assert popped is not None
    popped.pod.scheduler_name = "gone"
    s.schedule_one(popped.pod, 0.0)
    assert s.queue.in_flight == {}


# -- the changes between runs, reported as kube's informers report them -----------------

def _task(c: MemoryCache, uid: str) -> Any:
    return next(t for job in c.snapshot().jobs.values() for t in job.tasks.values()
                if t.uid == uid)


def test_a_node_added_between_runs_moves_the_pods_it_can_hold() -> None:
    c = cache({"n0": 1}, [("big", 4), ("huge", 16)])
    s = scheduler(c)
    s.run(0.0)
    c.add_node(node("n1", 8))  # the host reports nothing
    s.run(20.0)
    assert {b.task: b.node for b in c.binds} == {"default/big": "n1"}
    assert "default/huge" in s.queue.unschedulable


def test_a_pod_gone_from_its_node_between_runs_makes_room() -> None:
    c = cache({"n0": 2}, [("first", 2), ("next", 2)])
    s = scheduler(c)
    s.run(0.0)
    assert [b.task for b in c.binds] == ["default/first"]
    c.delete_task(_task(c, "default/first"))
    s.run(20.0)
    assert [b.task for b in c.binds] == ["default/first", "default/next"]


def test_a_node_label_change_reaches_a_plugin_that_registered_it() -> None:
    class Labelled:
        def filter(self, state: CycleState, pod: Any, node: Any) -> Status:
            if node.labels.get("ready-for") == "p":
                return Status.success()
            return Status.unschedulable("not labelled")

        def events_to_register(self) -> list[ClusterEventWithHint]:
            return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL))]

    c = cache({"n0": 2}, [("p", 1)])
    s = scheduler(c, filters=("Labelled",), plugins={"Labelled": Labelled()})
    s.run(0.0)
    relabelled = node("n0", 2)
    relabelled.labels["ready-for"] = "p"
    c.add_node(relabelled)
    s.run(20.0)
    assert [b.task for b in c.binds] == ["default/p"]


def test_without_cluster_events_only_the_host_s_reports_move_pods() -> None:
    c = cache({"n0": 1}, [("big", 4)])
    framework = scheduler(c).frameworks["default-scheduler"]
    s = PodScheduler(c, framework, cluster_events=False)
    s.run(0.0)
    c.add_node(node("n1", 8))
    s.run(20.0)
    assert c.binds == []
    s.queue.move_all_to_active_or_backoff(20.0, "NodeAdd", new=node("n1", 8))
    s.run(40.0)
    assert [b.task for b in c.binds] == ["default/big"]


def test_a_node_that_gains_a_resource_is_an_allocatable_update() -> None:
    from batchsched.kubesched.informer import cluster_changes

    c = cache({"n0": 1}, [])
    before = c.snapshot()
    gpu = NodeInfo.create("n0", Resource.from_mapping(
        {"cpu": 1, "memory": "4Gi", "pods": 10, "nvidia.com/gpu": 1}))
    c.add_node(gpu)
    assert [change.event for change in cluster_changes(before, c.snapshot())] == [
        "NodeUpdateNodeAllocatable"]


def test_a_pod_created_again_elsewhere_under_its_name_is_a_delete_and_an_add() -> None:
    from batchsched.kubesched.informer import cluster_changes

    c = cache({"n0": 4, "n1": 4}, [("f", 2)])
    c.bind(_task(c, "default/f"), "n0")
    before = c.snapshot()
    again = _task(c, "default/f").clone()
    c.delete_task(_task(c, "default/f"))
    again.creation_time += 10.0
    again.node_name = ""
    again.status = TaskStatus.PENDING
    c.add_task(again)
    c.bind(_task(c, "default/f"), "n1")
    changes = [(change.event, getattr(change.old or change.new, "node_name", ""))
               for change in cluster_changes(before, c.snapshot())]
    assert ("AssignedPodDelete", "n0") in changes and ("AssignedPodAdd", "n1") in changes


def test_the_pods_of_a_node_that_left_the_snapshot_are_not_deleted_pods() -> None:
    from batchsched.kubesched.informer import cluster_changes

    c = cache({"n0": 4, "n1": 4}, [("g", 2)])
    c.bind(_task(c, "default/g"), "n1")
    before = c.snapshot()
    after = c.snapshot()
    del after.nodes["n1"]  # a host whose snapshot drops a node that is not Ready
    after.not_ready_nodes = {}
    assert [change.event for change in cluster_changes(before, after)] == ["NodeDelete"]


# -- where a pod stands, and what may move it ------------------------------------------

def test_where_says_which_plugins_turned_a_pod_down_and_what_it_waits_for() -> None:
    c = cache({"n0": 1}, [("big", 4)])
    s = scheduler(c)
    s.run(0.0)
    wait = s.where("default/big")
    assert wait is not None
    assert (wait.state, wait.attempts, wait.rejected_by) == (
        "unschedulable", 1, ("NodeResourcesFit",))
    # NodeUpdateNodeTaint: kube registers it for every plugin that registers a node
    # added and not it (buildQueueingHintMap, kubernetes#109437).
    assert wait.awaits == ("Pod{Delete,UpdatePodScaleDown}",
                           "Node{Add,UpdateNodeAllocatable}", "NodeUpdateNodeTaint")
    assert wait.retry_by == 300.0
    assert str(wait) == (
        "default/big: unschedulable after 1 attempt(s), turned down by NodeResourcesFit; "
        "waits for Pod{Delete,UpdatePodScaleDown} or Node{Add,UpdateNodeAllocatable} "
        "or NodeUpdateNodeTaint; tried again once t is past 300")
    assert s.where("default/nobody") is None


def test_where_names_the_plugins_a_pod_waiting_at_permit_waits_for() -> None:
    c = cache({"n0": 2}, [("p", 1)])
    s = waiting_scheduler(c, 30.0)
    s.run(5.0)
    assert str(s.where("default/p")) == (
        "default/p: waiting at permit on n0, for Waiting to allow it; times out at t=35")


def test_a_pod_deleted_while_queued_leaves_the_queue() -> None:
    """Gated pods were never popped, so a deleted one stayed queued forever."""
    c = cache({"n0": 4}, [])
    for i in range(3):
        pg = PodGroup(f"j{i}", min_member=1)
        c.add_job(JobInfo.from_podgroup(pg, tasks=[TaskInfo.create(
            "default", f"p{i}", pg.uid, Resource.from_mapping({"cpu": 1}),
            scheduling_gates=("wait",))]))
    s = PodScheduler(c, Framework(from_entry_points(), default_profile()))
    s.run(0.0)
    assert len(s.queue) == 3
    for i in range(3):
        c.delete_job(f"default/j{i}")
    s.run(10.0)
    assert len(s.queue) == 0 and s.attempts == {}


def _add_pod(c: MemoryCache, name: str, cpu: float, **fields: Any) -> TaskInfo:
    pg = PodGroup(f"j-{name}", min_member=1)
    task = TaskInfo.create("default", name, pg.uid, Resource.from_mapping({"cpu": cpu}),
                           **fields)
    c.add_job(JobInfo.from_podgroup(pg, tasks=[task]))
    return task


@pytest.mark.parametrize(("scheduler_name", "reported"), [("", True), ("volcano", False)])
def test_only_a_pod_of_the_scheduler_s_own_newly_pending_is_an_event(
        scheduler_name: str, reported: bool) -> None:
    from batchsched.kubesched.informer import cluster_changes

    c = cache({"n0": 4}, [("p", 1)])
    s = scheduler(c)
    before = c.snapshot()
    _add_pod(c, "newcomer", 1, scheduler_name=scheduler_name)
    changes = cluster_changes(before, c.snapshot(),
                              owned=lambda pod: s.framework_for(pod) is not None)
    assert ([change.event for change in changes] == ["UnschedulablePodAdd"]) is reported


def test_a_nominated_pending_pod_deleted_frees_its_room_for_lower_priority_pods() -> None:
    c = cache({"n0": 4}, [])
    high = _add_pod(c, "high", 4, priority=100, scheduling_gates=("wait",))
    c.nominate(c.jobs["default/j-high"].tasks[high.uid], "n0")
    _add_pod(c, "low", 2, priority=0)
    s = PodScheduler(c, Framework(from_entry_points(), default_profile()))
    s.run(0.0)
    assert "default/low" in s.queue.unschedulable
    c.delete_task(c.jobs["default/j-high"].tasks[high.uid])
    s.run(1.0)
    assert [b.task for b in c.binds] == ["default/low"]


def test_where_gives_the_end_of_a_backoff_by_whole_seconds() -> None:
    c = cache({"n0": 1}, [("p", 1)])
    s = scheduler(c)
    pod = next(t for job in c.snapshot().jobs.values() for t in job.tasks.values())
    s.queue.add_backoff(pod, 0.5, attempts=1)  # ready at 1.5: past its window at 2
    wait = s.queue.where("default/p")
    assert wait is not None and wait.retry_by == 2.0


def test_a_pod_created_again_after_its_namesake_was_deleted_starts_afresh() -> None:
    """The attempts of a deleted pod were kept (and grew for ever over many pods): a
    pod created again under its name inherited them, and their longer backoff."""
    c = cache({"n0": 1}, [("p", 4)])
    s = scheduler(c)
    for now in (0.0, 20.0, 40.0):
        s.queue.move_all_to_active_or_backoff(now, "")
        s.run(now)
    assert s.attempts == {"default/p": 3}
    c.delete_job("default/j-p")
    s.run(60.0)
    assert s.attempts == {}


def test_a_pod_waiting_at_permit_stays_assumed_when_its_node_stops_being_ready() -> None:
    """Only a node deleted forgets the pods assumed on it; a NotReady one is still the
    cache's (kube keeps the pod assumed)."""
    c = cache({"n0": 2}, [("p", 1)])
    s = waiting_scheduler(c, 600.0)
    s.run(0.0)
    c.add_node(node("n0", 2, ready=False))
    s.run(1.0)
    assert set(s.assumed) == {"default/p"} and len(s.queue) == 0
    c.delete_node("n0")
    s.run(2.0)
    assert s.assumed == {}


def test_a_pod_given_up_on_a_node_not_ready_leaves_no_stale_event_behind() -> None:
    """Forgetting it took it off the Ready nodes only: the next run saw it leave the
    NotReady node and reported a pod deleted though nothing had changed."""
    c = cache({"n0": 2}, [("p", 1)])
    s = waiting_scheduler(c, 5.0)
    s.run(0.0)
    c.add_node(node("n0", 2, ready=False))
    s.run(1.0)
    s.run(6.0)  # the wait timed out: the pod is given up
    seen = reported_events(s)
    s.run(7.0)  # nothing changed in the cache since
    assert seen == []


def test_a_nominated_pod_deleted_while_waiting_at_permit_is_one_event() -> None:
    """kube reports such a pod's deletion once; it was reported a second time, as a
    nominated pending pod deleted (forgetting it had made it pending in the old view)."""
    c = cache({"n0": 2}, [("p", 1)])
    s = waiting_scheduler(c, 60.0)
    s.run(0.0)
    c.nominate(c.jobs["default/j-p"].tasks["default/p"], "n0")
    s.run(0.5)
    seen = reported_events(s)
    c.delete_job("default/j-p")
    s.run(1.0)
    assert seen == ["AssignedPodDelete"]


def test_where_writes_a_wall_clock_time_in_full() -> None:
    c = cache({"n0": 1}, [("big", 4)])
    s = scheduler(c)
    s.run(1718000000.5)
    assert str(s.where("default/big")).endswith("tried again once t is past 1718000300.5")
