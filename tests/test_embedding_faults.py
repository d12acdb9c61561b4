"""The embedding loop under host faults, plugin faults, configuration edits and concurrent
updates: only batchsched errors leave a cycle, the loop survives every failure, and
the cluster's invariants hold after every step (no node over-committed, no gang partly
bound, every index exact)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from batchsched import (
    BatchSchedError,
    JobInfo,
    MemoryCache,
    NodeInfo,
    PluginSpec,
    PodGroup,
    Resource,
    Scheduler,
    TaskInfo,
    TaskStatus,
    hookimpl,
)
from batchsched.api.types import ALLOCATED_STATUSES
from batchsched.framework.registry import Registry

GOOD_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: flaky}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
EDITS: list[bytes] = [
    GOOD_CONF.encode(),
    b"",                                           # empty
    b"\xff\xfe\x00 not text",                      # not UTF-8
    b'actions: "allocate\ntiers: [',               # malformed YAML
    b"- just\n- a list\n",                         # wrong shape
    b'actions: "allocate"\ntiers: [{plugins: [{name: no-such-plugin}]}]\n',
    b'actions: "no-such-action"\n',
    b'actions: ""\n',                              # would stop scheduling
    (b"apiVersion: v1\nkind: ConfigMap\ndata:\n  volcano-scheduler.conf: |\n"
     b'    actions: "allocate\n'),                 # broken inside a ConfigMap
]


class FaultyHost(MemoryCache):
    """A MemoryCache whose host calls fail at random, as an API server's do."""

    def __init__(self, rng: random.Random, rate: float) -> None:
        super().__init__(now=1000.0)
        self.rng, self.rate = rng, rate

    def _maybe_fail(self) -> None:
        if self.rng.random() < self.rate:
            raise self.rng.choice([ConnectionError("api server unreachable"),
                                   TimeoutError("deadline exceeded"),
                                   RuntimeError("500 internal error")])

    def snapshot(self) -> Any:
        self._maybe_fail()
        return super().snapshot()

    def bind(self, task: TaskInfo, node_name: str) -> bool:
        self._maybe_fail()
        if self.rng.random() < self.rate:
            return False  # refused
        return super().bind(task, node_name)

    def evict(self, task: TaskInfo, reason: str) -> bool:
        self._maybe_fail()
        return super().evict(task, reason)

    def update_job_status(self, job: JobInfo) -> None:
        self._maybe_fail()
        super().update_job_status(job)

    def record_event(self, event: Any) -> None:
        self._maybe_fail()
        super().record_event(event)


class FlakyPlugin:
    """A plugin that raises now and then, in open, in an order, or in close."""

    name = "flaky"
    rng = random.Random(0)
    rate = 0.0

    def __init__(self, arguments: object) -> None:
        del arguments

    def _maybe_raise(self) -> None:
        if self.rng.random() < self.rate:
            raise ValueError("flaky plugin failed")

    def on_session_open(self, ssn: Any) -> None:
        self._maybe_raise()

        def order(left: JobInfo, right: JobInfo) -> int:
            self._maybe_raise()
            return 0

        ssn.add_job_order_fn(self.name, order)

    def on_session_close(self, ssn: Any) -> None:
        self._maybe_raise()


class FlakyProvider:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec("flaky", FlakyPlugin)]


def registry() -> Registry:
    reg = Registry(autoload=False)
    reg.register(FlakyProvider(), name="flaky-plugins")
    return reg


def add_nodes(cache: MemoryCache, count: int = 4) -> None:
    for i in range(count):
        cache.add_node(NodeInfo.create(f"n{i}", Resource.from_mapping(
            {"cpu": 4, "memory": "8Gi", "pods": 20})))


def gang(name: str, size: int, minimum: int, cpu: int = 1) -> JobInfo:
    job = JobInfo.from_podgroup(PodGroup(name, "ns", min_member=minimum))
    for k in range(size):
        job.add_task(TaskInfo.create("ns", f"{name}-{k}", job.uid,
                                     Resource.from_mapping({"cpu": cpu, "memory": "1Gi"})))
    return job


def check_cluster(cache: MemoryCache) -> None:
    with cache.updates():
        for node in cache.nodes.values():
            node.check_invariants()
            assert node.used.less_equal(node.allocatable), f"{node.name} over-committed"
        for job in cache.jobs.values():
            job.check_invariants()
            placed = sum(len(job.tasks_in(s)) for s in ALLOCATED_STATUSES)
            placed += len(job.tasks_in(TaskStatus.SUCCEEDED))
            assert placed == 0 or placed >= job.min_available, (
                f"{job.uid}: {placed} of {job.min_available} placed")


def host_step(cache: MemoryCache, rng: random.Random, serial: list[int]) -> None:
    """What the cluster does between cycles: pods start, end, jobs arrive and leave."""
    with cache.updates():
        for job in list(cache.jobs.values()):
            for task in list(job.tasks.values()):
                if task.status is TaskStatus.BOUND and rng.random() < 0.7:
                    cache.task_started(job.uid, task.uid, at=cache.now)
                elif task.status is TaskStatus.RUNNING and rng.random() < 0.2:
                    cache.task_ended(job.uid, task.uid)
                elif task.status is TaskStatus.RELEASING:
                    cache.task_recreated(job.uid, task.uid)
            if job.tasks and all(t.status is TaskStatus.SUCCEEDED for t in job.tasks.values()):
                cache.delete_job(job.uid)
        if rng.random() < 0.5 and len(cache.jobs) < 12:
            serial[0] += 1
            size = rng.choice((1, 2, 3, 4, 6))
            cache.add_job(gang(f"job{serial[0]}", size, rng.randint(1, size)))


def edit(path: Path, rng: random.Random, tick: list[float]) -> None:
    path.write_bytes(rng.choice(EDITS))
    tick[0] += 10.0  # a later mtime each time, whatever the file system's resolution
    os.utime(path, (tick[0], tick[0]))


def test_two_thousand_cycles_of_faults_leave_only_batchsched_errors(tmp_path: Path) -> None:
    rng = random.Random(2026)
    FlakyPlugin.rng, FlakyPlugin.rate = random.Random(7), 0.002
    cache = FaultyHost(random.Random(11), rate=0.03)
    add_nodes(cache)
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(GOOD_CONF)
    scheduler = Scheduler(cache, path, registry=registry())
    serial, tick = [0], [time.time()]
    failures = 0
    for cycle in range(2000):
        host_step(cache, rng, serial)
        if rng.random() < 0.02:
            edit(path, rng, tick)
        try:
            scheduler.run_once()
        except BatchSchedError:
            failures += 1  # anything else fails the test
        check_cluster(cache)
        assert scheduler.configuration.actions, f"cycle {cycle}: scheduling stopped"
    assert scheduler.status.cycles == 2000
    assert scheduler.status.failures == failures > 0
    assert len(cache.binds) > 500  # the loop kept scheduling through it all


def failing_loop_pauses(period: float, max_backoff: float, cycles: int) -> tuple[
        Scheduler, list[float]]:
    """The pauses of a loop whose every snapshot fails, after ``cycles`` cycles."""
    cache = FaultyHost(random.Random(1), rate=1.0)
    add_nodes(cache)
    scheduler = Scheduler(cache, None, registry=registry())
    pauses: dict[int, float] = {}

    def stop() -> bool:  # asked at every cycle and during its pauses
        done = scheduler.status.cycles
        if done:
            pauses[done] = scheduler.status.pause
        return done >= cycles

    scheduler.run(period=period, stop=stop, max_backoff=max_backoff)
    return scheduler, [pauses[cycle] for cycle in sorted(pauses)]


def test_a_host_down_for_hours_does_not_end_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 ** 1024 failures in a row overflowed the backoff: run() raised OverflowError.
    import batchsched.scheduler as loop

    monkeypatch.setattr(loop, "_STOP_POLL", 0.0)
    scheduler, pauses = failing_loop_pauses(0.0001, 0.0001, 1100)
    assert scheduler.status.consecutive_failures == 1100 and pauses[-1] == 0.0001


def test_a_callable_stop_ends_a_long_pause_at_once() -> None:
    scheduler = Scheduler(FaultyHost(random.Random(1), rate=1.0), None, registry=registry())
    asked = [0.0]

    def stop() -> bool:
        if not asked[0] and scheduler.status.cycles:
            asked[0] = time.monotonic()
        return bool(asked[0]) and time.monotonic() - asked[0] > 0.1

    began = time.monotonic()
    scheduler.run(period=30.0, stop=stop, max_backoff=60.0)
    assert time.monotonic() - began < 5.0  # not the 60 s pause


def test_run_survives_failed_cycles_with_a_capped_backoff() -> None:
    scheduler, pauses = failing_loop_pauses(0.001, 0.004, 6)
    assert scheduler.status.failures == 6 and scheduler.status.consecutive_failures == 6
    assert pauses == [0.002, 0.004, 0.004, 0.004, 0.004, 0.004]
    assert "snapshot" in str(scheduler.status.last_error)


def test_a_loop_without_pauses_still_backs_off_after_failures() -> None:
    _, pauses = failing_loop_pauses(0, 0.4, 2)
    assert pauses == [0.2, 0.4]


def test_a_refused_edit_is_reported_and_the_good_configuration_stays(tmp_path: Path) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(GOOD_CONF)
    FlakyPlugin.rate = 0.0
    scheduler = Scheduler(MemoryCache(), path, registry=registry())
    tick = [time.time()]
    for text in EDITS[1:]:
        path.write_bytes(text)
        tick[0] += 10.0
        os.utime(path, (tick[0], tick[0]))
        scheduler.run_once()
        assert scheduler.configuration.actions == ("enqueue", "allocate", "backfill")
        assert scheduler.status.reload_error.startswith(str(path))
    path.write_text(GOOD_CONF)
    os.utime(path, (tick[0] + 10, tick[0] + 10))
    scheduler.run_once()
    assert scheduler.status.reload_error == "" and scheduler.status.reloads == 1


def test_updates_from_another_thread_while_the_loop_runs_raise_nothing() -> None:
    FlakyPlugin.rate = 0.0
    cache = MemoryCache(now=1.0)
    add_nodes(cache, 8)
    scheduler = Scheduler(cache, None, registry=registry())
    errors: list[BaseException] = []
    done = threading.Event()

    def informer() -> None:
        rng, serial = random.Random(3), [0]
        try:
            while not done.is_set():
                host_step(cache, rng, serial)
                steps[0] += 1
                # A real informer waits for watch events; without a pause this thread
                # would hold the cache lock nearly always and starve the loop.
                time.sleep(0.0005)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    steps = [0]
    thread = threading.Thread(target=informer)
    thread.start()
    try:
        # A count of cycles, not a duration: a slow machine must not fail this test.
        for _ in range(40):
            scheduler.run_once()
            check_cluster(cache)
    finally:
        done.set()
        thread.join()
    assert not errors
    assert steps[0] > 0 and scheduler.status.cycles == 40


class LoopMachine(RuleBasedStateMachine):
    """Arrivals, completions, host faults, plugin faults and configuration edits in any
    order, with the invariants checked after every step."""

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cache = FaultyHost(random.Random(seed + 1), rate=0.0)
        add_nodes(self.cache, 3)
        self.tmp = Path(tempfile.mkdtemp())
        self.path = self.tmp / "volcano-scheduler.conf"
        self.path.write_text(GOOD_CONF)
        FlakyPlugin.rng, FlakyPlugin.rate = random.Random(seed + 2), 0.0
        self.scheduler = Scheduler(self.cache, self.path, registry=registry())
        self.serial, self.tick = [0], [time.time()]
        # The host's own jobs are numbered apart, and never twice: the cache refuses a uid
        # it holds already.
        self.host_serial = [10_000]

    @rule(size=st.integers(1, 5), data=st.data())
    def arrive(self, size: int, data: st.DataObject) -> None:
        self.serial[0] += 1
        minimum = data.draw(st.integers(1, size))
        self.cache.add_job(gang(f"m{self.serial[0]}", size, minimum))

    @rule()
    def cluster_moves(self) -> None:
        host_step(self.cache, self.rng, self.host_serial)

    @rule(rate=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    def host_faults(self, rate: float) -> None:
        self.cache.rate = rate

    @rule(rate=st.sampled_from([0.0, 0.05, 0.5]))
    def plugin_faults(self, rate: float) -> None:
        FlakyPlugin.rate = rate

    @rule(index=st.integers(0, len(EDITS) - 1))
    def edit_configuration(self, index: int) -> None:
        self.path.write_bytes(EDITS[index])
        self.tick[0] += 10.0
        os.utime(self.path, (self.tick[0], self.tick[0]))

    @rule()
    def cycle(self) -> None:
        with contextlib.suppress(BatchSchedError):
            self.scheduler.run_once()

    def teardown(self) -> None:
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    @invariant()
    def cluster_is_sound(self) -> None:
        if hasattr(self, "cache"):
            check_cluster(self.cache)
            assert self.scheduler.configuration.actions


TestLoopMachine = LoopMachine.TestCase
TestLoopMachine.settings = settings(max_examples=15, stateful_step_count=30, deadline=None)


class _SecondPlacementFails:
    """A plugin whose allocate event handler raises on the session's second placement."""

    name = "second-fails"

    def __init__(self, arguments: object) -> None:
        del arguments
        self.placed = 0

    def on_session_open(self, ssn: Any) -> None:
        from batchsched.framework.events import EventHandler

        def allocate(event: Any) -> None:
            self.placed += 1
            if self.placed == 2:
                raise ValueError("the plugin's bookkeeping broke")

        ssn.add_event_handler(EventHandler(allocate=allocate, plugin=self.name))

    def on_session_close(self, ssn: Any) -> None:
        del ssn


class _SecondPlacementProvider:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec("second-fails", _SecondPlacementFails)]


def test_a_plugin_raising_half_way_through_a_gang_leaves_no_placement_behind() -> None:
    """The statement the failing action held is undone: the session holds only what was
    committed, and closing it (a host's ``finally:``) reports no placement that was
    never bound."""
    from batchsched.conf import parse_configuration
    from batchsched.errors import PluginError
    from batchsched.framework.session import Session
    from batchsched.scheduler import run_actions

    reg = Registry(autoload=False)
    reg.register(_SecondPlacementProvider(), name="second-fails-plugins")
    cache = MemoryCache(now=0.0)
    add_nodes(cache, 2)
    cache.add_job(gang("a", 2, 2))
    conf = parse_configuration({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "predicates"}, {"name": "second-fails"}]}]})
    ssn = Session.open(cache, conf, registry=reg)
    try:
        run_actions(ssn)
    except PluginError as exc:
        assert exc.plugin == "second-fails"
    else:
        raise AssertionError("the plugin's error was lost")
    finally:
        ssn.close()
    job = ssn.jobs["ns/a"]
    assert all(task.status is TaskStatus.PENDING and not task.node_name
               for task in job.tasks.values())
    for node in ssn.nodes.values():
        node.check_invariants()
        assert not node.tasks
    assert cache.binds == []
    held = cache.queues["default"].status.allocated
    assert held.milli_cpu == 0 and held.memory == 0


class _CannotBuild:
    name = "cannot-build"

    def __init__(self, arguments: object) -> None:
        raise RuntimeError("a required setting is missing")


class _CannotBuildProvider:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec("cannot-build", _CannotBuild)]


def test_an_edit_naming_a_plugin_that_cannot_be_built_keeps_the_good_configuration(
        tmp_path: Path) -> None:
    reg = registry()
    reg.register(_CannotBuildProvider(), name="cannot-build-plugins")
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(GOOD_CONF)
    FlakyPlugin.rate = 0.0
    scheduler = Scheduler(MemoryCache(), path, registry=reg)
    path.write_text(GOOD_CONF.replace("{name: flaky}", "{name: cannot-build}"))
    later = time.time() + 10
    os.utime(path, (later, later))
    scheduler.run_once()
    assert "cannot-build" in scheduler.status.reload_error
    assert "flaky" in scheduler.configuration.plugin_names()
    assert scheduler.status.failures == 0  # the cycle ran on the good configuration
