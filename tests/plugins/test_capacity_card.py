"""capacity-card: card detection, annotations, each extension point on a session, the
event wording, and a property over random clusters (no queue ever uses more of a card
model than its quota; every task with alternatives is charged the model of its node)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchsched.actions.allocate import AllocateAction
from batchsched.api import (
    ClusterInfo,
    FitStatusCode,
    JobInfo,
    NodeInfo,
    PodGroup,
    PodGroupPhase,
    QueueInfo,
    QueueState,
    Resource,
    TaskInfo,
    TaskStatus,
    Vote,
)
from batchsched.conf import parse_configuration
from batchsched.framework import Statement
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugins.capacity_card import CapacityCardPlugin, format_amount
from batchsched.plugins.capacity_card.cards import (
    CardAnnotationError,
    CardCatalog,
    detect_node_cards,
    parse_card_counts,
    parse_card_name,
)

GiB = 2**30
QUOTA = "volcano.sh/card.quota"
REQUEST = "volcano.sh/card.request"
NAME = "volcano.sh/card.name"
H200 = "NVIDIA-H200"
R4090 = "NVIDIA-GeForce-RTX-4090"
R4090D = "NVIDIA-GeForce-RTX-4090-D"
BOTH = f"{R4090}|{R4090D}"
SEED_QUOTA = (
    '{"NVIDIA-H200":3,"NVIDIA-H800":2,"NVIDIA-GeForce-RTX-4090":2,'
    '"NVIDIA-H800/mps-80g*1/2":2,"NVIDIA-H200/mig-1g.18gb-mixed":3,'
    '"NVIDIA-H200/mig-3g.71gb-mixed":1}'
)
_REGISTRY = Registry(autoload=False)


# -- builders ---------------------------------------------------------------------------------


def card_node(name: str, model: str, *, memory_mib: int = 143771, cpu: float = 64,
              scalars: Mapping[str, float] | None = None,
              labels: Mapping[str, str] | None = None) -> NodeInfo:
    """A node labelled with ``model``; ``scalars`` in whole units (cards, pods)."""
    amounts = {"pods": 110.0}
    amounts.update({k: v * 1000 for k, v in (scalars or {}).items()})
    all_labels = {"nvidia.com/gpu.product": model, "nvidia.com/gpu.count": "8",
                  "nvidia.com/gpu.memory": str(memory_mib), **(labels or {})}
    return NodeInfo.create(name, Resource(cpu * 1000, 512 * GiB, amounts), labels=all_labels)


def card_task(name: str, job: str, *, card: str = "", cpu: float = 1,
              scalars: Mapping[str, float] | None = None, status: TaskStatus = TaskStatus.PENDING,
              node: str = "") -> TaskInfo:
    requests = Resource(cpu * 1000, GiB, {k: v * 1000 for k, v in (scalars or {}).items()})
    annotations = {NAME: card} if card else {}
    return TaskInfo.create("default", name, f"default/{job}", requests, status=status,
                           node_name=node, annotations=annotations)


def card_job(name: str, tasks: Sequence[TaskInfo] = (), *, queue: str = "q1",
             min_member: int = 1, phase: PodGroupPhase = PodGroupPhase.INQUEUE,
             min_resources: Resource | None = None, request: str = "") -> JobInfo:
    annotations = {REQUEST: request} if request else {}
    podgroup = PodGroup(name, "default", queue=queue, min_member=min_member, phase=phase,
                        min_resources=min_resources, annotations=annotations)
    return JobInfo.from_podgroup(podgroup, tasks=tasks)


def queue(name: str = "q1", quota: str = "", **fields: Any) -> QueueInfo:
    return QueueInfo(name, annotations={QUOTA: quota} if quota else {}, **fields)


def open_session(nodes: Sequence[NodeInfo], jobs: Sequence[JobInfo],
                 queues: Sequence[QueueInfo], **arguments: Any) -> Session:
    """A session with only capacity-card (plus gang for allocate) enabled."""
    node_map = {n.name: n for n in nodes}
    for job in jobs:
        for task in job.tasks.values():
            if task.node_name in node_map:
                node_map[task.node_name].add_task(task)
    snapshot = ClusterInfo(nodes=node_map, jobs={j.uid: j for j in jobs},
                           queues={q.name: q for q in queues}, now=1.0)
    configuration = parse_configuration({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "capacity-card", "arguments": arguments}]}]})
    return Session.open(snapshot, configuration, registry=_REGISTRY)


def plugin_of(ssn: Session) -> CapacityCardPlugin:
    plugin = ssn.plugins["capacity-card"]
    assert isinstance(plugin, CapacityCardPlugin)
    return plugin


def events_of(ssn: Session, obj: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in ssn.events if e.object == obj]


# -- card detection ----------------------------------------------------------------------------


def test_seed_node_offers_whole_cards_and_mig_slices() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 7, "nvidia.com/mig-3g.71gb": 1,
                                          "nvidia.com/mig-1g.18gb": 3, "rdma/hca": 4})
    cards = detect_node_cards(node)
    assert cards is not None
    assert dict(cards.resources) == {
        H200: "nvidia.com/gpu",
        f"{H200}/mig-1g.18gb-mixed": "nvidia.com/mig-1g.18gb",
        f"{H200}/mig-3g.71gb-mixed": "nvidia.com/mig-3g.71gb",
    }
    assert cards.amounts[H200] == 7000
    assert cards.count == 8


def test_mps_name_rounds_memory_to_gib_and_needs_replicas() -> None:
    shared = {"nvidia.com/gpu.shared": 4}
    node = card_node("n1", "NVIDIA-H800", memory_mib=81559, scalars=shared,
                     labels={"nvidia.com/gpu.replicas": "2"})
    cards = detect_node_cards(node)
    assert cards is not None and dict(cards.resources) == {
        "NVIDIA-H800/mps-80g*1/2": "nvidia.com/gpu.shared"}
    without_replicas = detect_node_cards(card_node("n2", "NVIDIA-H800", scalars=shared))
    assert without_replicas is not None and not without_replicas.resources


def test_whole_card_prefers_the_resource_named_like_the_label() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/aaa": 1, "nvidia.com/gpu": 8})
    cards = detect_node_cards(node)
    assert cards is not None and cards.resources[H200] == "nvidia.com/gpu"
    other_vendor = NodeInfo.create("n2", Resource(0, 0, {"huawei.com/Ascend910": 8000}),
                                   labels={"huawei.com/npu.product": "Ascend-910B",
                                           "huawei.com/npu.memory": "65536"})
    cards = detect_node_cards(other_vendor)
    assert cards is not None and dict(cards.resources) == {"Ascend-910B": "huawei.com/Ascend910"}


def test_nodes_without_product_or_memory_label_offer_no_card() -> None:
    plain = NodeInfo.create("n1", Resource(1000, GiB, {"nvidia.com/gpu": 1000}))
    no_memory = NodeInfo.create("n2", Resource(1000, GiB, {"nvidia.com/gpu": 1000}),
                                labels={"nvidia.com/gpu.product": H200})
    assert detect_node_cards(plain) is None
    assert detect_node_cards(no_memory) is None


def test_catalog_sums_models_and_derives_slice_resources_of_vanished_nodes() -> None:
    catalog = CardCatalog.from_nodes([card_node("a", H200, scalars={"nvidia.com/gpu": 8}),
                                      card_node("b", H200, scalars={"nvidia.com/gpu": 4})])
    assert catalog.totals == {H200: 12000}
    assert catalog.resource_for("X/mig-1g.10gb-mixed") == "nvidia.com/mig-1g.10gb"
    assert catalog.resource_for("X/mps-80g*1/2") == "nvidia.com/gpu.shared"
    assert catalog.resource_for("Unknown-Model") is None


# -- annotations -------------------------------------------------------------------------------


def test_quota_counts_are_milli_units() -> None:
    assert parse_card_counts(SEED_QUOTA, alternatives=False)[H200] == 3000
    assert parse_card_counts("  ", alternatives=False) == {}
    assert parse_card_counts('{" A | B ": 2}', alternatives=True) == {"A|B": 2000}


@pytest.mark.parametrize("text", [
    '{"A": 3', "[1, 2]", '{"A": "3"}', '{"A": -1}', '{"A": 1.5}', '{"A": true}',
    '{"A|B": 1}', '{"": 1}', '{"A": 1, "A": 2}', '{"A": NaN}',
    '{"A": 1' + "0" * 400 + "}",  # raised OverflowError out of the session
])
def test_malformed_quota_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(CardAnnotationError):
        parse_card_counts(text, alternatives=False)


def test_card_name_alternatives_keep_their_order() -> None:
    assert parse_card_name(f" {R4090} | {R4090D} |{R4090}") == (R4090, R4090D)
    with pytest.raises(CardAnnotationError):
        parse_card_name("A||B")


def test_amounts_print_in_the_seed_s_units() -> None:
    # The seed's example: "requested <5000>" for five cards; memory in MiB as the
    # pull request prints it; each number as Go's %v prints a float64.
    assert format_amount(H200, 5000) == "5000"
    assert format_amount(H200, 2500.5) == "2500.5"
    assert format_amount("cpu", 4000) == "4000"
    assert format_amount("memory", 4 * GiB) == "4096 Mi"
    assert format_amount("memory", 1000) == "0.00095367431640625 Mi"
    assert format_amount(H200, 3e6) == "3e+06"


# -- queue capability ------------------------------------------------------------------------


def test_capability_takes_written_cpu_memory_and_the_cluster_remainder_elsewhere() -> None:
    node = card_node("n1", H200, cpu=10, scalars={"nvidia.com/gpu": 8})
    capped = queue("capped", SEED_QUOTA, capability=Resource(4000, 0),
                   defined={"capability": frozenset({"cpu"})})
    reserved = queue("reserved", guarantee=Resource(6000, 0))
    ssn = open_session([node], [], [capped, reserved, queue("open")])
    attrs = plugin_of(ssn).queues
    assert attrs["capped"].capability.milli_cpu == 4000
    assert attrs["capped"].capability.memory == 512 * GiB
    assert attrs["open"].capability.milli_cpu == 4000       # 10 - 6 guaranteed elsewhere
    assert attrs["reserved"].capability.milli_cpu == 10000  # its own guarantee back
    assert attrs["capped"].capability.scalars[H200] == 3000
    assert attrs["open"].capability.scalars == {}


# -- job enqueueable ---------------------------------------------------------------------------


def test_enqueue_refusal_uses_the_seed_wording_and_units() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    job = card_job("cr-job", queue="cr-queue1", phase=PodGroupPhase.PENDING,
                   request='{"NVIDIA-H200": 5}',
                   min_resources=Resource(0, 0, {"nvidia.com/gpu": 5000}))
    ssn = open_session([node], [job], [queue("cr-queue1", SEED_QUOTA)])
    assert plugin_of(ssn).job_enqueueable(job) is Vote.REJECT
    assert events_of(ssn, "default/cr-job") == [(
        "InsufficientScalarQuota",
        "Queue <cr-queue1> has insufficient <NVIDIA-H200> quota: requested <5000>, total "
        "would be <5000>, but capability is <3000>",
    )]


def test_enqueue_counts_allocated_inqueue_and_elastic() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    running = card_job("running", [
        card_task("r0", "running", card=H200, scalars={"nvidia.com/gpu": 1},
                  status=TaskStatus.RUNNING, node="n1")], phase=PodGroupPhase.RUNNING)
    admitted = card_job("admitted", request='{"NVIDIA-H200": 1}')
    pending = card_job("pending", phase=PodGroupPhase.PENDING, request='{"NVIDIA-H200": 2}',
                       min_resources=Resource(0, 0, {"nvidia.com/gpu": 2000}))
    small = card_job("small", phase=PodGroupPhase.PENDING, request='{"NVIDIA-H200": 1}',
                     min_resources=Resource(0, 0, {"nvidia.com/gpu": 1000}))
    ssn = open_session([node], [running, admitted, pending, small],
                       [queue("q1", '{"NVIDIA-H200": 3}')])
    plugin = plugin_of(ssn)
    assert plugin.queues["q1"].allocated.scalars == {H200: 1000}
    assert plugin.queues["q1"].inqueue.scalars == {H200: 1000}
    assert plugin.job_enqueueable(pending) is Vote.REJECT   # 2 + 1 + 1 > 3
    assert plugin.job_enqueueable(small) is Vote.PERMIT     # 1 + 1 + 1 <= 3
    plugin.job_enqueued(small)
    assert plugin.queues["q1"].inqueue.scalars == {H200: 2000}


def test_enqueue_prefers_the_tasks_requests_over_the_annotation() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    job = card_job("deploy", [card_task("p0", "deploy", card=H200, scalars={"nvidia.com/gpu": 1})],
                   phase=PodGroupPhase.PENDING, request='{"NVIDIA-H200": 9}',
                   min_resources=Resource(1000, 0, {"nvidia.com/gpu": 1000}))
    ssn = open_session([node], [job], [queue("q1", '{"NVIDIA-H200": 1}')])
    request, problem = plugin_of(ssn).job_request(job)
    assert problem is None and request.scalars == {H200: 1000} and request.milli_cpu == 1000
    assert plugin_of(ssn).job_enqueueable(job) is Vote.PERMIT


def test_malformed_job_request_and_mixed_alternatives_keep_the_job_pending() -> None:
    nodes = [card_node("n1", R4090, scalars={"nvidia.com/gpu": 4}),
             card_node("n2", "NVIDIA-H20", scalars={"nvidia.com/mig-1g.24gb": 4})]
    broken = card_job("broken", phase=PodGroupPhase.PENDING, request='{"NVIDIA-H200": 2',
                      min_resources=Resource(1000, 0))
    mixed = card_job("mixed", phase=PodGroupPhase.PENDING,
                     request=f'{{"{R4090}|NVIDIA-H20/mig-1g.24gb-mixed": 1}}',
                     min_resources=Resource(1000, 0))
    ssn = open_session(nodes, [broken, mixed], [queue("q1", '{"NVIDIA-GeForce-RTX-4090": 4}')])
    plugin = plugin_of(ssn)
    assert plugin.job_enqueueable(broken) is Vote.REJECT
    assert plugin.job_enqueueable(mixed) is Vote.REJECT
    [(reason, message)] = events_of(ssn, "default/broken")
    assert reason == "InvalidCardRequest" and "volcano.sh/card.request" in message
    [(reason, message)] = events_of(ssn, "default/mixed")
    assert reason == "InvalidCardRequest"
    assert "nvidia.com/gpu" in message and "nvidia.com/mig-1g.24gb" in message


def test_cpu_memory_only_jobs_are_checked_against_cpu_memory() -> None:
    node = card_node("n1", H200, cpu=8, scalars={"nvidia.com/gpu": 8})
    job = card_job("cpu", phase=PodGroupPhase.PENDING, min_resources=Resource(5000, 0))
    capped = queue("q1", capability=Resource(4000, 0), defined={"capability": frozenset({"cpu"})})
    ssn = open_session([node], [job], [capped])
    assert plugin_of(ssn).job_enqueueable(job) is Vote.REJECT
    assert events_of(ssn, "default/cpu") == [(
        "InsufficientCPUQuota",
        "Queue <q1> has insufficient CPU quota: requested <5000>, total would be <5000>, "
        "but capability is <4000>",
    )]


def test_a_job_refused_on_memory_is_worded_as_the_pull_request_words_it() -> None:
    # The pull request's job message on memory names the queue without brackets (its
    # task message has them), memory in MiB.
    node = card_node("n1", H200, cpu=8, scalars={"nvidia.com/gpu": 8})
    job = card_job("mem", phase=PodGroupPhase.PENDING, min_resources=Resource(0, 6 * GiB))
    capped = queue("q1", capability=Resource(0, 4 * GiB),
                   defined={"capability": frozenset({"memory"})})
    ssn = open_session([node], [job], [capped])
    assert plugin_of(ssn).job_enqueueable(job) is Vote.REJECT
    assert events_of(ssn, "default/mem") == [(
        "InsufficientMemoryQuota",
        "Queue q1 has insufficient memory quota: requested <6144 Mi>, total would be "
        "<6144 Mi>, but capability is <4096 Mi>",
    )]


# -- allocatable, predicate, node order -----------------------------------------------------


def _multi_cluster(quota: str) -> tuple[list[NodeInfo], JobInfo, TaskInfo]:
    nodes = [card_node("n-4090d", R4090D, scalars={"nvidia.com/gpu": 4}),
             card_node("n-4090", R4090, scalars={"nvidia.com/gpu": 4}),
             card_node("n-h200", H200, scalars={"nvidia.com/gpu": 8})]
    task = card_task("p0", "infer", card=BOTH, scalars={"nvidia.com/gpu": 1})
    return nodes, card_job("infer", [task]), task


def test_alternatives_are_scored_in_the_order_given() -> None:
    nodes, job, task = _multi_cluster(f'{{"{R4090}": 1, "{R4090D}": 1}}')
    ssn = open_session(nodes, [job], [queue("q1", f'{{"{R4090}": 1, "{R4090D}": 1}}')],
                       nodeOrderWeight=2)
    scores = {n.name: ssn.node_order(task, n) for n in nodes}
    assert scores == {"n-4090d": 100.0, "n-4090": 200.0, "n-h200": 0.0}


def test_predicate_keeps_alternatives_off_unrequested_models_and_used_up_quotas() -> None:
    quota = f'{{"{R4090}": 1, "{R4090D}": 1, "{H200}": 8}}'
    nodes, job, task = _multi_cluster(quota)
    holder = card_job("holder", [card_task("h0", "holder", card=R4090,
                                           scalars={"nvidia.com/gpu": 1},
                                           status=TaskStatus.RUNNING, node="n-4090")],
                      phase=PodGroupPhase.RUNNING)
    ssn = open_session(nodes, [job, holder], [queue("q1", quota)])
    by_name = {n.name: n for n in nodes}
    assert ssn.predicate(task, by_name["n-4090d"]) is None
    quota_used = ssn.predicate(task, by_name["n-4090"])
    assert quota_used is not None
    assert quota_used.reasons == [f"queue q1 has no {R4090} quota left"]
    assert quota_used.statuses[0].code == FitStatusCode.UNSCHEDULABLE
    wrong_model = ssn.predicate(task, by_name["n-h200"])
    assert wrong_model is not None and wrong_model.unresolvable
    assert ssn.allocatable(ssn.queues["q1"], task)  # the 4090-D still has quota


def test_allocatable_refusal_for_alternatives_lists_each_model() -> None:
    quota = f'{{"{R4090}": 1, "{R4090D}": 0}}'
    nodes, job, task = _multi_cluster(quota)
    holder = card_job("holder", [card_task("h0", "holder", card=R4090,
                                           scalars={"nvidia.com/gpu": 1},
                                           status=TaskStatus.RUNNING, node="n-4090")],
                      phase=PodGroupPhase.RUNNING)
    ssn = open_session(nodes, [job, holder], [queue("q1", quota)])
    assert not ssn.allocatable(ssn.queues["q1"], task)
    assert not ssn.allocatable(ssn.queues["q1"], task)   # recorded once per session
    assert events_of(ssn, "default/p0") == [(
        "InsufficientScalarQuota",
        f"Queue <q1> has insufficient <{BOTH}> quota: requested <1000>, total would be "
        "<2000|1000>, but capability is <1000|0>",
    )]


@pytest.mark.parametrize(("card", "scalars", "reason"), [
    ("A||B", {"nvidia.com/gpu": 1}, "InvalidCardRequest"),
    ("NVIDIA-Unknown", {"nvidia.com/gpu": 1}, "CardModelNotFound"),
    (H200, {"nvidia.com/mig-1g.18gb": 1}, "InvalidCardRequest"),
    (f"{H200}|{H200}/mig-1g.18gb-mixed", {"nvidia.com/gpu": 1}, "InvalidCardRequest"),
])
def test_unservable_card_requests_wait_with_an_event(
    card: str, scalars: dict[str, float], reason: str
) -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 7, "nvidia.com/mig-1g.18gb": 3})
    task = card_task("p0", "pg", card=card, scalars=scalars)
    ssn = open_session([node], [card_job("pg", [task])], [queue("q1", SEED_QUOTA)])
    assert not ssn.allocatable(ssn.queues["q1"], task)
    [(recorded, _message)] = events_of(ssn, "default/p0")
    assert recorded == reason
    assert ssn.predicate(task, node) is not None


def test_malformed_queue_quota_blocks_cards_only() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    card = card_task("p0", "pg", card=H200, scalars={"nvidia.com/gpu": 1})
    cpu = card_task("p1", "pg", cpu=1)
    ssn = open_session([node], [card_job("pg", [card, cpu])], [queue("q1", '{"NVIDIA-H200": 3')])
    assert not ssn.allocatable(ssn.queues["q1"], card)
    assert ssn.allocatable(ssn.queues["q1"], cpu)
    [(reason, message)] = events_of(ssn, "default/p0")
    assert reason == "InvalidCardQuota"
    assert message.startswith("Queue <q1> has an invalid volcano.sh/card.quota annotation")


def test_card_unlimited_cpu_memory_frees_card_tasks_only() -> None:
    node = card_node("n1", H200, cpu=8, scalars={"nvidia.com/gpu": 8})
    card = card_task("p0", "pg", card=H200, cpu=4, scalars={"nvidia.com/gpu": 1})
    cpu = card_task("p1", "pg", cpu=4)
    capped = queue("q1", '{"NVIDIA-H200": 2}', capability=Resource(1000, GiB),
                   defined={"capability": frozenset({"cpu", "memory"})})
    for unlimited in (True, False):
        ssn = open_session([node], [card_job("pg", [card, cpu])], [capped],
                           cardUnlimitedCpuMemory=unlimited)
        assert ssn.allocatable(ssn.queues["q1"], card) is unlimited
        assert not ssn.allocatable(ssn.queues["q1"], cpu)


def test_task_requesting_a_card_resource_without_a_name_does_not_fit_card_nodes() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    unnamed = card_task("p0", "pg", scalars={"nvidia.com/gpu": 1})
    cpu_only = card_task("p1", "pg")
    ssn = open_session([node], [card_job("pg", [unnamed, cpu_only])], [queue("q1", SEED_QUOTA)])
    refused = ssn.predicate(unnamed, node)
    assert refused is not None
    assert refused.reasons == ["nvidia.com/gpu requested without volcano.sh/card.name"]
    assert ssn.predicate(cpu_only, node) is None


def test_closed_queue_takes_nothing() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    task = card_task("p0", "pg", card=H200, scalars={"nvidia.com/gpu": 1})
    job = card_job("pg", [task], phase=PodGroupPhase.PENDING, min_resources=Resource(1000, 0))
    ssn = open_session([node], [job], [queue("q1", SEED_QUOTA, state=QueueState.CLOSED)])
    assert not ssn.allocatable(ssn.queues["q1"], task)
    assert plugin_of(ssn).job_enqueueable(job) is Vote.REJECT


# -- events ------------------------------------------------------------------------------------


def test_alternatives_are_charged_their_node_model_and_refunded_exactly() -> None:
    quota = f'{{"{R4090}": 2, "{R4090D}": 2}}'
    nodes, job, task = _multi_cluster(quota)
    ssn = open_session(nodes, [job], [queue("q1", quota)])
    plugin = plugin_of(ssn)
    before = plugin.queues["q1"].allocated.clone()
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes["n-4090d"])
    assert plugin.charged[task.uid].model == R4090D
    assert plugin.queues["q1"].allocated.scalars[R4090D] == 1000
    assert R4090 not in plugin.queues["q1"].allocated.scalars
    stmt.discard()   # the task's node is cleared before the deallocate event fires
    assert plugin.queues["q1"].allocated == before
    assert task.uid not in plugin.charged


def test_evicting_a_running_task_refunds_its_charge() -> None:
    node = card_node("n1", H200, scalars={"nvidia.com/gpu": 8})
    running = card_task("r0", "pg", card=H200, scalars={"nvidia.com/gpu": 2},
                        status=TaskStatus.RUNNING, node="n1")
    ssn = open_session([node], [card_job("pg", [running], phase=PodGroupPhase.RUNNING)],
                       [queue("q1", SEED_QUOTA)])
    plugin = plugin_of(ssn)
    assert plugin.queues["q1"].allocated.scalars == {H200: 2000}
    stmt = Statement(ssn)
    stmt.evict(running, "test")
    assert plugin.queues["q1"].allocated.scalars == {H200: 0}
    stmt.discard()
    assert plugin.queues["q1"].allocated.scalars == {H200: 2000}


# -- property: quotas hold over random clusters -------------------------------------------------

MODELS = ("A", "B", "C")
SLICE = "A/mig-1g.10gb-mixed"
CARD_NAMES = (*MODELS, SLICE)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[NodeInfo], list[JobInfo], list[QueueInfo]]:
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        model = draw(st.sampled_from(MODELS))
        scalars = {"nvidia.com/gpu": draw(st.integers(1, 6))}
        if model == "A":
            scalars["nvidia.com/mig-1g.10gb"] = draw(st.integers(0, 3))
        nodes.append(card_node(f"n{i}", model, cpu=draw(st.integers(2, 16)), scalars=scalars))
    queue_names = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    queues = []
    for name in queue_names:
        # Most cards get a quota (a missing one is the same as 0 to the plugin).
        quota = {card: draw(st.integers(0, 6)) for card in CARD_NAMES
                 if draw(st.integers(0, 4)) < 4}
        queues.append(queue(name, "{" + ", ".join(f'"{k}": {v}' for k, v in quota.items())
                            + "}"))
    requests = st.one_of(
        st.sampled_from(MODELS).map(lambda m: (m, "nvidia.com/gpu")),
        st.just((SLICE, "nvidia.com/mig-1g.10gb")),
        st.lists(st.sampled_from(MODELS), min_size=2, max_size=3, unique=True).map(
            lambda ms: ("|".join(ms), "nvidia.com/gpu")),
    )
    jobs = []
    for j in range(draw(st.integers(1, 6))):
        tasks = []
        for t in range(draw(st.integers(1, 4))):
            card, resource = draw(requests)
            tasks.append(card_task(f"job{j}-pod-{t}", f"job{j}", card=card, cpu=0.5,
                                   scalars={resource: draw(st.integers(1, 2))}))
        jobs.append(card_job(f"job{j}", tasks, queue=draw(st.sampled_from(queue_names)),
                             min_member=draw(st.integers(1, min(2, len(tasks))))))
    return nodes, jobs, queues


def _node_card(node: NodeInfo, task: TaskInfo) -> tuple[str, float]:
    """The card name and amount a task placed on ``node`` uses, from the test's own model."""
    model = node.labels["nvidia.com/gpu.product"]
    if task.resreq.get("nvidia.com/mig-1g.10gb") > 0:
        return f"{model}/mig-1g.10gb-mixed", task.resreq.get("nvidia.com/mig-1g.10gb")
    return model, task.resreq.get("nvidia.com/gpu")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_allocate_never_exceeds_a_quota_and_charges_the_node_model(
    cluster: tuple[list[NodeInfo], list[JobInfo], list[QueueInfo]],
) -> None:
    nodes, jobs, queues = cluster
    ssn = open_session(nodes, jobs, queues)
    plugin = plugin_of(ssn)
    quotas = {q.name: parse_card_counts(q.annotations.get(QUOTA, ""), alternatives=False)
              for q in queues}

    def within_quota(_event: Event) -> None:
        for name, attr in plugin.queues.items():
            for card, used in attr.allocated.scalars.items():
                assert used <= quotas[name].get(card, 0.0), (name, card)

    ssn.add_event_handler(EventHandler(allocate=within_quota, plugin="test"))
    AllocateAction().execute(ssn)

    used: dict[tuple[str, str], float] = {}
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.status == TaskStatus.PENDING:
                continue
            card, amount = _node_card(ssn.nodes[task.node_name], task)
            alternatives = task.annotations[NAME].split("|")
            assert card in alternatives, (task.uid, card)
            assert plugin.charged[task.uid].model == card
            used[job.queue, card] = used.get((job.queue, card), 0.0) + amount
    for (queue_name, card), amount in used.items():
        assert amount <= quotas[queue_name].get(card, 0.0)
        assert plugin.queues[queue_name].allocated.scalars[card] == amount


@pytest.mark.parametrize("weight", [0, -1, float("nan"), float("inf")])
def test_a_node_order_weight_that_is_no_positive_number_is_said_and_replaced(
        weight: float, caplog: pytest.LogCaptureFixture) -> None:
    from batchsched.framework.arguments import Arguments

    with caplog.at_level("WARNING", logger="batchsched"):
        plugin = CapacityCardPlugin(Arguments({"nodeOrderWeight": weight}))
    assert plugin.node_order_weight == 1.0
    assert "argument 'nodeOrderWeight'" in caplog.text and "using 1.0 instead" in caplog.text
