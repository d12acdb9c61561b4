"""MemoryCache as a host drives it between and during cycles: node updates keep their
pods, binds are checked against the cache as it is now, evictions and duplicate pods
are refused, nominations do not outlive their pods."""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest
import yaml

from batchsched import (
    JobInfo,
    MemoryCache,
    NodeInfo,
    PodGroup,
    Resource,
    Scheduler,
    TaskInfo,
    TaskStatus,
)
from batchsched.api.cluster import ClusterInfo, PriorityClass
from batchsched.api.queue import QueueInfo
from batchsched.api.sharding import NodeShard
from batchsched.api.types import PodGroupPhase
from batchsched.errors import SchedulingError
from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario
from batchsched.scheduler import run_actions


def node(name: str, cpu: int = 4, **labels: str) -> NodeInfo:
    return NodeInfo.create(name, Resource.from_mapping({"cpu": cpu, "memory": "8Gi",
                                                        "pods": 20}), labels=labels)


def gang(name: str, size: int, minimum: int, cpu: int = 1) -> JobInfo:
    job = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=minimum))
    for k in range(size):
        job.add_task(TaskInfo.create("ns", f"{name}-{k}", job.uid,
                                     Resource.from_mapping({"cpu": cpu, "memory": "1Gi"})))
    return job


def used_cpu(cache: MemoryCache, name: str) -> float:
    return cache.nodes[name].used.milli_cpu


def test_updating_a_node_keeps_its_pods() -> None:
    cache = MemoryCache(now=1000.0)
    cache.add_node(node("n1", cpu=2))
    cache.add_job(gang("a", 2, 2))
    Scheduler(cache).run_once()
    assert used_cpu(cache, "n1") == 2000
    cache.add_node(node("n1", cpu=2, zone="a"))  # a label added
    assert sorted(cache.nodes["n1"].tasks) == ["ns/a-0", "ns/a-1"]
    assert used_cpu(cache, "n1") == 2000 and cache.nodes["n1"].labels == {"zone": "a"}
    cache.add_job(gang("b", 2, 2))
    Scheduler(cache).run_once()
    assert all(t.status is TaskStatus.PENDING for t in cache.jobs["ns/b"].tasks.values())
    cache.nodes["n1"].check_invariants()


class LateArrival(MemoryCache):
    """A host whose informer adds another scheduler's pod right after the snapshot."""

    arriving: TaskInfo | None = None

    def snapshot(self) -> ClusterInfo:
        taken = super().snapshot()
        if self.arriving is not None:
            self.add_foreign_pod(self.arriving)
            self.arriving = None
        return taken


def test_a_bind_is_refused_when_the_node_filled_up_since_the_snapshot() -> None:
    cache = LateArrival(now=1000.0)
    cache.add_node(node("n1", cpu=4))
    cache.add_job(gang("g", 2, 2, cpu=2))
    cache.arriving = TaskInfo.create("other", "foreign", "",
                                     Resource.from_mapping({"cpu": 3, "memory": "1Gi"}),
                                     node_name="n1", status=TaskStatus.RUNNING)
    ssn = Scheduler(cache).run_once()
    node_ = cache.nodes["n1"]
    assert node_.used.less_equal(node_.allocatable)
    assert any(e.reason == "FailedScheduling" and "are not enough" in e.message
               for e in ssn.events)
    assert not [t for t in cache.jobs["ns/g"].tasks.values() if t.status is TaskStatus.BOUND]


class MovedMeanwhile(MemoryCache):
    """A host that learns, after the snapshot, that the pod runs elsewhere already."""

    def snapshot(self) -> ClusterInfo:
        taken = super().snapshot()
        if "ns/g" in self.jobs and "ns/g-0" not in self.nodes["n2"].tasks:
            self.delete_job("ns/g")  # the job as the host now knows it replaces it
            moved = gang("g", 1, 1)
            placed = moved.tasks["ns/g-0"]
            moved.update_task_status(placed, TaskStatus.RUNNING)
            placed.node_name = "n2"
            self.add_job(moved)
        return taken


def test_a_bind_of_a_pod_placed_elsewhere_meanwhile_is_refused() -> None:
    cache = MovedMeanwhile(now=1000.0)
    cache.add_node(node("n1"))
    cache.add_node(node("n2", cpu=1))
    cache.add_job(gang("g", 1, 1))
    Scheduler(cache).run_once()
    task = cache.jobs["ns/g"].tasks["ns/g-0"]
    assert (task.status, task.node_name) == (TaskStatus.RUNNING, "n2")
    assert "ns/g-0" not in cache.nodes["n1"].tasks


def test_a_pod_added_twice_is_refused_and_changes_nothing() -> None:
    cache = MemoryCache(now=1000.0)
    cache.add_node(node("n1"))
    job = gang("g", 1, 1)
    cache.add_job(job)
    before = cache.jobs["ns/g"].total_request.milli_cpu
    again = TaskInfo.create("ns", "g-0", job.uid, Resource.from_mapping({"cpu": 2}))
    with pytest.raises(SchedulingError, match="holds it already"):
        cache.add_task(again)
    assert cache.jobs["ns/g"].total_request.milli_cpu == before
    cache.jobs["ns/g"].check_invariants()


def test_an_eviction_of_a_pod_on_no_node_is_refused() -> None:
    cache = MemoryCache(now=1000.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("g", 1, 1))
    Scheduler(cache).run_once()
    task = cache.jobs["ns/g"].tasks["ns/g-0"]
    cache.task_recreated("ns/g", "ns/g-0")
    assert cache.evict(task, "preempted") is False
    assert task.status is TaskStatus.PENDING
    cache.delete_node("n1")
    assert cache.evict(task, "preempted") is False


def _placed_then_evicted() -> tuple[MemoryCache, TaskInfo]:
    """A one-task gang placed on n1 by a session, then evicted by the host."""
    cache = MemoryCache(now=1000.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("g", 1, 1))
    Scheduler(cache).run_once()
    task = cache.jobs["ns/g"].tasks["ns/g-0"]
    assert cache.evict(task, "preempted")
    return cache, task


def test_a_pod_created_again_is_not_being_deleted() -> None:
    # The new pod has no deletion timestamp and no preemption condition: topology
    # spread counts it, and it keeps no nominated preemptor waiting.
    cache, task = _placed_then_evicted()
    task.deleting = True
    cache.task_recreated("ns/g", "ns/g-0")
    assert not task.deleting and not task.preempted_by_scheduler


def test_nominations_go_with_their_pods() -> None:
    cache = MemoryCache(now=1000.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("g", 2, 1))
    tasks = list(cache.jobs["ns/g"].tasks.values())
    for task in tasks:
        cache.nominate(task, "n1")
    cache.task_recreated("ns/g", tasks[0].uid)
    assert tasks[0].nominated_node == "" and tasks[0].uid not in cache.nominations
    cache.delete_job("ns/g")
    assert cache.nominations == {}


class KeepsBinds(MemoryCache):
    """A host whose unbind fails (its API server is unreachable)."""

    def unbind(self, task: TaskInfo, reason: str) -> bool:
        raise ConnectionError("api server unreachable")


def test_a_bind_the_host_did_not_take_back_keeps_its_room_in_the_session() -> None:
    cache = KeepsBinds(now=1000.0, binder=lambda task, node_name: task.name != "g-2")
    cache.add_node(node("n1", cpu=3))
    cache.add_job(gang("g", 3, 3))
    ssn = Scheduler(cache).run_once()
    assert [e.operation for e in ssn.host_errors] == ["unbind", "unbind"]
    assert ssn.nodes["n1"].used.milli_cpu == 2000  # g-0 and g-1 still hold it
    assert ssn.bound_count == 2
    cache.nodes["n1"].check_invariants()


def test_a_plugin_raising_while_a_refused_bind_is_undone_still_rolls_the_gang_back() -> None:
    from batchsched import PluginSpec, hookimpl
    from batchsched.conf import configuration_from_text
    from batchsched.errors import PluginError
    from batchsched.framework.events import EventHandler
    from batchsched.framework.registry import Registry

    class Grumpy:
        name = "grumpy"

        def __init__(self, arguments: object) -> None:
            pass

        def on_session_open(self, ssn: object) -> None:
            def deallocate(event: object) -> None:
                raise RuntimeError("deallocate handler blew up")

            ssn.add_event_handler(  # type: ignore[attr-defined]
                EventHandler(allocate=None, deallocate=deallocate, plugin="grumpy"))

        def on_session_close(self, ssn: object) -> None:
            pass

    class Provides:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("grumpy", Grumpy)]

    registry = Registry()
    registry.register(Provides(), name="grumpy-plugins")
    configuration = configuration_from_text(
        'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}, {name: grumpy}]\n'
        "- plugins: [{name: predicates}, {name: proportion}]\n")
    cache = MemoryCache(now=1000.0, binder=lambda task, node_name: task.name != "g-1")
    cache.add_node(node("n1"))
    cache.add_job(gang("g", 3, 3))
    with pytest.raises(PluginError, match="grumpy"):
        Scheduler(cache, configuration, registry=registry).run_once()
    statuses = {t.name: t.status for t in cache.jobs["ns/g"].tasks.values()}
    assert statuses == {"g-0": TaskStatus.PENDING, "g-1": TaskStatus.PENDING,
                        "g-2": TaskStatus.PENDING}  # no gang left partly bound
    assert not cache.nodes["n1"].tasks


def test_a_pod_being_deleted_that_starts_stays_releasing() -> None:
    cache, task = _placed_then_evicted()
    cache.task_started("ns/g", "ns/g-0", at=1001.0)
    assert task.status is TaskStatus.RELEASING and task.start_time == 1001.0
    assert cache.nodes["n1"].releasing.milli_cpu == 1000


_REPLACED = {"actions": "enqueue, allocate", "tiers": [
    {"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "proportion"}]}]}


def _replaced_cluster(phase: str, task: dict[str, object]) -> Any:
    return parse_scenario({
        "version": 1, "config": _REPLACED,
        "queues": [{"name": "q1", "capability": {"cpu": 4, "memory": "16Gi"}}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 8, "memory": "16Gi", "pods": 20}}],
        "jobs": [{"name": "a", "namespace": "ns", "queue": "q1", "minMember": 1,
                  "phase": phase, "minResources": {"cpu": 1, "memory": "1Gi"}},
                 {"name": "c", "namespace": "ns", "queue": "q1", "minMember": 1,
                  "phase": "Inqueue", "minResources": {"cpu": "3500m", "memory": "1Gi"}}],
        "tasks": [task]}, source="<test>")


def test_a_job_replaced_while_a_session_runs_keeps_its_own_status() -> None:
    """Volcano writes a pod group's status with the snapshot's resource version: a pod
    group deleted and created again meanwhile keeps what the new object says."""
    old = _replaced_cluster("Running", {
        "name": "a-0", "namespace": "ns", "job": "a", "requests": {"cpu": 1, "memory": "1Gi"},
        "node": "n1", "phase": "Running"})
    new = _replaced_cluster("Pending", {
        "name": "a-1", "namespace": "ns", "job": "a", "requests": {"cpu": 1, "memory": "1Gi"}})
    cache = old.build_cache()
    ssn = Session.open(cache, old.configuration)
    run_actions(ssn)
    cache.delete_job("ns/a")
    cache.add_job(new.build_cache().jobs["ns/a"])
    ssn.close()
    assert cache.jobs["ns/a"].podgroup.phase == PodGroupPhase.PENDING
    ssn = Session.open(cache, old.configuration)
    run_actions(ssn)
    ssn.close()
    assert cache.binds == []     # proportion keeps it Pending: 1 + 3.5 cpu > 4


def test_a_nomination_of_a_pod_deleted_meanwhile_is_not_kept() -> None:
    cache = MemoryCache()
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("h", "ns", min_member=1))
    task = TaskInfo.create("ns", "h-0", job.uid, Resource.from_mapping({"cpu": 1}))
    job.add_task(task)
    cache.add_job(job)
    snapshot_task = cache.snapshot().jobs["ns/h"].tasks["ns/h-0"]
    cache.delete_task(cache.jobs["ns/h"].tasks["ns/h-0"])
    cache.nominate(snapshot_task, "n1")
    assert cache.nominations == {}


class _RefusingStatusOf(MemoryCache):
    """A host whose API server refuses one pod group's status update."""

    refused = "ns/w"

    def update_job_status(self, job: JobInfo) -> None:
        if job.uid == self.refused:
            raise ConnectionError("apiserver down")
        super().update_job_status(job)


@pytest.mark.parametrize("in_bulk", [False, True])
def test_a_job_whose_status_the_host_refused_records_no_events(in_bulk: bool) -> None:
    """Volcano's UpdateJobStatus returns before RecordJobStatusEvent when the pod
    group's update fails: the job's and its pods' events wait for a cycle that writes."""
    cls: type[MemoryCache] = _RefusingStatusOf
    if in_bulk:
        def update_job_statuses(self: MemoryCache, jobs: Any) -> None:
            raise ConnectionError("apiserver down")
        cls = type("RefusingInBulk", (_RefusingStatusOf,),
                   {"update_job_statuses": update_job_statuses})
    cache = cls(now=1000.0)
    cache.add_node(node("n1", cpu=1))
    cache.add_job(gang("w", 1, 1, cpu=2))   # never fits: Unschedulable
    cache.add_job(gang("v", 1, 1, cpu=2))   # never fits either, its status is written
    ssn = Scheduler(cache).run_once()
    assert [e.obj for e in ssn.host_errors if e.operation == "update_job_status"] == ["ns/w"]
    objects = {event.object for event in cache.events}
    assert "ns/v" in objects and "ns/v-0" in objects
    assert "ns/w" not in objects and "ns/w-0" not in objects


def test_a_job_whose_pod_id_a_node_holds_already_is_refused_whole() -> None:
    """add_job checks every pod before it stores anything: the cache is unchanged and
    the same job can be added once the clash is gone."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    foreign = TaskInfo.create("ns", "x", "", Resource.from_mapping({"cpu": 1}))
    foreign.node_name, foreign.status = "n1", TaskStatus.RUNNING
    cache.add_foreign_pod(foreign)
    job = JobInfo.from_podgroup(PodGroup("c", "ns", min_member=2))
    for name in ("c-0", "x"):
        task = TaskInfo.create("ns", name, job.uid, Resource.from_mapping({"cpu": 1}))
        task.node_name, task.status = "n1", TaskStatus.RUNNING
        job.add_task(task)
    with pytest.raises(SchedulingError, match="ns/x: node n1 holds a pod of that id already"):
        cache.add_job(job)
    assert "ns/c" not in cache.jobs and used_cpu(cache, "n1") == 1000
    cache.delete_task(foreign)
    cache.add_job(job)
    assert used_cpu(cache, "n1") == 2000


def test_deleting_a_pod_goes_by_where_the_cache_has_it() -> None:
    """The host's object may predate the bind (no node on it): the node still gives
    the pod's room back; a pod named with another job than its own is refused."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("a", 1, 1))
    Scheduler(cache).run_once()
    assert used_cpu(cache, "n1") == 1000
    stranger = TaskInfo.create("ns", "a-0", "ns/zzz", Resource.from_mapping({"cpu": 1}))
    stranger.node_name = "n1"
    with pytest.raises(SchedulingError, match="job 'ns/zzz' does not hold it; job ns/a does"):
        cache.delete_task(stranger)
    assert used_cpu(cache, "n1") == 1000
    cache.delete_task(TaskInfo.create("ns", "a-0", "ns/a", Resource.from_mapping({"cpu": 1})))
    assert used_cpu(cache, "n1") == 0 and not cache.jobs["ns/a"].tasks
    cache.nodes["n1"].check_invariants()


def test_a_pending_pod_naming_a_missing_node_is_refused() -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("b", 0, 1))
    task = TaskInfo.create("ns", "p", "ns/b", Resource.from_mapping({"cpu": 1}))
    task.node_name = "ghost"
    with pytest.raises(SchedulingError, match="ns/p: node 'ghost' is not in the cache"):
        cache.add_task(task)
    assert not cache.jobs["ns/b"].tasks


def test_config_map_data_must_map_strings_to_strings() -> None:
    cache = MemoryCache(now=0.0)
    with pytest.raises(SchedulingError, match="config map ns/cm: data must map strings"):
        cache.set_config_map("ns", "cm", [1, 2])  # type: ignore[arg-type]
    assert cache.config_maps == {}


@pytest.mark.parametrize("amount", [-2000.0, float("nan"), float("inf")])
def test_a_pod_asking_no_real_amount_is_refused(amount: float) -> None:
    """A negative, NaN or infinite request would over-commit nodes (or fail every bind
    of every later cycle): refused at the door, naming the pod and the field."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    job = gang("a", 1, 1)
    job.add_task(TaskInfo.create("ns", "bad", job.uid, Resource(milli_cpu=amount)))
    with pytest.raises(SchedulingError, match=r"task ns/bad: resreq\.cpu is .*not an amount"):
        cache.add_job(job)
    assert not cache.jobs
    cache.add_job(gang("b", 0, 1))
    with pytest.raises(SchedulingError, match=r"task ns/x: init_resreq\.memory"):
        task = TaskInfo.create("ns", "x", "ns/b", Resource.from_mapping({"cpu": 1}))
        task.init_resreq = Resource(1000, memory=amount)
        cache.add_task(task)
    assert not cache.jobs["ns/b"].tasks


@pytest.mark.parametrize("amount", [-4000.0, float("nan"), float("inf")])
def test_a_node_with_no_real_allocatable_is_refused(amount: float) -> None:
    cache = MemoryCache(now=0.0)
    with pytest.raises(SchedulingError, match=r"node n1: allocatable\.cpu is .*not an amount"):
        cache.add_node(NodeInfo.create("n1", Resource(amount, 1e9, {"pods": 10})))
    with pytest.raises(SchedulingError, match=r"node n2: capacity\.nvidia\.com/gpu"):
        cache.add_node(NodeInfo.create("n2", Resource(1000, 1e9, {"pods": 10}),
                                       capacity=Resource(1000, 1e9, {"nvidia.com/gpu": amount})))
    assert not cache.nodes


def test_a_pod_whose_status_is_no_task_status_is_refused() -> None:
    """A status given by its name would break every later session (its job's status
    index is keyed by TaskStatus): refused, naming the pod and the field."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    task = TaskInfo.create("ns", "t", "ns/pg", Resource.from_mapping({"cpu": 1}))
    task.node_name, task.status = "n1", "Running"  # type: ignore[assignment]
    job = JobInfo.from_podgroup(PodGroup("pg", "ns", min_member=1), tasks=[task])
    with pytest.raises(SchedulingError, match="task ns/t: status 'Running' is not a TaskStatus"):
        cache.add_job(job)
    assert not cache.jobs and used_cpu(cache, "n1") == 0


_PREEMPTION = """
version: 1
config:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{name: priority}, {name: gang, enablePreemptable: false}]
  - plugins: [{name: predicates}, {name: proportion}]
priorityClasses: [{name: high, value: 1000}, {name: low, value: 1}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 1}}
jobs:
- {name: l1, namespace: ns, minMember: 1, priorityClassName: low, phase: Running}
- {name: l2, namespace: ns, minMember: 1, priorityClassName: low, phase: Running}
- {name: w, namespace: ns, minMember: 1, priorityClassName: high}
tasks:
- {name: l1-0, namespace: ns, job: l1, priorityClassName: low, requests: {cpu: 1}, node: n1,
   phase: Running}
- {name: l2-0, namespace: ns, job: l2, priorityClassName: low, requests: {cpu: 1}, node: n2,
   phase: Running}
- {name: w-0, namespace: ns, job: w, priorityClassName: high, requests: {cpu: 1}}
"""


@pytest.mark.parametrize("in_bulk", [False, True])
def test_a_preemptor_whose_job_status_the_host_refused_is_not_nominated(in_bulk: bool) -> None:
    """Volcano nominates in RecordJobStatusEvent, which UpdateJobStatus skips when the
    pod group's update fails: the preemptor stays free to preempt next cycle."""
    scenario = parse_scenario(yaml.safe_load(_PREEMPTION), source="<test>")
    cache = scenario.build_cache()
    refusing: type[MemoryCache] = _RefusingStatusOf
    if in_bulk:
        def update_job_statuses(self: MemoryCache, jobs: Any) -> None:
            raise ConnectionError("apiserver down")
        refusing = type("RefusingInBulk", (_RefusingStatusOf,),
                        {"update_job_statuses": update_job_statuses})
    else:
        refusing = type("RefusingOneByOne", (_RefusingStatusOf,), {"update_job_statuses": None})
    cache.__class__ = refusing  # the scenario's cluster, behind a host that refuses ns/w
    ssn = Scheduler(cache, scenario.configuration).run_once()
    assert [e.task for e in cache.evictions] == ["ns/l1-0"]
    assert "ns/w" in {e.obj for e in ssn.host_errors}
    assert cache.nominations == {}


class _NominatingOnTheTask(MemoryCache):
    """A host that also writes the nomination on the task object it is handed."""

    def nominate(self, task: TaskInfo, node_name: str) -> None:
        super().nominate(task, node_name)
        task.nominated_node = node_name


@pytest.mark.parametrize("host", ["memory", "writes-on-task-in-bulk", "writes-on-task-one-by-one"])
def test_a_nomination_alone_records_the_failed_scheduling_event(host: str) -> None:
    """Volcano's taskUnschedulable records FailedScheduling when the pod's condition or
    its nominated node changes: a pod already saying it waits for n1 is told again when
    it is nominated there, whatever order the host is told things in."""
    document = yaml.safe_load(_PREEMPTION)  # n1 alone, its cpu all taken by l1-0
    document["nodes"] = [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi",
                                                        "pods": 10}}]
    document["jobs"] = [j for j in document["jobs"] if j["name"] != "l2"]
    document["tasks"] = [t for t in document["tasks"] if t["job"] != "l2"]
    document["tasks"][0]["requests"] = {"cpu": 4}
    scenario = parse_scenario(document, source="<test>")
    cache = scenario.build_cache()
    if host != "memory":
        cache.__class__ = _NominatingOnTheTask if host.endswith("in-bulk") else type(
            "OneByOne", (_NominatingOnTheTask,), {"update_job_statuses": None})
    waiting = cache.jobs["ns/w"].tasks["ns/w-0"]
    said = ("Pod ns/w-0 can possibly be assigned to n1, once resource is released and "
            "minAvailable is satisfied")
    cache.set_scheduling_condition(waiting, "Unschedulable", said)
    ssn = Scheduler(cache, scenario.configuration).run_once()
    assert cache.nominations == {"ns/w-0": "n1"}
    assert [(e.reason, e.message) for e in ssn.events if e.object == "ns/w-0"] == [
        ("FailedScheduling", said)]
    # Nominated there already, the same condition again: nothing new to say.
    ssn = Scheduler(cache, scenario.configuration).run_once()
    assert [e for e in ssn.events if e.object == "ns/w-0"] == []


def test_a_pod_id_another_job_holds_is_refused() -> None:
    """Two jobs holding pods of one id would see both bound (on two nodes)."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("a", 1, 1))
    twin = JobInfo.from_podgroup(PodGroup("b", "ns", min_member=1))
    twin.add_task(TaskInfo.create("ns", "a-0", twin.uid, Resource.from_mapping({"cpu": 1})))
    with pytest.raises(SchedulingError, match="task ns/a-0: job ns/a holds a pod of that id"):
        cache.add_job(twin)
    assert "ns/b" not in cache.jobs
    cache.add_job(JobInfo.from_podgroup(PodGroup("b", "ns", min_member=1)))
    with pytest.raises(SchedulingError, match="task ns/a-0: job ns/a holds a pod of that id"):
        cache.add_task(TaskInfo.create("ns", "a-0", "ns/b", Resource.from_mapping({"cpu": 1})))
    assert not cache.jobs["ns/b"].tasks
    cache.delete_job("ns/a")
    cache.add_job(_job_with("b2", "a-0"))
    assert "ns/a-0" in cache.jobs["ns/b2"].tasks


def _job_with(name: str, task: str) -> JobInfo:
    job = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=1))
    job.add_task(TaskInfo.create("ns", task, job.uid, Resource.from_mapping({"cpu": 1})))
    return job


def test_a_bind_where_a_foreign_pod_of_that_id_runs_is_refused_and_changes_nothing() -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(_job_with("j", "t"))
    foreign = TaskInfo.create("ns", "t", "", Resource.from_mapping({"cpu": 1}))
    foreign.node_name, foreign.status = "n1", TaskStatus.RUNNING
    with pytest.raises(SchedulingError, match="task ns/t: job ns/j holds a pod of that id"):
        cache.add_foreign_pod(foreign)
    # A host that slipped it in anyway (its own node bookkeeping): the bind is refused
    # before anything changes.
    cache.nodes["n1"].add_task(foreign)
    task = cache.jobs["ns/j"].tasks["ns/t"]
    with pytest.raises(SchedulingError, match="task ns/t: node n1 holds a pod of that id"):
        cache.bind(task.clone(), "n1")
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    assert cache.binds == []


def test_a_claim_that_is_no_pod_claim_is_refused_before_anything_is_stored() -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    job = JobInfo.from_podgroup(PodGroup("j", "ns", min_member=1))
    placed = TaskInfo.create("ns", "a", job.uid, Resource.from_mapping({"cpu": 1}))
    placed.node_name, placed.status = "n1", TaskStatus.RUNNING
    claiming = TaskInfo.create("ns", "b", job.uid, Resource.from_mapping({"cpu": 1}))
    claiming.resource_claims = ({"name": "gpu", "resourceClaimName": "shared"},)  # type: ignore[assignment]
    job.add_task(placed)
    job.add_task(claiming)
    with pytest.raises(SchedulingError, match=r"task ns/b: resource_claims\[0\] is .* not a "
                       "PodClaim"):
        cache.add_job(job)
    assert "ns/j" not in cache.jobs and used_cpu(cache, "n1") == 0


def _bad_job(field: str, value: Any) -> JobInfo:
    job = gang("bad", 1, 1)
    task = job.tasks["ns/bad-0"]
    if field == "min_member":
        job.podgroup.min_member = value
    elif field.startswith("podgroup."):
        setattr(job.podgroup, field.removeprefix("podgroup."), value)
    elif field == "task_min_available":
        job.task_min_available = value
    elif field == "job_creation_time":
        job.creation_time = value
    else:
        setattr(task, field, value)
    return job


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.add_node(NodeInfo.create("n2", Resource.from_mapping({"cpu": 1}),
                                          taints=("gpu=true:NoSchedule",))),  # type: ignore[arg-type]
     # The remedy names a constructor that exists (there is no Taint.parse).
     r"node n2: taints\[0\] is 'gpu=true:NoSchedule', not a Taint "
     r"\(batchsched\.kube\.taints\.Taint\(key, value, effect\)\)"),
    (lambda c: c.add_node(NodeInfo.create("n2", Resource.from_mapping({"cpu": 1}),
                                          labels={"zone": 1})),  # type: ignore[dict-item]
     "node n2: labels is .* not a mapping of text to text"),
    (lambda c: c.add_priority_class(PriorityClass("high", "1000")),  # type: ignore[arg-type]
     "priority class high: value is '1000', not a whole number"),
    (lambda c: c.add_priority_class(PriorityClass("none", None)),  # type: ignore[arg-type]
     "priority class none: value is None"),
    (lambda c: c.add_queue(QueueInfo("q", weight="2")),  # type: ignore[arg-type]
     "queue q: weight is '2', not a whole number >= 0"),
    (lambda c: c.add_job(_bad_job("min_member", "2")),
     "job ns/bad: podgroup.min_member is '2'"),
    (lambda c: c.add_job(_bad_job("job_creation_time", "2024-01-01T00:00:00Z")),
     "job ns/bad: creation_time is '2024-01-01T00:00:00Z', not seconds"),
    (lambda c: c.add_job(_bad_job("creation_time", "yesterday")),
     "task ns/bad-0: creation_time is 'yesterday', not seconds"),
    (lambda c: c.add_job(_bad_job("priority", "hi")),
     "task ns/bad-0: priority is 'hi', not a whole number"),
    (lambda c: c.add_job(_bad_job("node_selector", ["zone=a"])),
     "task ns/bad-0: node_selector is .* not a mapping of text to text"),
    (lambda c: c.add_queue(QueueInfo("q", capability={"cpu": 2})),  # type: ignore[arg-type]
     "queue q: capability is .* not a Resource"),
    (lambda c: c.add_queue(QueueInfo("q", guarantee={"cpu": 2})),  # type: ignore[arg-type]
     "queue q: guarantee is .* not a Resource"),
    (lambda c: c.add_queue(QueueInfo("q", priority="1")),  # type: ignore[arg-type]
     "queue q: priority is '1', not a whole number"),
    (lambda c: c.add_queue(QueueInfo("q", annotations=None)),  # type: ignore[arg-type]
     "queue q: annotations is None, not a mapping of text to text"),
    (lambda c: c.add_job(_bad_job("podgroup.min_resources", {"cpu": 1})),
     "job ns/bad: podgroup.min_resources is .* not a Resource"),
    (lambda c: c.add_job(_bad_job("podgroup.annotations", None)),
     "job ns/bad: podgroup.annotations is None, not a mapping of text to text"),
    (lambda c: c.add_job(_bad_job("podgroup.labels", {"a": 1})),
     "job ns/bad: podgroup.labels is .* not a mapping of text to text"),
    (lambda c: c.add_job(_bad_job("task_min_available", {"worker": "2"})),
     "job ns/bad: task_min_available is .* not a mapping of role to a whole number >= 0"),
    (lambda c: c.add_job(_bad_job("tolerations", ({"key": "k", "operator": "Exists"},))),
     r"task ns/bad-0: tolerations\[0\] is .* not a Toleration"),
    (lambda c: c.add_job(_bad_job("host_ports", ("8080",))),
     r"task ns/bad-0: host_ports\[0\] is '8080', not a port number or HostPort"),
    (lambda c: c.add_job(_bad_job("topology_spread", ({"maxSkew": 1},))),
     r"task ns/bad-0: topology_spread\[0\] is .* not a SpreadConstraint"),
    (lambda c: c.add_job(_bad_job("annotations", None)),
     "task ns/bad-0: annotations is None, not a mapping of text to text"),
    # Empty, of the wrong type: the door's fast path for empty fields lets none through.
    (lambda c: c.add_job(_bad_job("labels", [])),
     r"task ns/bad-0: labels is \[\], not a mapping of text to text"),
    (lambda c: c.add_job(_bad_job("tolerations", "")),
     "task ns/bad-0: tolerations is '', not a tuple"),
    (lambda c: c.add_job(_bad_job("images", None)),
     "task ns/bad-0: images is None, not a tuple"),
    (lambda c: c.add_job(_bad_job("creation_time", True)),
     "task ns/bad-0: creation_time is True, not seconds"),
    (lambda c: c.add_job(_bad_job("node_name", "n1")),
     "task ns/bad-0: status Pending on node 'n1'"),
    (lambda c: c.annotate_node("n1", "volcano.sh/oversubscription-cpu", 500),
     "node n1: annotation 'volcano.sh/oversubscription-cpu' is 500, not text"),
    (lambda c: c.task_started("ns/run", "ns/run-0", at="yesterday"),
     "task ns/run-0: started at 'yesterday', not a finite number"),
    (lambda c: c.task_started("ns/run", "ns/run-0", at=float("nan")),
     "task ns/run-0: started at nan, not a finite number"),
])
def test_the_cache_refuses_fields_of_the_wrong_type_at_the_door(call: Any, message: str) -> None:
    """Accepted, each would fail every later session without naming the object."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    running = gang("run", 1, 1)
    placed = running.tasks["ns/run-0"]
    placed.node_name, placed.status = "n1", TaskStatus.BOUND
    cache.add_job(running)
    before = (dict(cache.nodes), dict(cache.jobs), dict(cache.queues),
              dict(cache.priority_classes), dict(cache.nodes["n1"].annotations),
              placed.status)
    with pytest.raises(SchedulingError, match=message):
        call(cache)
    assert (dict(cache.nodes), dict(cache.jobs), dict(cache.queues),
            dict(cache.priority_classes), dict(cache.nodes["n1"].annotations),
            placed.status) == before
    Scheduler(cache).run_once()


def test_a_pod_id_is_free_again_once_its_pod_went_with_its_node_or_job() -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    foreign = TaskInfo.create("ns", "p", "", Resource.from_mapping({"cpu": 1}))
    foreign.node_name, foreign.status = "n1", TaskStatus.RUNNING
    cache.add_foreign_pod(foreign)
    cache.delete_node("n1")
    cache.add_node(node("n1"))
    cache.add_foreign_pod(foreign)  # the old pod went with the node
    cache.add_job(_job_with("j", "q"))
    cache.jobs.pop("ns/j")  # a host's own bookkeeping, not delete_job
    cache.add_job(_job_with("k", "q"))
    assert "ns/q" in cache.jobs["ns/k"].tasks


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.add_job(None), "job: None is not a JobInfo"),
    (lambda c: c.add_task({"name": "t"}), "task: .* is not a TaskInfo"),
    (lambda c: c.add_node("n2"), "node: 'n2' is not a NodeInfo"),
    (lambda c: c.add_queue(None), "queue: None is not a QueueInfo"),
    (lambda c: c.add_priority_class(None), "priority class: None is not a PriorityClass"),
    (lambda c: c.bind(None, "n1"), "task: None is not a TaskInfo"),
    (lambda c: c.evict("ns/t", "why"), "task: 'ns/t' is not a TaskInfo"),
    (lambda c: c.delete_task(None), "task: None is not a TaskInfo"),
])
def test_an_argument_of_the_wrong_kind_is_named(call: Any, message: str) -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    with pytest.raises(SchedulingError, match=message):
        call(cache)
    assert list(cache.nodes) == ["n1"] and not cache.jobs


def test_the_pods_of_a_deleted_node_come_back_as_new_pods() -> None:
    """The node went, and its pods with it: what returns to Pending is a new pod, not
    the old one's deletion, eviction mark or start time (a pod being deleted is never
    scheduled again as such)."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n0"))
    cache.add_node(node("n1"))
    job = JobInfo.from_podgroup(PodGroup("a", "ns", min_member=1))
    for k, status in enumerate((TaskStatus.RELEASING, TaskStatus.RUNNING)):
        task = TaskInfo.create("ns", f"a-{k}", job.uid, Resource.from_mapping({"cpu": 1}))
        task.node_name, task.status, task.start_time = "n0", status, 5.0
        task.deleting = task.preempted_by_scheduler = status is TaskStatus.RELEASING
        job.add_task(task)
    cache.add_job(job)
    cache.delete_node("n0")
    for task in cache.jobs["ns/a"].tasks.values():
        assert (task.status, task.node_name, task.deleting, task.preempted_by_scheduler,
                task.start_time) == (TaskStatus.PENDING, "", False, False, None)
    cache.jobs["ns/a"].check_invariants()


class ReplacedMeanwhile(MemoryCache):
    """The pod is deleted and created again (its spec changed) between the session's
    snapshot and its bind, as an informer thread may do."""

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        job = self.jobs[task.job]
        old = job.tasks[task.uid]
        self.delete_task(old)
        new = TaskInfo.create("ns", old.name, job.uid, old.resreq,
                              node_selector={"zone": "b"}, creation_time=old.creation_time + 1)
        self.add_task(new)
        return super().bind(task, node_name)


class PodGroupUpdatedMeanwhile(MemoryCache):
    """The pod group is updated (delete_job and add_job, its pods as they were) between
    the snapshot and the bind: the same pods, whose binds go through."""

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        job = self.jobs[task.job]
        if not job.podgroup.annotations:
            self.delete_job(job.uid)
            job.podgroup.annotations = {"updated": "yes"}
            for held in job.tasks.values():
                held.node_name, held.status = "", TaskStatus.PENDING
            self.add_job(job)
        return super().bind(task, node_name)


def test_a_bind_of_a_pod_replaced_since_the_snapshot_is_refused() -> None:
    cache = ReplacedMeanwhile(now=0.0)
    cache.add_node(node("na", zone="a"))
    cache.add_job(gang("p", 1, 1))
    Scheduler(cache).run_once()
    task = cache.jobs["ns/p"].tasks["ns/p-0"]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    assert used_cpu(cache, "na") == 0


def test_a_bind_after_a_pod_group_update_goes_through() -> None:
    cache = PodGroupUpdatedMeanwhile(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("g", 2, 2))
    Scheduler(cache).run_once()
    assert sorted(b.task for b in cache.binds) == ["ns/g-0", "ns/g-1"]


def test_deleting_a_pod_as_another_existing_job_s_is_refused_and_changes_nothing() -> None:
    """The pod named with a job that exists but does not hold it: refused, as with a
    job that does not exist; before, the pod left its node and stayed in its job."""
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("a", 1, 1))
    cache.add_job(gang("b", 1, 1, cpu=2))
    Scheduler(cache).run_once()
    stranger = TaskInfo.create("ns", "a-0", "ns/b", Resource.from_mapping({"cpu": 1}))
    with pytest.raises(SchedulingError, match="job 'ns/b' does not hold it; job ns/a does"):
        cache.delete_task(stranger)
    assert "ns/a-0" in cache.nodes["n1"].tasks and "ns/a-0" in cache.jobs["ns/a"].tasks
    assert used_cpu(cache, "n1") == 3000


def test_a_foreign_pod_leaves_the_node_the_cache_has_it_on() -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    dns = TaskInfo.create("kube-system", "dns", "", Resource.from_mapping({"cpu": 3}),
                          status=TaskStatus.RUNNING, node_name="n1")
    cache.add_foreign_pod(dns)
    cache.delete_task(TaskInfo.create("kube-system", "dns", "", Resource.from_mapping({})))
    assert used_cpu(cache, "n1") == 0 and not cache.nodes["n1"].tasks
    cache.add_foreign_pod(dns)  # its id is free again


def test_a_pod_group_updated_through_delete_job_and_add_job_keeps_its_nominations() -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(node("n1"))
    cache.add_job(gang("g", 1, 1))
    (task,) = cache.jobs["ns/g"].tasks.values()
    cache.nominate(task, "n1")
    job = cache.jobs["ns/g"]
    cache.delete_job("ns/g")
    cache.add_job(job)
    assert cache.nominations == {"ns/g-0": "n1"}
    cache.delete_job("ns/g")
    cache.snapshot()  # a job deleted for good: its nominations are not kept for later
    cache.add_job(job)
    assert cache.nominations == {}


def test_a_bind_on_gpus_taken_since_the_snapshot_is_refused() -> None:
    """The host is told the GPUs the session chose: they must still be free, not
    swapped for others behind the host's back."""
    told: dict[str, tuple[int, ...]] = {}

    def binder(task: TaskInfo, node_name: str) -> bool:
        told[task.uid] = task.gpu_devices
        return True

    class Host(MemoryCache):
        meanwhile: Any = None

        def snapshot(self) -> ClusterInfo:
            taken = super().snapshot()
            if self.meanwhile is not None:
                self.meanwhile()
                self.meanwhile = None
            return taken

    cache = Host(now=0.0, binder=binder)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping(
        {"cpu": 8, "memory": "8Gi", "pods": 10, "nvidia.com/gpu": 2})))
    running = JobInfo.from_podgroup(PodGroup("a", "ns", min_member=1))
    running.add_task(TaskInfo.create("ns", "a-0", running.uid, Resource.from_mapping(
        {"cpu": 1, "nvidia.com/gpu": 1}), status=TaskStatus.RUNNING, node_name="n1",
        gpu_devices=(1,)))
    cache.add_job(running)
    waiting = JobInfo.from_podgroup(PodGroup("t", "ns", min_member=1))
    waiting.add_task(TaskInfo.create("ns", "t-0", waiting.uid, Resource.from_mapping(
        {"cpu": 1, "nvidia.com/gpu": 1})))
    cache.add_job(waiting)

    def gpu_0_taken() -> None:
        cache.task_ended("ns/a", "ns/a-0")
        cache.add_foreign_pod(TaskInfo.create(
            "other", "b", "", Resource.from_mapping({"cpu": 1, "nvidia.com/gpu": 1}),
            status=TaskStatus.RUNNING, node_name="n1", gpu_devices=(0,)))

    cache.meanwhile = gpu_0_taken
    Scheduler(cache).run_once()
    assert told == {} and cache.binds == []
    Scheduler(cache).run_once()  # the next cycle decides again, on GPU 1
    assert told == {"ns/t-0": (1,)}


def test_a_node_added_back_after_delete_node_comes_back_empty() -> None:
    """The host adds back the node object it gave before: the pods delete_node returned
    to Pending are not on it any more (they were ghosts, and the pod could never be
    placed again)."""
    cache = MemoryCache(now=0.0)
    node = NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "memory": "8Gi",
                                                         "pods": 10}))
    cache.add_node(node)
    job = JobInfo.from_podgroup(PodGroup("a", "ns", min_member=1))
    job.add_task(TaskInfo.create("ns", "a-0", job.uid, Resource.from_mapping({"cpu": 2}),
                                 status=TaskStatus.RUNNING, node_name="n1"))
    cache.add_job(job)
    cache.delete_node("n1")
    assert not node.tasks and node.used.milli_cpu == 0
    cache.add_node(node)
    Scheduler(cache).run_once()
    assert [(bind.task, bind.node) for bind in cache.binds] == [("ns/a-0", "n1")]
    cache.nodes["n1"].check_invariants()


@pytest.mark.parametrize(("status", "message"), [
    ("Succeeded", "status is 'Succeeded', not a TaskStatus"),
    (TaskStatus.RUNNING, "Running is not a completed status"),
])
def test_task_ended_with_a_status_that_is_no_ending_names_it(status: Any, message: str) -> None:
    cache = MemoryCache(now=0.0)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("a", "ns", min_member=1))
    job.add_task(TaskInfo.create("ns", "a-0", job.uid, Resource.from_mapping({"cpu": 2}),
                                 status=TaskStatus.RUNNING, node_name="n1"))
    cache.add_job(job)
    with pytest.raises(SchedulingError, match=f"task ns/a-0: {message}"):
        cache.task_ended("ns/a", "ns/a-0", status)
    assert cache.jobs["ns/a"].tasks["ns/a-0"].status is TaskStatus.RUNNING


def test_update_pod_group_keeps_the_pods_and_changes_what_the_job_reads() -> None:
    import attrs

    cache = MemoryCache(now=0.0)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("a", "ns", min_member=1))
    for i, status in enumerate((TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.PENDING)):
        job.add_task(TaskInfo.create("ns", f"a-{i}", job.uid, Resource.from_mapping({"cpu": 1}),
                                     status=status, node_name="n1" if i == 0 else ""))
    cache.add_job(job)
    cache.update_pod_group(attrs.evolve(job.podgroup, min_member=3,
                                        annotations={"volcano.sh/preemptable": "true"}))
    held = cache.jobs["ns/a"]
    assert (held.min_available, held.preemptable) == (3, True)
    assert held.tasks["ns/a-0"].node_name == "n1" and "ns/a-0" in cache.nodes["n1"].tasks
    ssn = Scheduler(cache).run_once()
    assert ssn.jobs["ns/a"].min_available == 3  # the session reads the new minimum
    with pytest.raises(SchedulingError, match=r"podgroup\.min_member is -1"):
        cache.update_pod_group(attrs.evolve(job.podgroup, min_member=-1))
    with pytest.raises(SchedulingError, match="pod group ns/b: the cache holds no such job"):
        cache.update_pod_group(PodGroup("b", "ns"))
    assert cache.jobs["ns/a"].min_available == 3


@pytest.mark.parametrize(("setter", "what"), [
    ("set_device_class", "device class"), ("set_resource_slice", "resource slice"),
    ("set_resource_claim", "resource claim"),
    ("set_claim_template", "resource claim template")])
def test_a_dra_object_given_as_a_document_is_refused_by_name(setter: str, what: str) -> None:
    # The objects are built with batchsched.kube.dra.documents.parse_*.
    cache = MemoryCache(now=0.0)
    with pytest.raises(SchedulingError, match=f"^{what}: .* is not a "):
        getattr(cache, setter)({"metadata": {"name": "x"}})


def test_a_session_open_across_update_pod_group_writes_no_stale_status() -> None:
    import attrs

    from batchsched.api.types import PodGroupPhase
    from batchsched.framework.session import Session

    cache = MemoryCache(now=0.0)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 4, "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("a", "ns", min_member=1))
    job.add_task(TaskInfo.create("ns", "a-0", job.uid, Resource.from_mapping({"cpu": 1}),
                                 status=TaskStatus.RUNNING, node_name="n1"))
    cache.add_job(job)
    scheduler = Scheduler(cache)
    scheduler.run_once()
    assert cache.jobs["ns/a"].podgroup.phase is PodGroupPhase.RUNNING
    ssn = Session.open(cache, scheduler.configuration, registry=scheduler.registry)
    cache.update_pod_group(attrs.evolve(cache.jobs["ns/a"].podgroup, min_member=5,
                                        phase=PodGroupPhase.PENDING, running=0))
    ssn.close()  # Volcano's write conflicts on the pod group's new version
    assert (cache.jobs["ns/a"].podgroup.phase, cache.jobs["ns/a"].podgroup.running) == (
        PodGroupPhase.PENDING, 0)


def test_set_dra_objects_refuses_a_wrong_object_before_setting_any() -> None:
    from batchsched.kube.dra.documents import parse_device_class
    from batchsched.kube.dra.scheduling import DraObjects

    cache = MemoryCache(now=0.0)
    gpu = parse_device_class({"name": "gpu", "selectors": []})
    with pytest.raises(SchedulingError, match=r"resource slice: .* is not a ResourceSlice"):
        cache.set_dra_objects(DraObjects({"gpu": gpu}, ({"name": "s1"},), {}, {}))  # type: ignore[arg-type]
    assert not cache.device_classes and not cache.resource_slices


def test_the_root_queue_and_a_parent_queue_cannot_be_deleted() -> None:
    # Volcano's admission webhook refuses both; the hierarchical plugins refused the
    # whole tree afterwards (a root missing, children of a missing parent).
    cache = MemoryCache()
    cache.add_queue(QueueInfo("team", parent="root"))
    cache.add_queue(QueueInfo("dev", parent="team"))
    with pytest.raises(SchedulingError, match="queue root: the root queue cannot be deleted"):
        cache.delete_queue("root")
    with pytest.raises(SchedulingError, match="queue team: cannot be deleted while it has "
                                              "child queues: dev"):
        cache.delete_queue("team")
    assert {"root", "team", "dev"} <= set(cache.queues)
    cache.delete_queue("dev")
    cache.delete_queue("team")
    cache.delete_queue("nothing")
    assert "team" not in cache.queues and "root" in cache.queues


def _job(name: str, **podgroup: Any) -> JobInfo:
    return JobInfo.from_podgroup(PodGroup(name, "default", min_member=1, **podgroup), tasks=[
        TaskInfo.create("default", f"{name}-0", f"default/{name}", Resource(1000, 2**30))])


def _changed(obj: Any, field: str, value: Any) -> Any:
    """``obj`` (a job: its one task) with ``field`` set afterwards, as a host may."""
    target = next(iter(obj.tasks.values())) if isinstance(obj, JobInfo) else obj
    setattr(target, field, value)
    return obj


@pytest.mark.parametrize(("bad", "words"), [
    # What a Kubernetes client hands over for a missing list (None) or a timestamp
    # (a datetime): each went in and then failed every later cycle, for every job.
    (lambda c: c.add_job(_job("x", conditions=None)),
     "job default/x: podgroup.conditions is None, not a tuple"),
    (lambda c: c.add_job(_job("x", conditions=[{"type": "Scheduled"}])),
     "job default/x: podgroup.conditions[0] is {'type': 'Scheduled'}, not a PodGroupCondition"),
    (lambda c: c.add_job(_job("x", sub_group_policies=None)),
     "job default/x: podgroup.sub_group_policies is None, not a tuple"),
    (lambda c: c.add_job(_job("x", network_topology={"mode": "hard"})),
     "job default/x: podgroup.network_topology is {'mode': 'hard'}, not a NetworkTopology"),
    (lambda c: c.update_pod_group(PodGroup("a", "default", conditions=None)),  # type: ignore[arg-type]
     "job default/a: podgroup.conditions is None"),
    (lambda c: c.add_queue(QueueInfo("q", creation_time=None)),  # type: ignore[arg-type]
     "queue q: creation_time is None, not seconds"),
    (lambda c: c.add_job(JobInfo.from_podgroup(PodGroup("x", "default"), tasks=[
        TaskInfo.create("default", "x-0", "default/x", Resource(1000, 2**30), images=None)])),
     "task default/x-0: images is None, not a tuple"),
    (lambda c: c.add_job(_changed(_job("x"), "resreq", {"cpu": 1})),
     "task default/x-0: resreq is {'cpu': 1}, not a Resource"),
    (lambda c: c.add_node(attrs.evolve(NodeInfo.create("n9", Resource(1000, 2**30)),
                                       taints=None)),
     "node n9: taints is None, not a tuple"),
    (lambda c: c.add_node(_changed(NodeInfo.create("n9", Resource(1000, 2**30)),
                                   "allocatable", {"cpu": 1})),
     "node n9: allocatable is {'cpu': 1}, not a Resource"),
    (lambda c: c.set_scheduling_gates("default/a", "default/a-0", None),
     "task default/a-0: scheduling gates None are not a list of gate names"),
    (lambda c: c.set_hyper_node({"name": "h"}), "hypernode: {'name': 'h'} is not a HyperNode"),
    (lambda c: c.set_node_shard({"name": "s"}), "node shard: {'name': 's'} is not a NodeShard"),
    (lambda c: c.set_node_shard(NodeShard("mine", "n1")),  # type: ignore[arg-type]
     "node shard mine: nodes_desired is 'n1', not a tuple"),
    (lambda c: c.delete_job(["default/a"]), "job uid: ['default/a'] is not a str"),
])
def test_what_would_fail_every_later_cycle_is_refused_at_the_door(
        bad: Any, words: str) -> None:
    cache = MemoryCache()
    cache.add_node(NodeInfo.create("n1", Resource(4000, 4 * 2**30, {"pods": 10})))
    cache.add_job(_job("a"))
    before = (dict(cache.jobs), dict(cache.queues), dict(cache.nodes),
              dict(cache.hyper_nodes), dict(cache.node_shards))
    with pytest.raises(SchedulingError, match=re.escape(words)):
        bad(cache)
    assert (dict(cache.jobs), dict(cache.queues), dict(cache.nodes),
            dict(cache.hyper_nodes), dict(cache.node_shards)) == before
    Scheduler(cache).run_once()
    assert {b.task for b in cache.binds} == {"default/a-0"}


def test_the_door_checks_take_what_always_worked() -> None:
    """numpy numbers for a queue's creation time, sets of images and taints: accepted
    before the checks came, accepted after."""
    import numpy as np

    from batchsched.kube.taints import Taint

    cache = MemoryCache()
    cache.add_queue(QueueInfo("q", creation_time=np.int64(1_700_000_000)))  # type: ignore[arg-type]
    node = NodeInfo.create("n1", Resource(4000, 4 * 2**30, {"pods": 10}))
    node.taints = frozenset({Taint("k", "v", "NoSchedule"),  # type: ignore[assignment]
                             Taint("a", "v", "NoSchedule")})
    cache.add_node(node)
    job = _changed(_job("x"), "images", frozenset({"nginx:1.25", "busybox"}))
    cache.add_job(job)
    assert "default/x" in cache.jobs and "q" in cache.queues and "n1" in cache.nodes
    # Kept in a fixed order, whatever the hash seed: messages name the first taint.
    assert [t.key for t in cache.nodes["n1"].taints] == ["a", "k"]
    assert cache.jobs["default/x"].tasks["default/x-0"].images == ("busybox", "nginx:1.25")
