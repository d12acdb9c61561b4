"""Scheduler.run_once / run against MemoryCache: binds land, failed binds leak nothing,
the configuration file is reloaded when it changes."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest

from batchsched import (
    ActionSpec,
    JobInfo,
    MemoryCache,
    NodeInfo,
    PodGroup,
    Resource,
    Scheduler,
    Session,
    Statement,
    TaskInfo,
    TaskStatus,
    hookimpl,
)
from batchsched.conf import configuration_from_text
from batchsched.errors import ConfigError
from batchsched.framework.registry import Registry


class Idle:
    """An action that decides nothing."""

    name = "idle"

    def initialize(self) -> None: ...

    def uninitialize(self) -> None: ...

    def execute(self, ssn: Session) -> None: ...


class FirstFit:
    """A tiny action: each pending task on the first node whose idle fits; commit per job."""

    name = "first-fit"

    def initialize(self) -> None: ...

    def uninitialize(self) -> None: ...

    def execute(self, ssn: Session) -> None:
        for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
            stmt = Statement(ssn)
            for task in sorted(job.tasks_in(TaskStatus.PENDING).values(), key=lambda t: t.uid):
                node = next((n for n in ssn.node_list if task.init_resreq.less_equal(n.idle)), None)
                if node is not None:
                    stmt.allocate(task, node)
            stmt.commit() if ssn.job_ready(job) else stmt.discard()


class Provider:
    @hookimpl
    def batchsched_register_actions(self) -> list[ActionSpec]:
        return [ActionSpec("first-fit", FirstFit), ActionSpec("idle", Idle)]


def registry() -> Registry:
    reg = Registry(autoload=False)
    reg.register(Provider(), name="test-actions")
    return reg


def cluster(**kw: object) -> MemoryCache:
    cache = MemoryCache(now=1.0, **kw)  # type: ignore[arg-type]
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 2, "memory": "4Gi",
                                                                "pods": 10})))
    job = JobInfo.from_podgroup(PodGroup("pg1", "c1", min_member=1))
    job.add_task(TaskInfo.create("c1", "p1", job.uid, Resource.from_mapping({"cpu": 1})))
    cache.add_job(job)
    return cache


CONF = 'actions: "first-fit"\ntiers: []\n'


def test_run_once_binds_into_the_cache() -> None:
    cache = cluster()
    scheduler = Scheduler(cache, configuration_from_text(CONF), registry=registry())
    scheduler.run_once()
    assert [(b.task, b.node) for b in cache.binds] == [("c1/p1", "n1")]
    task = cache.jobs["c1/pg1"].tasks["c1/p1"]
    assert task.status == TaskStatus.BOUND and task.node_name == "n1"
    assert cache.nodes["n1"].used.milli_cpu == 1000
    # In the deciding session the task is Binding, which does not count as scheduled
    # (as in Volcano); the next session sees it Bound and the pod group Running.
    assert cache.jobs["c1/pg1"].podgroup.phase.value == "Pending"
    scheduler.run_once()
    assert cache.jobs["c1/pg1"].podgroup.phase.value == "Running"
    assert len(cache.binds) == 1
    cache.nodes["n1"].check_invariants()


def test_a_failed_bind_returns_the_task_to_pending_and_leaks_nothing() -> None:
    cache = cluster(binder=lambda task, node: False)
    ssn = Scheduler(cache, configuration_from_text(CONF), registry=registry()).run_once()
    assert not cache.binds
    assert cache.jobs["c1/pg1"].tasks["c1/p1"].status == TaskStatus.PENDING
    assert cache.nodes["n1"].used.is_empty()
    session_task = ssn.jobs["c1/pg1"].tasks["c1/p1"]
    assert session_task.status == TaskStatus.PENDING and not session_task.node_name
    assert ssn.nodes["n1"].used.is_empty()


def test_configuration_file_is_reloaded_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "sched.conf"
    path.write_text('actions: idle\n')
    cache = cluster()
    scheduler = Scheduler(cache, path, registry=registry())
    scheduler.run_once()
    assert not cache.binds
    path.write_text(CONF)
    os.utime(path, (time.time() + 5, time.time() + 5))
    scheduler.run_once()
    assert len(cache.binds) == 1


@pytest.mark.parametrize("text", ['actions: ""\n', "tiers: []\n", "actions: idle,\n"])
def test_a_file_volcano_refuses_is_refused(tmp_path: Path, text: str) -> None:
    """No action named, or an empty one: Volcano cannot find Action "" and refuses
    the file (and keeps its default configuration); the scheduler refuses to start."""
    path = tmp_path / "sched.conf"
    path.write_text(text)
    with pytest.raises(ConfigError, match="Volcano refuses such a file"):
        Scheduler(cluster(), path, registry=registry())


def test_a_broken_edit_keeps_the_last_good_configuration(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "sched.conf"
    path.write_text(CONF)
    scheduler = Scheduler(cluster(), path, registry=registry())
    path.write_text("actions: [broken")
    os.utime(path, (time.time() + 5, time.time() + 5))
    scheduler.run_once()
    assert scheduler.configuration.actions == ("first-fit",)
    assert "keeping the previous configuration" in caplog.text


def test_run_stops_when_asked() -> None:
    stop = threading.Event()
    cache = cluster()
    runs: list[int] = []
    scheduler = Scheduler(cache, configuration_from_text(CONF), registry=registry())
    original = scheduler.run_once

    def counting() -> Session:
        runs.append(1)
        if len(runs) == 3:
            stop.set()
        return original()
    scheduler.run_once = counting  # type: ignore[method-assign]
    scheduler.run(period=0.001, stop=stop)
    assert len(runs) == 3


class Exploding:
    name = "exploding"

    def initialize(self) -> None: ...

    def uninitialize(self) -> None: ...

    def execute(self, ssn: Session) -> None:
        raise RuntimeError("bug in a third-party action")


class ExplodingProvider:
    @hookimpl
    def batchsched_register_actions(self) -> list[ActionSpec]:
        return [ActionSpec("exploding", Exploding)]


def test_a_failing_action_publishes_nothing_and_the_loop_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    from batchsched.errors import PluginError

    reg = registry()
    reg.register(ExplodingProvider(), name="exploding")
    cache = cluster()
    cache.jobs["c1/pg1"].podgroup.phase = __import__("batchsched").PodGroupPhase.INQUEUE
    scheduler = Scheduler(cache, configuration_from_text('actions: "first-fit, exploding"'),
                          registry=reg)
    with pytest.raises(PluginError, match="action 'exploding' raised: RuntimeError"):
        scheduler.run_once()
    # first-fit's committed bind stands; no half-made status was published.
    assert len(cache.binds) == 1
    assert cache.jobs["c1/pg1"].podgroup.phase.value == "Inqueue"
    stop = threading.Event()
    calls: list[int] = []
    original = scheduler.run_once

    def counting() -> Session:
        calls.append(1)
        if len(calls) == 2:
            stop.set()
        return original()
    scheduler.run_once = counting  # type: ignore[method-assign]
    scheduler.run(period=0.001, stop=stop)
    assert len(calls) == 2 and "scheduling cycle failed" in caplog.text


class Parsing(Exploding):
    def execute(self, ssn: Session) -> None:
        from batchsched.api import Resource

        Resource.from_mapping({"cpu": "two"})  # batchsched's own error, from its code


def test_an_action_s_quantity_error_is_blamed_on_the_action() -> None:
    from batchsched.errors import PluginError

    class Provider:
        @hookimpl
        def batchsched_register_actions(self) -> list[ActionSpec]:
            return [ActionSpec("parsing", Parsing)]

    reg = registry()
    reg.register(Provider(), name="parsing")
    scheduler = Scheduler(cluster(), configuration_from_text('actions: "parsing"'), registry=reg)
    with pytest.raises(PluginError, match="action 'parsing' raised: QuantityError") as raised:
        scheduler.run_once()
    assert (raised.value.plugin, raised.value.point) == ("parsing", "execute")


class Misplacing(Exploding):
    def execute(self, ssn: Session) -> None:
        from batchsched.framework import Statement

        task = next(t for job in ssn.jobs.values() for t in job.tasks.values())
        Statement(ssn).allocate(task, "no-such-node")  # a refusal the action lets escape


def test_a_refusal_an_action_lets_escape_is_blamed_on_the_action() -> None:
    # It read "cannot allocate task ...: no node ..." with no action named.
    from batchsched.errors import PluginError, SchedulingError

    class Provider:
        @hookimpl
        def batchsched_register_actions(self) -> list[ActionSpec]:
            return [ActionSpec("misplacing", Misplacing)]

    reg = registry()
    reg.register(Provider(), name="misplacing")
    scheduler = Scheduler(cluster(), configuration_from_text('actions: "misplacing"'),
                          registry=reg)
    with pytest.raises(PluginError, match="action 'misplacing' raised: SchedulingError: "
                                          "cannot allocate task") as raised:
        scheduler.run_once()
    assert (raised.value.plugin, raised.value.point) == ("misplacing", "execute")
    assert isinstance(raised.value.__cause__, SchedulingError)


def test_a_malformed_task_is_refused_at_the_door_and_changes_nothing() -> None:
    from batchsched.errors import SchedulingError

    cache = cluster()
    job = JobInfo.from_podgroup(PodGroup("pg2", "c1", min_member=1))
    job.add_task(TaskInfo.create("c1", "bad", job.uid, Resource.from_mapping({"cpu": 1}),
                                 affinity={"nodeAffinity": {"requiredDuringScheduling": []}}))
    with pytest.raises(SchedulingError, match="task c1/bad: affinity"):
        cache.add_job(job)
    assert "c1/pg2" not in cache.jobs
    orphan = TaskInfo.create("c1", "lost", "c1/pg1", Resource.from_mapping({"cpu": 1}),
                             status=TaskStatus.RUNNING, node_name="n9")
    with pytest.raises(SchedulingError, match="node 'n9' is not in the cache"):
        cache.add_task(orphan)
    assert "c1/lost" not in cache.jobs["c1/pg1"].tasks
    # Sessions still open and schedule.
    Scheduler(cache, configuration_from_text(CONF), registry=registry()).run_once()
    assert len(cache.binds) == 1


def test_an_action_keeps_the_arguments_a_reload_leaves_out(tmp_path: Path) -> None:
    """Volcano keeps one instance of each action for the scheduler's life and reads into
    it, each cycle, only the arguments the configuration gives: a reload that drops an
    argument leaves its value as it was."""
    path = tmp_path / "sched.conf"
    path.write_text("actions: preempt\nconfigurations:\n- name: preempt\n  arguments: "
                    "{enableTopologyAwarePreemption: true, minCandidateNodesAbsolute: 5}\n")
    scheduler = Scheduler(cluster(), path, registry=registry())
    first = scheduler._actions["preempt"]
    path.write_text("actions: preempt\nconfigurations:\n- name: preempt\n  arguments: "
                    "{minCandidateNodesAbsolute: 7}\n")
    os.utime(path, (time.time() + 5, time.time() + 5))
    scheduler.run_once()
    preempt = scheduler._actions["preempt"]
    assert scheduler.status.reloads == 1 and preempt is not first
    assert preempt.topology_aware and preempt.min_candidate_nodes_absolute == 7
    path.write_text("actions: preempt\n")  # nothing given: the same instance goes on
    os.utime(path, (time.time() + 10, time.time() + 10))
    scheduler.run_once()
    assert scheduler.status.reloads == 2 and scheduler._actions["preempt"] is preempt


def test_a_reload_s_unreadable_action_argument_leaves_the_value_read_before(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Volcano's getters do not write an action's field when they cannot read the value:
    the action (one for the process) keeps what it read before the reload, not its
    default; and the warning names the action and the value kept."""
    path = tmp_path / "sched.conf"
    path.write_text("actions: preempt\nconfigurations:\n- name: preempt\n  arguments: "
                    "{enableTopologyAwarePreemption: true, predicateErrorCacheEnable: false}\n")
    scheduler = Scheduler(cluster(), path, registry=registry())
    _edit(path, "actions: preempt\nconfigurations:\n- name: preempt\n  arguments: "
          "{enableTopologyAwarePreemption: maybe, predicateErrorCacheEnable: 2}\n", 5)
    with caplog.at_level(logging.WARNING, logger="batchsched"):
        scheduler.run_once()
    preempt = scheduler._actions["preempt"]
    assert scheduler.status.reloads == 1
    assert preempt.topology_aware and not preempt.cache_predicate_errors
    assert ("action 'preempt': argument 'enableTopologyAwarePreemption' = 'maybe' is not "
            "true or false; using True instead") in caplog.text
    for i in range(600):  # unreadable again and again: still the value read first
        _edit(path, "actions: preempt\nconfigurations:\n- name: preempt\n  arguments: "
              "{enableTopologyAwarePreemption: maybe, maxCandidateNodesAbsolute: "
              f"{100 + i}}}\n", 10 + i)
        scheduler.run_once()
    preempt = scheduler._actions["preempt"]
    assert scheduler.status.reloads == 601 and not scheduler.status.reload_error
    assert preempt.topology_aware and preempt.max_candidate_nodes_absolute == 699


def _edit(path: Path, text: str | bytes, seconds: float) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    os.utime(path, (time.time() + seconds, time.time() + seconds))


def test_an_action_dropped_by_a_reload_and_restored_is_the_same_instance(
        tmp_path: Path) -> None:
    # Volcano keeps one instance per action for the process: strict-allocate's held
    # head (what it remembers) was lost, and a later job overtook it.
    path = tmp_path / "sched.conf"
    conf = ("actions: strict-allocate\nconfigurations:\n- name: strict-allocate\n"
            "  arguments: {holdBlockedHead: true}\n")
    path.write_text(conf)
    scheduler = Scheduler(cluster(), path, registry=registry())
    first = scheduler._actions["strict-allocate"]
    _edit(path, "actions: allocate\n", 5)
    scheduler.run_once()
    _edit(path, conf, 10)
    scheduler.run_once()
    assert scheduler.status.reloads == 2 and scheduler._actions["strict-allocate"] is first


def test_a_plugin_that_cannot_be_built_is_refused_when_the_scheduler_is(
        tmp_path: Path) -> None:
    # It was accepted, and every cycle failed; a reload refused the same file.
    from batchsched.errors import PluginError

    path = tmp_path / "sched.conf"
    path.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n"
                    "    arguments: {volumebinding.bindTimeoutSeconds: -1}\n")
    with pytest.raises(PluginError, match=r"sched.conf: tiers\[0\].plugins\[0\].arguments"):
        Scheduler(cluster(), path, registry=registry())


def test_a_refused_reload_names_the_file_and_the_argument_s_place(tmp_path: Path) -> None:
    path = tmp_path / "sched.conf"
    path.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n")
    scheduler = Scheduler(cluster(), path, registry=registry())
    _edit(path, "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n"
                "    arguments: {volumebinding.bindTimeoutSeconds: -1}\n", 5)
    scheduler.run_once()
    assert scheduler.status.reload_error.startswith(
        f"{path}: tiers[0].plugins[0].arguments")
    _edit(path, "actions: easy-backfill\nconfigurations:\n- name: easy-backfill\n"
                "  arguments: {candidateOrder: bogus}\n", 10)
    scheduler.run_once()
    assert scheduler.status.reload_error.startswith(
        f"{path}: configurations[0].arguments.candidateOrder")


def test_a_utf16_configuration_is_read_as_volcano_reads_it(tmp_path: Path) -> None:
    from batchsched.conf import load_configuration

    path = tmp_path / "utf16.conf"
    path.write_bytes("actions: \"enqueue, allocate\"\n".encode("utf-16"))
    assert load_configuration(path).actions == ("enqueue", "allocate")
    # Volcano trims the file's bytes first: the mark keeps an indented first line
    # indented, and a big-endian file's last newline trimmed splits a character.
    path.write_bytes(b"\xff\xfe" + "  actions: allocate\n  tiers: []\n".encode("utf-16-le"))
    assert load_configuration(path).actions == ("allocate",)
    path.write_bytes(b"\xfe\xff" + "actions: allocate\n".encode("utf-16-be"))
    with pytest.raises(ConfigError, match="incomplete UTF-16 character"):
        load_configuration(path)
    # A lone surrogate is named as UTF-16's, not UTF-8's.
    path.write_bytes(b"\xff\xfe" + "actions: allocate\n# ".encode("utf-16-le") + b"\x00\xd8"
                     + "x: y".encode("utf-16-le"))
    with pytest.raises(ConfigError, match=r"not UTF-16LE text: .*surrogate, code unit 0x00d8 "
                       r"at offset 42"):
        load_configuration(path)


def test_a_scheduler_given_no_cache_says_so_at_once() -> None:
    """The arguments swapped (a configuration's path first) failed only at the first
    cycle, as a snapshot that raised AttributeError."""
    import batchsched

    with pytest.raises(TypeError, match="first argument is the cache"):
        Scheduler("examples/volcano-scheduler.conf")  # type: ignore[arg-type]
    assert batchsched.LoopStatus is type(Scheduler(cluster(), registry=registry()).status)
