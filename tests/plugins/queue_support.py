"""Helpers shared by the queue-share plugin tests (drf, proportion, capacity)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import yaml
from policy_support import registry, scenario

from batchsched.api import JobInfo, PodGroup, PodGroupPhase, Resource, TaskInfo
from batchsched.conf import parse_configuration
from batchsched.scenario import parse_scenario
from batchsched.scheduler import Scheduler

GI = 2**30
T = TypeVar("T")

#: Every enable flag a Volcano unit test leaves nil (disabled), for plugin entries that
#: switch on only what the Go test lists.
FLAGS = ("enableJobOrder", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
         "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder",
         "enablePredicate", "enableBestNode", "enableNodeOrder", "enableTargetJob",
         "enableReservedNodes", "enableJobEnqueued", "enabledVictim", "enableJobStarving",
         "enabledOverused", "enabledAllocatable", "enableHierarchy")


def only(name: str, *enabled: str, **arguments: Any) -> dict[str, Any]:
    """A plugin entry with just the ``enabled`` flags on (Go tests' nil flags are off)."""
    entry: dict[str, Any] = {"name": name}
    entry.update({flag: flag in enabled for flag in FLAGS})
    if arguments:
        entry["arguments"] = arguments
    return entry


TWO_CYCLES = """
queues: [%s]
nodes: [{name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}]
jobs:
- {name: pgA, namespace: ns1, queue: q1, minMember: 3, minResources: {cpu: 3, memory: 3Gi},
   phase: Inqueue}
tasks:
- {name: pA1, namespace: ns1, job: pgA, requests: {cpu: 1, memory: 1Gi}}
- {name: pA2, namespace: ns1, job: pgA, requests: {cpu: 1, memory: 1Gi}}
- {name: pA3, namespace: ns1, job: pgA, requests: {cpu: 1, memory: 1Gi}}
"""


def run_two_cycles(entry: dict[str, Any], queue: str) -> tuple[list[str], list[str]]:
    """Volcano's ``TestNoDoubleCountingForInqueueJobWithBindingTasks`` on one cache.

    Cycle 1 (allocate) places pgA's three tasks; the cache then holds them bound
    while pgA stays Inqueue. pgB (minResources 1 cpu / 1Gi, one task) arrives and
    cycle 2 runs enqueue, allocate. Returns the tasks bound in each cycle.
    """
    document = scenario(TWO_CYCLES % queue)
    document["config"] = {"actions": "allocate", "tiers": [{"plugins": [entry]}]}
    parsed = parse_scenario(document, source="<two cycles>")
    cache = parsed.build_cache()
    Scheduler(cache, parsed.configuration, registry=registry()).run_once()
    first = [b.task for b in cache.binds]
    assert cache.jobs["ns1/pgA"].podgroup.phase == PodGroupPhase.INQUEUE

    podgroup = PodGroup("pgB", "ns1", queue="q1", min_member=1,
                        min_resources=Resource(1000, GI))
    cache.add_job(JobInfo.from_podgroup(podgroup, tasks=[
        TaskInfo.create("ns1", "pB1", "ns1/pgB", Resource(1000, GI))]))
    second = parse_configuration({"actions": "enqueue, allocate",
                                  "tiers": [{"plugins": [entry]}]})
    Scheduler(cache, second, registry=registry()).run_once()
    return first, [b.task for b in cache.binds[len(first):]]


def yaml_list(text: str) -> list[Any]:
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, list)
    return loaded


def sign(value: float) -> int:
    return (value > 0) - (value < 0)


def assert_total_order(
    items: Sequence[T], compare: Callable[[T, T], float], *, transitive_ties: bool = True
) -> None:
    """``compare`` is antisymmetric and its strict order transitive over ``items``;
    with ``transitive_ties`` its ties are transitive too (a strict weak order)."""
    for a in items:
        for b in items:
            ab = sign(compare(a, b))
            assert ab == -sign(compare(b, a)), (a, b)
            for c in items:
                bc = sign(compare(b, c))
                if ab < 0 and bc < 0:
                    assert compare(a, c) < 0, (a, b, c)
                if transitive_ties and ab == 0 and bc == 0:
                    assert sign(compare(a, c)) == 0, (a, b, c)
