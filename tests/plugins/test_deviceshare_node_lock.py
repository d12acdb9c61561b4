"""deviceshare's node lock (``deviceshare.NodeLockEnable``), as Volcano's device
``Allocate`` takes it: with ``TestAllocateAddsNodeLockAscendWhenEnabled`` of
``pkg/scheduler/api/devices/ascend/hami/device_info_test.go`` (volcano-sh/volcano,
Apache-2.0) through a session, and the lock's rules (``plugins/util/nodelock``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from batchsched.api.node_lock import (
    ASCEND_LOCK,
    GPU_SHARE_LOCK,
    VGPU_LOCK,
    NodeLockError,
    format_lock_time,
    lock_time,
    take_node_lock,
)
from batchsched.api.types import TaskStatus
from batchsched.errors import SchedulingError
from batchsched.explain import explain
from batchsched.framework.session import Session
from batchsched.framework.statement import Statement
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler, run_actions
from plugins import test_deviceshare_vgpu as vgpus
from plugins import test_deviceshare_vnpu as vnpus
from plugins.node_support import document, plugin

NOW = 1_790_000_000.0
NOW_TEXT = "2026-09-21T14:13:20Z"
LOCKED = {"deviceshare.NodeLockEnable": True}


def vgpu_lock(**more: Any) -> dict[str, Any]:
    arguments = {**vgpus.vgpu("binpack")["arguments"], **more}
    return plugin("deviceshare", arguments)


def vgpu_doc(*arguments: dict[str, Any], nodes: int = 1, jobs: int = 2, members: int = 1,
             node_annotations: str = "") -> dict[str, Any]:
    node_lines = [vgpus.node_yaml(f"n{i + 1}", 2) for i in range(nodes)]
    if node_annotations:
        node_lines[0] = node_lines[0].replace("}}", f", {node_annotations}}}}}", 1)
    doc = document("\n".join([
        "nodes:", *node_lines,
        "jobs:", *(f"- {{name: j{i}, minMember: {members}, createdAt: {i}, phase: Inqueue}}"
                   for i in range(jobs)),
        "tasks:", *(vgpus.task_yaml(f"t{i}-{m}", f"j{i}", 2048)
                    for i in range(jobs) for m in range(members))]),
        plugin("gang"), plugin("predicates"), vgpu_lock(**arguments[0] if arguments else {}),
        actions="allocate")
    doc["now"] = NOW
    return doc


def run(doc: dict[str, Any]) -> dict[str, Any]:
    return run_scenario(parse_scenario(doc, source="<test>")).to_json()


# -- the lock's rules -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [
    ("2026-09-21T14:13:20Z", NOW),
    ("2026-09-21T16:13:20+02:00", NOW),
    ("2026-09-21T14:13:20.5Z", NOW + 0.5),
    ("2026-09-21T14:13:20,25Z", NOW + 0.25),
    ("2026-09-21T11:13:20-03:00", NOW),
    # Go's layout parser is laxer than RFC 3339: a one-digit hour, offset minutes of 60,
    # a fraction of any length (cut to nanoseconds), the year 0000.
    ("2026-09-21T4:13:20-10:00", NOW),
    ("2026-09-21T16:13:20+01:60", NOW),
    ("2026-09-21T14:13:20." + "5" * 5000 + "Z", NOW + 0.555555555),
    ("0000-01-01T00:00:00Z", -62167219200.0),
])
def test_a_lock_time_is_read_as_go_reads_rfc3339(text: str, seconds: float) -> None:
    assert lock_time(text) == pytest.approx(seconds, abs=1e-6)


@pytest.mark.parametrize("text", [
    "2026-09-21", "2026-09-21 13:46:40Z", "2026-09-21t13:46:40z", "2026-09-21T13:46:40",
    "2026-02-30T00:00:00Z", "2026-09-21T24:00:00Z", "1790000000", "", "yesterday",
    "\uff12\uff10\uff12\uff16-09-21T14:13:20Z", "2026-09-21T14:13:20+01:61",
    "2026-09-21T14:3:20Z", "2026-13-01T00:00:00Z",
])
def test_a_lock_time_go_would_refuse_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="parsing time"):
        lock_time(text)


def test_a_lock_is_written_in_whole_utc_seconds() -> None:
    assert format_lock_time(NOW + 0.9) == NOW_TEXT
    assert lock_time(format_lock_time(NOW)) == NOW


def test_a_lock_holds_five_minutes_then_is_taken_over() -> None:
    assert take_node_lock("n1", {}, VGPU_LOCK, NOW) == NOW_TEXT
    held = {VGPU_LOCK: NOW_TEXT}
    for later in (0.0, 299.0, 300.0):
        with pytest.raises(NodeLockError, match="node n1 has been locked within 5 minutes"):
            take_node_lock("n1", held, VGPU_LOCK, NOW + later)
    assert take_node_lock("n1", held, VGPU_LOCK, NOW + 301) == format_lock_time(NOW + 301)
    # Each kind of device has its own lock.
    assert take_node_lock("n1", held, ASCEND_LOCK, NOW) == NOW_TEXT
    with pytest.raises(NodeLockError, match="parsing time"):
        take_node_lock("n1", {GPU_SHARE_LOCK: "soon"}, GPU_SHARE_LOCK, NOW)


# -- vGPUs ---------------------------------------------------------------------------------


def test_a_node_takes_one_vgpu_pod_per_session_with_the_lock() -> None:
    assert run(vgpu_doc())["binds"] == {"default/t0-0": "n1", "default/t1-0": "n1"}
    got = run(vgpu_doc(LOCKED))
    # The second pod's Allocate finds the lock the first took: it waits, as in Volcano.
    assert got["binds"] == {"default/t0-0": "n1"}


def test_the_lock_is_written_at_once_and_the_bind_releases_it() -> None:
    parsed = parse_scenario(vgpu_doc(LOCKED), source="<test>")
    cache = parsed.build_cache()
    cache.binder = lambda task, node: False  # a host whose binds do not go through
    ssn = Session.open(cache, parsed.configuration)
    run_actions(ssn)
    assert ssn.nodes["n1"].annotations[VGPU_LOCK] == NOW_TEXT
    assert cache.nodes["n1"].annotations[VGPU_LOCK] == NOW_TEXT
    ssn.nodes["n1"].check_invariants()
    ssn.close()
    # The failed bind's lock stays (no device plugin released it) and holds both pods
    # back for five minutes; then the first is placed and bound, and its node's device
    # plugin releases the lock: the next session places the second.
    cache.binder = None
    cache.now = NOW + 10
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.nodes["n1"].annotations[VGPU_LOCK] == NOW_TEXT
    assert cache.binds == []
    cache.now = NOW + 301
    Scheduler(cache, parsed.configuration).run_once()
    assert [b.task for b in cache.binds] == ["default/t0-0"]
    assert VGPU_LOCK not in cache.nodes["n1"].annotations
    Scheduler(cache, parsed.configuration).run_once()
    assert [b.task for b in cache.binds] == ["default/t0-0", "default/t1-0"]


def test_an_undone_placement_leaves_its_lock_and_a_gang_on_one_node_waits() -> None:
    """Volcano writes the lock on the API server's node: a gang whose second member
    finds the lock its first took is discarded, and the lock stays until it expires;
    taken over then, it stops the second member again."""
    doc = vgpu_doc(LOCKED, jobs=1, members=2)
    parsed = parse_scenario(doc, source="<test>")
    cache = parsed.build_cache()
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.binds == []
    assert cache.nodes["n1"].annotations[VGPU_LOCK] == NOW_TEXT
    cache.nodes["n1"].check_invariants()
    cache.now = NOW + 301
    Scheduler(cache, parsed.configuration).run_once()
    assert cache.binds == []
    assert cache.nodes["n1"].annotations[VGPU_LOCK] == format_lock_time(NOW + 301)


def test_a_lock_already_on_the_node_is_honoured_until_it_expires() -> None:
    fresh = f"hamivgpu: '{format_lock_time(NOW - 60)}'"
    assert run(vgpu_doc(LOCKED, node_annotations=fresh))["binds"] == {}
    # Without the switch the scheduler takes no lock and reads none.
    assert len(run(vgpu_doc(node_annotations=fresh))["binds"]) == 2
    expired = f"hamivgpu: '{format_lock_time(NOW - 301)}'"
    assert run(vgpu_doc(LOCKED, node_annotations=expired))["binds"] == {"default/t0-0": "n1"}
    unreadable = "hamivgpu: 'not a time'"
    assert run(vgpu_doc(LOCKED, node_annotations=unreadable))["binds"] == {}


def test_a_locked_node_is_not_passed_over_for_another() -> None:
    """Volcano's predicate does not read the lock: the task whose Allocate fails waits
    for the next session instead of going to the next node."""
    got = run(vgpu_doc(LOCKED, nodes=2))
    assert got["binds"] == {"default/t0-0": "n1"}


def test_the_lock_refusal_is_explained() -> None:
    report = explain(parse_scenario(vgpu_doc(LOCKED), source="<test>"), job="default/j1")
    assert report["verdict"] == "held back by deviceshare"
    assert report["decidedBy"] == ["deviceshare"]
    (task,) = report["tasks"]
    assert task["reason"] == (
        "deviceshare said refused: task default/t1-0: node n1 locked for t1-0 hamivgpu "
        "lockname node n1 has been locked within 5 minutes at allocate event")


class _NoAnnotations:
    """A host cache that writes no annotation: the lock lives in the session."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def bind(self, task: Any, node_name: str) -> bool:
        return bool(self.inner.bind(task, node_name))

    def evict(self, task: Any, reason: str) -> bool:
        return bool(self.inner.evict(task, reason))

    def update_job_status(self, job: Any) -> None:
        self.inner.update_job_status(job)

    def record_event(self, event: Any) -> None:
        self.inner.record_event(event)


class _FailingAnnotations(_NoAnnotations):
    """A host whose first annotation fails (the API server is away), then works."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.failures = 1

    def annotate_node(self, node_name: str, key: str, value: str | None) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the API server is away")
        self.inner.annotate_node(node_name, key, value)


def test_a_host_without_annotate_node_keeps_the_lock_to_the_session() -> None:
    parsed = parse_scenario(vgpu_doc(LOCKED), source="<test>")
    inner = parsed.build_cache()
    ssn = Session.open(_NoAnnotations(inner), parsed.configuration)
    run_actions(ssn)
    placed = [t.uid for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name]
    assert placed == ["default/t0-0"]
    assert VGPU_LOCK not in inner.nodes["n1"].annotations
    ssn.close()
    # The next session knows of no lock: the second pod is placed.
    ssn = Session.open(_NoAnnotations(inner), parsed.configuration)
    run_actions(ssn)
    assert ssn.jobs["default/j1"].tasks["default/t1-0"].node_name == "n1"


def test_a_host_failing_to_write_the_lock_fails_the_placement_cleanly() -> None:
    parsed = parse_scenario(vgpu_doc(LOCKED), source="<test>")
    ssn = Session.open(_FailingAnnotations(parsed.build_cache()), parsed.configuration)
    task = ssn.jobs["default/j0"].tasks["default/t0-0"]
    with pytest.raises(SchedulingError, match="the lock hamivgpu could not be written"):
        Statement(ssn).allocate(task, "n1")
    assert task.status is TaskStatus.PENDING and not task.node_name
    node = ssn.nodes["n1"]
    node.check_invariants()
    assert node.vgpu is not None and not node.vgpu.holds(task.uid)
    assert [e.operation for e in ssn.host_errors] == ["annotate_node"]
    # A lock the cache refused is no lock: the next pod takes it.
    assert VGPU_LOCK not in node.annotations
    other = ssn.jobs["default/j1"].tasks["default/t1-0"]
    Statement(ssn).allocate(other, "n1")
    assert node.annotations[VGPU_LOCK] == NOW_TEXT


# -- Ascend vNPUs --------------------------------------------------------------------------


def vnpu_doc(*arguments: dict[str, Any]) -> dict[str, Any]:
    doc = document("\n".join([
        "nodes:", vnpus.node_yaml("n1", 2),
        "jobs:", *vnpus.jobs_yaml("j0", "j1"),
        "tasks:", vnpus.task_yaml("t0", "j0"), vnpus.task_yaml("t1", "j1")]),
        plugin("predicates"), vnpus.vnpu("binpack", **(arguments[0] if arguments else {})),
        actions="allocate")
    doc["now"] = NOW
    return doc


def test_allocate_adds_the_ascend_node_lock_when_enabled() -> None:
    """``TestAllocateAddsNodeLockAscendWhenEnabled``: the pod is placed and the node
    carries ``hami.io/mutex.lock``, an RFC 3339 time."""
    parsed = parse_scenario(vnpu_doc(LOCKED), source="<test>")
    cache = parsed.build_cache()
    tried: list[tuple[str, str]] = []

    def binder(task: Any, node: str) -> bool:
        tried.append((task.uid, node))
        return False  # Volcano's test binds nothing

    cache.binder = binder
    ssn = Session.open(cache, parsed.configuration)
    run_actions(ssn)
    assert tried == [("default/t0", "n1")]
    assert lock_time(cache.nodes["n1"].annotations[ASCEND_LOCK]) == NOW
    # The second pod's placement is refused by the lock and holds no card.
    assert not ssn.jobs["default/j1"].tasks["default/t1"].node_name
    ledgers = ssn.nodes["n1"].ascend
    assert ledgers and not any(cards.holds("default/t1") for cards in ledgers.values())
    ssn.nodes["n1"].check_invariants()


def test_vnpu_pods_take_one_node_per_session_with_the_lock() -> None:
    assert len(run(vnpu_doc())["binds"]) == 2
    assert run(vnpu_doc(LOCKED))["binds"] == {"default/t0": "n1"}


# -- GPU sharing ---------------------------------------------------------------------------


def sharing_doc(mode: str, *arguments: dict[str, Any]) -> dict[str, Any]:
    doc = document("\n".join([
        "nodes:", "- {name: n1, allocatable: {cpu: 8, memory: 32Gi, nvidia.com/gpu: 2, pods: 110}}",
        "jobs:", "- {name: j0, minMember: 1, createdAt: 0, phase: Inqueue}",
        "- {name: j1, minMember: 1, createdAt: 1, phase: Inqueue}",
        "tasks:", "- {name: t0, job: j0, requests: {cpu: 1, nvidia.com/gpu: 500m}}",
        "- {name: t1, job: j1, requests: {cpu: 1, nvidia.com/gpu: 500m}}"]),
        plugin("predicates"),
        plugin("deviceshare", {mode: True, **(arguments[0] if arguments else {})}),
        actions="allocate")
    doc["now"] = NOW
    return doc


def test_gpu_sharing_mode_locks_the_node_and_number_mode_does_not() -> None:
    sharing = "deviceshare.GPUSharingEnable"
    number = "deviceshare.GPUNumberEnable"
    assert len(run(sharing_doc(sharing))["binds"]) == 2
    assert run(sharing_doc(sharing, LOCKED))["binds"] == {"default/t0": "n1"}
    assert len(run(sharing_doc(number, LOCKED))["binds"]) == 2


def test_pods_asking_whole_gpus_take_no_lock_in_sharing_mode() -> None:
    # Volcano's gpushare reads only volcano.sh/gpu-memory and gpu-number: a pod asking
    # whole nvidia.com/gpu gets the resource check alone, and no lock.
    doc = sharing_doc("deviceshare.GPUSharingEnable", LOCKED)
    for task in doc["tasks"]:
        task["requests"]["nvidia.com/gpu"] = 1
    assert run(doc)["binds"] == {"default/t0": "n1", "default/t1": "n1"}


def test_the_switch_is_no_longer_reported_as_having_no_effect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    run(vgpu_doc(LOCKED))
    assert "NodeLockEnable" not in caplog.text


# -- evictions undone, stale devices, reporting ------------------------------------------


RUNNING_VICTIM = (
    "- {name: v, job: run, phase: Running, node: n1, priorityClassName: low, requests: "
    "{cpu: 1, volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 2048, "
    "volcano.sh/vgpu-cores: 25}ANNOTATIONS}")


def victim_doc(annotated: bool) -> dict[str, Any]:
    annotations = (", annotations: {volcano.sh/vgpu-ids-new: 'GPU-n1-0,NVIDIA,2048,25:', "
                   "volcano.sh/bind-phase: success}") if annotated else ""
    doc = document("\n".join([
        "priorityClasses: [{name: low, value: 10}, {name: high, value: 1000}]",
        "nodes:", vgpus.node_yaml("n1", 2),
        "jobs:", "- {name: run, minMember: 1, priorityClassName: low, phase: Running}",
        "- {name: q, minMember: 1, phase: Inqueue}",
        "tasks:", RUNNING_VICTIM.replace("ANNOTATIONS", annotations),
        vgpus.task_yaml("q0", "q", 2048)]),
        plugin("predicates"), vgpu_lock(**LOCKED))
    doc["now"] = NOW
    return doc


@pytest.mark.parametrize("annotated", [True, False])
def test_an_eviction_undone_takes_the_lock_and_its_refusal_is_ignored(annotated: bool) -> None:
    """Volcano's ``unevict`` runs the allocate handlers again (``Allocate`` takes the
    lock) and ignores their errors."""
    parsed = parse_scenario(victim_doc(annotated), source="<test>")
    ssn = Session.open(parsed.build_cache(), parsed.configuration)
    node = ssn.nodes["n1"]
    victim = ssn.jobs["default/run"].tasks["default/v"]
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")
    stmt.discard()  # a preemption given up
    assert victim.status is TaskStatus.RUNNING and node.annotations[VGPU_LOCK] == NOW_TEXT
    node.check_invariants()
    # The lock it took refuses the next placement on the node.
    with pytest.raises(SchedulingError, match="has been locked within 5 minutes"):
        Statement(ssn).allocate(ssn.jobs["default/q"].tasks["default/q0"], "n1")
    # Undone again with the lock held: the refusal does not escape the discard.
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")
    stmt.discard()
    assert victim.status is TaskStatus.RUNNING
    node.check_invariants()


def test_a_pending_pod_s_stale_devices_are_chosen_again_under_the_lock() -> None:
    """A pending pod naming devices (a stale annotation) gets them chosen again, as
    Volcano's ``Allocate`` chooses them, and so takes the lock."""
    doc = vgpu_doc(LOCKED)
    doc["tasks"][0]["annotations"] = {"volcano.sh/vgpu-ids-new": "GPU-n1-1,NVIDIA,2048,25:"}
    assert run(doc)["binds"] == {"default/t0-0": "n1"}
    fresh = f"hamivgpu: '{format_lock_time(NOW - 60)}'"
    doc = vgpu_doc(LOCKED, node_annotations=fresh)
    doc["tasks"][0]["annotations"] = {"volcano.sh/vgpu-ids-new": "GPU-n1-1,NVIDIA,2048,25:"}
    assert run(doc)["binds"] == {}


def test_a_refusal_overcome_on_another_node_does_not_decide_the_verdict() -> None:
    report = explain(parse_scenario(vgpu_doc(LOCKED, nodes=2, jobs=2), source="<test>"),
                     job="default/j0")
    assert report["verdict"] == "placed"
    doc = vgpu_doc(LOCKED, jobs=2)
    report = explain(parse_scenario(doc, source="<test>"), job="default/j1")
    assert report["decidedBy"] == ["deviceshare"]


@pytest.mark.parametrize(("arguments", "inert"), [
    # The number mode locks for a pod asking volcano.sh/gpu-memory too (gpushare's
    # Allocate), so the switch has an effect there (it was reported as having none).
    ({"deviceshare.GPUNumberEnable": True}, False),
    ({}, True),
])
def test_the_switch_with_nothing_to_lock_is_reported_as_having_no_effect(
    arguments: dict[str, Any], inert: bool, capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
) -> None:
    from batchsched.cli import main

    conf = tmp_path / "scheduler.conf"
    conf.write_text(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "deviceshare", "arguments": {**arguments, **LOCKED}}]}]}))
    main(["conf", "validate", str(conf)])
    out = capsys.readouterr().out
    assert ("deviceshare.NodeLockEnable" in out and "no effect" in out) is inert


def test_a_hard_topology_job_asking_vgpus_waits_under_the_lock() -> None:
    """The hypernode search's dry run takes the lock; the placement made again then
    finds it (Volcano's ``RecoverOperations`` fails the same way)."""
    body = "\n".join([
        "nodes:", vgpus.node_yaml("s0-n1", 2), vgpus.node_yaml("s1-n1", 2),
        "hyperNodes:",
        "- {name: s0, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: '^s0-'}}}]}",
        "- {name: s1, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: '^s1-'}}}]}",
        "jobs:", "- {name: a, minMember: 1, phase: Inqueue, "
                 "networkTopology: {mode: hard, highestTierAllowed: 1}}",
        "tasks:", vgpus.task_yaml("a-0", "a", 2048)])

    def binds(*arguments: dict[str, Any]) -> dict[str, str]:
        doc = document(body, plugin("gang"), plugin("predicates"),
                       plugin("network-topology-aware"), vgpu_lock(**(arguments[0] if arguments
                                                                     else {})),
                       actions="allocate")
        doc["now"] = NOW
        return dict(run(doc)["binds"])

    assert binds() == {"default/a-0": "s0-n1"}
    assert binds(LOCKED) == {}


BOTH_KINDS = """
version: 1
now: "2024-01-01T00:10:00Z"
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}]
  - plugins:
    - name: predicates
    - name: deviceshare
      arguments: {deviceshare.VGPUEnable: true, deviceshare.AscendHAMiVNPUEnable: true,
                  deviceshare.NodeLockEnable: true}
nodes:
- name: n1
  allocatable: {cpu: 64, memory: 256Gi, pods: 110, huawei.com/Ascend310P: 8,
                volcano.sh/vgpu-number: 20, volcano.sh/vgpu-memory: 32768,
                volcano.sh/vgpu-cores: 200}
  annotations:
    hamivgpu: "2024-01-01T00:09:00Z"
    volcano.sh/node-vgpu-register: "GPU-a,10,16384,NVIDIA-Tesla-T4,true,hami-core:"
    hami.io/node-register-Ascend310P: '[{"id":"npu-0","count":4,"devmem":21527,"devcore":8}]'
jobs:
- {name: j1, minMember: 1, phase: Inqueue}
tasks:
- {name: t1, job: j1, requests: {cpu: 1, volcano.sh/vgpu-number: 1,
                                 volcano.sh/vgpu-memory: 1024, huawei.com/Ascend310P: 1,
                                 huawei.com/Ascend310P-memory: 3000}}
"""


def test_a_kind_refusing_ends_the_event_before_the_next_kind_takes_its_lock() -> None:
    """Volcano's predicates handler returns at the first device kind that refuses: the
    vGPU lock held on n1 refuses t1, and the Ascend kind after it never runs, so no
    Ascend lock is left on the node to refuse other pods for five minutes."""
    scenario = parse_scenario(yaml.safe_load(BOTH_KINDS), source="<both kinds>")
    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert not cache.binds
    assert "hami.io/mutex.lock" not in cache.nodes["n1"].annotations


LOCKED_BACKFILL = """
version: 1
now: "2024-01-01T00:10:00Z"
config:
  actions: "enqueue, allocate, backfill"
  tiers:
  - plugins: [{name: gang}]
  - plugins:
    - name: predicates
    - name: deviceshare
      arguments: {deviceshare.AscendHAMiVNPUEnable: true, deviceshare.NodeLockEnable: true}
nodes:
- name: n1
  allocatable: {cpu: 64, memory: 256Gi, pods: 110, huawei.com/Ascend310P: 8}
  annotations:
    hami.io/mutex.lock: "2024-01-01T00:09:00Z"
    hami.io/node-register-Ascend310P: '[{"id":"npu-0","count":4,"devmem":21527,"devcore":8}]'
jobs:
- {name: j1, minMember: 1, phase: Inqueue}
tasks:
- {name: t1, job: j1, requests: {huawei.com/Ascend310P-memory: 3000}}
"""


def test_backfill_binds_what_a_device_kind_refuses_as_volcano_s_session_allocate() -> None:
    """A task asking card memory alone is best-effort: backfill places it through
    Volcano's Session.Allocate, which reads no handler's error. The held Ascend lock
    refuses the cards, and the pod is bound all the same, with no cards."""
    decisions = run_scenario(parse_scenario(yaml.safe_load(LOCKED_BACKFILL), source="<lock>"))
    assert decisions.binds == {"default/t1": "n1"}
    assert not decisions.vnpu_devices
