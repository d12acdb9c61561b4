"""Statement: decisions change the session at once; discard restores it exactly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchsched.api import ClusterInfo, JobInfo, NodeInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.conf import SchedulerConfiguration
from batchsched.errors import PluginError, SchedulingError
from batchsched.framework import Event, EventHandler, Session, Statement
from batchsched.framework.registry import Registry

REGISTRY = Registry(autoload=False)
EMPTY = SchedulerConfiguration(actions=(), tiers=())


def cluster() -> ClusterInfo:
    nodes = {f"n{i}": NodeInfo.create(f"n{i}", Resource.from_mapping(
        {"cpu": 4, "memory": "8Gi", "pods": 10})) for i in range(3)}
    jobs = {}
    for j in range(2):
        job = JobInfo.from_podgroup(PodGroup(f"pg{j}", "ns", min_member=1))
        for t in range(3):
            running = t == 0
            task = TaskInfo.create("ns", f"j{j}-t{t}", job.uid,
                                   Resource.from_mapping({"cpu": 1, "memory": "1Gi"}),
                                   status=TaskStatus.RUNNING if running else TaskStatus.PENDING,
                                   node_name=f"n{j}" if running else "")
            job.add_task(task)
            if running:
                nodes[f"n{j}"].add_task(task)
        jobs[job.uid] = job
    return ClusterInfo(nodes=nodes, jobs=jobs, now=1.0)


def fingerprint(ssn: Session) -> Any:
    jobs = {
        uid: (sorted((t.uid, t.status, t.node_name) for t in job.tasks.values()),
              job.allocated.to_dict(), job.total_request.to_dict(),
              sorted((s, sorted(ix)) for s, ix in job.task_status_index.items()))
        for uid, job in ssn.jobs.items()
    }
    nodes = {
        name: (n.idle.to_dict(), n.used.to_dict(), n.releasing.to_dict(),
               n.pipelined.to_dict(), sorted((t.uid, t.status) for t in n.tasks.values()))
        for name, n in ssn.nodes.items()
    }
    return jobs, nodes


class Share:
    """A plugin-like counter kept current by event handlers."""

    def __init__(self) -> None:
        self.placed = 0

    def handler(self) -> EventHandler:
        def allocate(event: Event) -> None:
            self.placed += 1

        def deallocate(event: Event) -> None:
            self.placed -= 1
        return EventHandler(allocate=allocate, deallocate=deallocate, plugin="share")


def open_session() -> tuple[Session, Share]:
    ssn = Session.open(cluster(), EMPTY, registry=REGISTRY)
    share = Share()
    ssn.add_event_handler(share.handler())
    return ssn, share


op = st.tuples(st.sampled_from(["allocate", "pipeline", "evict"]), st.integers(0, 5),
               st.integers(0, 2))


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=25))
def test_discard_restores_the_snapshot_exactly(ops: list[tuple[str, int, int]]) -> None:
    ssn, share = open_session()
    before = fingerprint(ssn)
    stmt = Statement(ssn)
    tasks = [t for job in ssn.jobs.values()
             for t in sorted(job.tasks.values(), key=lambda t: t.uid)]
    for kind, t, n in ops:
        task, node = tasks[t], ssn.node_list[n]
        try:
            if kind == "evict" and task.status == TaskStatus.RUNNING:
                stmt.evict(task, "test")
            elif kind == "allocate" and task.status == TaskStatus.PENDING:
                stmt.allocate(task, node)
            elif kind == "pipeline" and task.status == TaskStatus.PENDING:
                stmt.pipeline(task, node.name)
        except SchedulingError:
            pass
        for job in ssn.jobs.values():
            job.check_invariants()
        for nd in ssn.nodes.values():
            nd.check_invariants()
    stmt.discard()
    assert fingerprint(ssn) == before
    assert share.placed == 0


def test_allocate_changes_the_session_at_once_and_commit_binds() -> None:
    ssn, share = open_session()
    job = ssn.jobs["ns/pg0"]
    task = job.tasks["ns/j0-t1"]
    stmt = Statement(ssn)
    stmt.allocate(task, "n2")
    assert task.status == TaskStatus.ALLOCATED and task.node_name == "n2"
    assert ssn.nodes["n2"].used.milli_cpu == 1000
    assert share.placed == 1
    stmt.commit()
    assert task.status == TaskStatus.BINDING
    assert not stmt.operations


def test_a_closed_session_takes_no_statement_and_an_open_one_commits_nothing() -> None:
    """Its statuses went to the cache at close: a bind decided on it afterwards would
    reach the cache after them (it used to bind)."""
    from batchsched.scenario.runner import ScenarioCache

    cache = ScenarioCache(cluster(), frozenset())
    ssn = Session.open(cache, SchedulerConfiguration(actions=(), tiers=()),
                       registry=Registry(autoload=False))
    task = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    stmt = Statement(ssn)
    stmt.allocate(task, "n2")
    ssn.close()
    with pytest.raises(SchedulingError, match=r"is closed: a commit on it"):
        stmt.commit()
    with pytest.raises(SchedulingError, match=r"is closed: a statement on it"):
        Statement(ssn)
    assert cache.binds == []


def test_unknown_node_or_job_is_a_clear_error_and_changes_nothing() -> None:
    ssn, _ = open_session()
    before = fingerprint(ssn)
    stmt = Statement(ssn)
    task = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    with pytest.raises(SchedulingError, match="no node 'n9'"):
        stmt.allocate(task, "n9")
    orphan = TaskInfo.create("ns", "orphan", "ns/missing", Resource(1000))
    with pytest.raises(SchedulingError, match="not in the session"):
        stmt.allocate(orphan, "n0")
    assert fingerprint(ssn) == before


def test_evicting_a_task_that_holds_no_node_is_refused_and_changes_nothing() -> None:
    # An action evicting twice (or a Pending task) gave the task's resources back to
    # every plugin again: drf's and proportion's shares went below what was held.
    ssn, share = open_session()
    stmt = Statement(ssn)
    running = ssn.jobs["ns/pg0"].tasks["ns/j0-t0"]
    stmt.evict(running, "first")
    after_one = fingerprint(ssn)
    with pytest.raises(SchedulingError, match="cannot evict task ns/j0-t0: it is Releasing "
                                              "on node n0, not holding its node"):
        stmt.evict(running, "again")
    pending = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    with pytest.raises(SchedulingError, match="cannot evict task ns/j0-t1: it is Pending on "
                                              "no node"):
        stmt.evict(pending, "never placed")
    assert fingerprint(ssn) == after_one
    assert share.placed == -1 and len(stmt.operations) == 1


def test_a_raising_event_handler_undoes_the_operation() -> None:
    ssn, share = open_session()
    before = fingerprint(ssn)

    def boom(event: Event) -> None:
        raise RuntimeError("broken plugin")
    ssn.add_event_handler(EventHandler(allocate=boom, plugin="broken"))
    stmt = Statement(ssn)
    with pytest.raises(PluginError, match="plugin 'broken' raised in allocate event"):
        stmt.allocate(ssn.jobs["ns/pg0"].tasks["ns/j0-t1"], "n1")
    assert fingerprint(ssn) == before
    assert share.placed == 0
    assert not stmt.operations


def test_a_refused_allocation_is_seen_by_every_handler_then_undone_for_every_handler() -> None:
    """Volcano's Statement.Allocate: every handler's allocate function runs (an event
    error is collected, not a stop), then unallocate calls every deallocate function,
    the refusing plugin's too, before the error is returned."""
    ssn, share = open_session()
    before = fingerprint(ssn)
    seen: list[tuple[str, str]] = []

    def recorder(name: str, refuse: bool = False) -> EventHandler:
        def allocate(event: Event) -> None:
            seen.append((name, "allocate"))
            if refuse:
                raise SchedulingError(f"{name} says no")

        def deallocate(event: Event) -> None:
            seen.append((name, "deallocate"))
        return EventHandler(allocate=allocate, deallocate=deallocate, plugin=name)

    for handler in (recorder("a"), recorder("b", refuse=True), recorder("c", refuse=True)):
        ssn.add_event_handler(handler)
    stmt = Statement(ssn)
    with pytest.raises(SchedulingError, match="b says no"):
        stmt.allocate(ssn.jobs["ns/pg0"].tasks["ns/j0-t1"], "n1")
    assert seen == [("a", "allocate"), ("b", "allocate"), ("c", "allocate"),
                    ("a", "deallocate"), ("b", "deallocate"), ("c", "deallocate")]
    assert fingerprint(ssn) == before
    assert share.placed == 0
    assert not stmt.operations


def test_a_deallocate_handler_raising_while_a_refusal_is_undone_is_named() -> None:
    ssn, _share = open_session()
    before = fingerprint(ssn)

    def refuse(event: Event) -> None:
        raise SchedulingError("no")

    def broken(event: Event) -> None:
        raise KeyError(event.task.uid)
    ssn.add_event_handler(EventHandler(allocate=refuse, plugin="veto"))
    ssn.add_event_handler(EventHandler(allocate=lambda event: None, deallocate=broken,
                                       plugin="counter"))
    stmt = Statement(ssn)
    with pytest.raises(PluginError, match="plugin 'counter' raised in deallocate event") as raised:
        stmt.allocate(ssn.jobs["ns/pg0"].tasks["ns/j0-t1"], "n1")
    assert (raised.value.plugin, raised.value.point) == ("counter", "deallocate event")
    assert isinstance(raised.value.__cause__, KeyError)  # the handler's own error
    assert fingerprint(ssn) == before
    assert not stmt.operations


def test_merge_moves_operations() -> None:
    ssn, _ = open_session()
    a, b = Statement(ssn), Statement(ssn)
    b.allocate(ssn.jobs["ns/pg0"].tasks["ns/j0-t1"], "n1")
    a.merge(b)
    assert len(a) == 1 and len(b) == 0


def test_deallocate_handlers_see_the_node_the_task_leaves() -> None:
    ssn, _ = open_session()
    seen: list[tuple[str, str]] = []
    ssn.add_event_handler(EventHandler(
        deallocate=lambda e: seen.append((e.task.uid, e.task.node_name)), plugin="probe"))
    stmt = Statement(ssn)
    task = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    stmt.allocate(task, "n2")
    stmt.discard()
    assert seen == [("ns/j0-t1", "n2")]
    assert task.node_name == "" and task.status == TaskStatus.PENDING


def test_a_handler_raising_during_discard_keeps_the_rest_undoable() -> None:
    ssn, share = open_session()
    before = fingerprint(ssn)
    stmt = Statement(ssn)
    tasks = [ssn.jobs["ns/pg0"].tasks[f"ns/j0-t{i}"] for i in (1, 2)]
    fail = {"armed": True}

    def flaky(event: Event) -> None:
        if fail.pop("armed", False):
            raise RuntimeError("transient")
    ssn.add_event_handler(EventHandler(deallocate=flaky, plugin="flaky"))
    after = Share()  # a plugin whose handlers come after the failing one
    ssn.add_event_handler(after.handler())
    for task in tasks:
        stmt.allocate(task, "n1")
    with pytest.raises(PluginError, match="flaky"):
        stmt.discard()
    assert len(stmt) == 1  # the first task was undone, the second is still there
    # The undo stands: the plugins before and after the failing one saw it.
    assert (share.placed, after.placed) == (1, 1)
    stmt.discard()
    assert fingerprint(ssn) == before
    assert (share.placed, after.placed) == (0, 0)


def _failing_undo(ssn: Session) -> tuple[Share, Share, dict[str, bool]]:
    """A counter, a handler whose events raise once armed, and a counter after it."""
    first, last = Share(), Share()
    ssn.add_event_handler(first.handler())
    armed = {"on": False}

    def broken(event: Event) -> None:
        if armed["on"]:
            raise RuntimeError("broken handler")
    ssn.add_event_handler(EventHandler(allocate=broken, deallocate=broken, plugin="broken"))
    ssn.add_event_handler(last.handler())
    return first, last, armed


def test_open_statements_are_undone_whole_even_when_every_undo_raises() -> None:
    ssn = Session.open(cluster(), EMPTY, registry=REGISTRY)
    before = fingerprint(ssn)
    first, last, armed = _failing_undo(ssn)
    stmt = Statement(ssn)
    for i in (1, 2):
        stmt.allocate(ssn.jobs["ns/pg0"].tasks[f"ns/j0-t{i}"], "n1")
    stmt.evict(ssn.jobs["ns/pg1"].tasks["ns/j1-t0"], "test")
    armed["on"] = True
    ssn.discard_open_statements()  # what a session does after an action raised
    assert not stmt.operations
    assert fingerprint(ssn) == before
    assert (first.placed, last.placed) == (0, 0)


def test_a_refused_bind_is_undone_for_every_plugin_even_when_one_raises() -> None:
    ssn = Session.open(cluster(), EMPTY, registry=REGISTRY)
    first, last, armed = _failing_undo(ssn)

    class Refusing:
        def bind(self, task: TaskInfo, node: str) -> bool:
            return False

        def record_event(self, event: object) -> None:
            pass
    ssn.cache = Refusing()  # type: ignore[assignment]
    stmt = Statement(ssn)
    task = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    stmt.allocate(task, "n1")
    armed["on"] = True
    with pytest.raises(PluginError, match="plugin 'broken' raised in deallocate event"):
        stmt.commit()
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")
    assert (first.placed, last.placed) == (0, 0)


class _FailingSecondBind:
    """A host whose second bind fails: refused, or raising (an unreachable API server)."""

    def __init__(self, failure: str) -> None:
        self.failure = failure
        self.binds: list[str] = []
        self.taken_back: list[str] = []
        self.events: list[str] = []

    def bind(self, task: TaskInfo, node: str) -> bool:
        self.binds.append(task.uid)
        if len(self.binds) == 2:
            if self.failure == "raise":
                raise OSError("api server unreachable")
            return False
        return True

    def evict(self, task: TaskInfo, reason: str) -> bool:
        self.taken_back.append(task.uid)
        return True

    def record_event(self, event: object) -> None:
        self.events.append(str(event))


@pytest.mark.parametrize("failure", ["refuse", "raise"])
def test_a_failed_bind_of_a_gang_below_its_minimum_rolls_back_its_other_binds(
    failure: str,
) -> None:
    ssn, share = open_session()
    job = ssn.jobs["ns/pg0"]
    job.min_available = 3  # the running task and both new ones
    host = _FailingSecondBind(failure)
    ssn.cache = host  # type: ignore[assignment]
    stmt = Statement(ssn)
    for i in (1, 2):
        stmt.allocate(job.tasks[f"ns/j0-t{i}"], "n1")
    stmt.commit()  # the failure is survived
    assert host.binds == ["ns/j0-t1", "ns/j0-t2"]
    assert host.taken_back == ["ns/j0-t1"]  # no unbind on this host: evicted
    # The evicted pod is Releasing on its node, as in the host: its room is freed once
    # it is gone, not handed out again in this session.
    assert {uid: t.status for uid, t in job.tasks.items()} == {
        "ns/j0-t0": TaskStatus.RUNNING, "ns/j0-t1": TaskStatus.RELEASING,
        "ns/j0-t2": TaskStatus.PENDING}
    assert list(ssn.nodes["n1"].tasks) == ["ns/j1-t0", "ns/j0-t1"]
    assert share.placed == 0  # the handlers saw every undo
    assert any(e.reason == "FailedScheduling" and e.object == "ns/j0-t2"
               and e.message.startswith("failed to bind to node ") for e in ssn.events)


def test_a_failed_bind_that_leaves_the_gang_ready_keeps_the_other_binds() -> None:
    ssn, _ = open_session()
    job = ssn.jobs["ns/pg0"]  # minMember 1: the running task is enough
    host = _FailingSecondBind("raise")
    ssn.cache = host  # type: ignore[assignment]
    stmt = Statement(ssn)
    for i in (1, 2):
        stmt.allocate(job.tasks[f"ns/j0-t{i}"], "n1")
    stmt.commit()
    assert host.taken_back == []
    assert job.tasks["ns/j0-t1"].status == TaskStatus.BINDING
    assert job.tasks["ns/j0-t2"].status == TaskStatus.PENDING
    assert stmt.operations == []


def test_a_clock_at_zero_is_a_clock_not_the_real_time() -> None:
    snapshot = cluster()
    snapshot.now = 0.0
    assert Session.open(snapshot, EMPTY, registry=REGISTRY).now == 0.0
    snapshot = cluster()
    snapshot.now = None
    assert Session.open(snapshot, EMPTY, registry=REGISTRY).now > 1e9


def test_a_deallocate_handler_raising_a_refusal_is_named() -> None:
    """A deallocation cannot be refused (Volcano's deallocate functions return nothing):
    a SchedulingError there is the plugin's failure, named."""
    ssn, _share = open_session()

    def refuses(event: Event) -> None:
        raise SchedulingError("no")
    ssn.add_event_handler(EventHandler(deallocate=refuses, plugin="stubborn"))
    task = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    stmt = Statement(ssn)
    stmt.allocate(task, "n1")
    with pytest.raises(PluginError, match="plugin 'stubborn' raised in deallocate event: "
                       "SchedulingError: no") as raised:
        stmt.discard()
    assert isinstance(raised.value.__cause__, SchedulingError)


def test_the_handlers_undoing_a_refused_allocation_see_the_task_pending_off_its_node() -> None:
    """Volcano's unallocate: the task is Pending and off the node (its node name still
    set) when the deallocate functions run."""
    ssn, _share = open_session()
    seen: list[tuple[str, str, bool]] = []

    def refuse(event: Event) -> None:
        raise SchedulingError("no")

    def deallocate(event: Event) -> None:
        task = event.task
        seen.append((str(task.status), task.node_name, task.uid in ssn.nodes["n1"].tasks))
    ssn.add_event_handler(EventHandler(allocate=refuse, deallocate=deallocate, plugin="veto"))
    task = ssn.jobs["ns/pg0"].tasks["ns/j0-t1"]
    with pytest.raises(SchedulingError, match="no"):
        Statement(ssn).allocate(task, "n1")
    assert seen == [("Pending", "n1", False)]
    assert (task.status, task.node_name) == (TaskStatus.PENDING, "")


def test_a_refused_placement_is_undone_for_every_plugin_even_when_one_raises() -> None:
    ssn = Session.open(cluster(), EMPTY, registry=REGISTRY)

    def refuse(event: Event) -> None:
        raise SchedulingError("no")

    def broken(event: Event) -> None:
        raise KeyError(event.task.uid)
    ssn.add_event_handler(EventHandler(allocate=refuse, plugin="veto"))
    ssn.add_event_handler(EventHandler(allocate=lambda event: None, deallocate=broken,
                                       plugin="counter"))
    last = Share()  # after the failing handler: it saw the placement, it must see it undone
    ssn.add_event_handler(last.handler())
    with pytest.raises(PluginError, match="plugin 'counter' raised in deallocate event") as err:
        Statement(ssn).allocate(ssn.jobs["ns/pg0"].tasks["ns/j0-t1"], "n1")
    assert last.placed == 0
    # Why the placement was undone is in the error's context.
    assert isinstance(err.value.__context__, SchedulingError)
    assert str(err.value.__context__) == "no"
