"""Shared helpers for the policy-plugin tests (gang, priority, conformance, overcommit,
sla, pdb, resourcequota): open a session on a scenario document or a hand-built
cluster with only the tiers a test names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import yaml

from batchsched.api import (
    ClusterInfo,
    JobInfo,
    NodeInfo,
    PodGroup,
    PodGroupPhase,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from batchsched.conf import SchedulerConfiguration, parse_configuration
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.scenario import Decisions, parse_scenario, run_scenario

PluginEntry = Mapping[str, Any]


@lru_cache(maxsize=1)
def registry() -> Registry:
    """The built-ins only (no third-party entry points)."""
    return Registry(autoload=False)


def configuration(*tiers: Sequence[PluginEntry], actions: str = "") -> SchedulerConfiguration:
    """A configuration with these tiers (each a list of plugin entries)."""
    return parse_configuration(
        {"actions": actions, "tiers": [{"plugins": list(tier)} for tier in tiers]}
    )


def open_cluster(cluster: ClusterInfo, *tiers: Sequence[PluginEntry]) -> Session:
    """A session on a hand-built cluster with the given tiers."""
    return Session.open(cluster, configuration(*tiers), registry=registry())


def scenario(text: str) -> dict[str, Any]:
    """A scenario document from YAML; ``version`` and ``name`` are filled in."""
    document: dict[str, Any] = yaml.safe_load(text)
    document.setdefault("version", 1)
    document.setdefault("name", "policy plugin test")
    return document


def open_scenario(document: Mapping[str, Any]) -> Session:
    """A session (with a cache) on a scenario document and its own configuration."""
    parsed = parse_scenario(document, source="<test>")
    return Session.open(parsed.build_cache(), parsed.configuration, registry=registry())


def run(document: Mapping[str, Any]) -> Decisions:
    """Run the document's actions in one session and return the decisions."""
    return run_scenario(parse_scenario(document, source="<test>"), registry=registry())


def make_task(
    name: str,
    *,
    job: str = "default/pg1",
    namespace: str = "default",
    status: TaskStatus = TaskStatus.PENDING,
    node: str = "",
    cpu: float = 1000,
    memory: float = 2**30,
    **fields: Any,
) -> TaskInfo:
    """A task with ``cpu`` millicores and ``memory`` bytes (both 0: best effort)."""
    request = Resource(cpu, memory) if cpu or memory else None
    return TaskInfo.create(namespace, name, job, request, status=status, node_name=node,
                           **fields)


def make_job(
    name: str,
    tasks: Sequence[TaskInfo] = (),
    *,
    namespace: str = "default",
    queue: str = "q1",
    min_member: int = 0,
    priority: int = 0,
    phase: PodGroupPhase = PodGroupPhase.PENDING,
    min_resources: Resource | None = None,
    **podgroup_fields: Any,
) -> JobInfo:
    podgroup = PodGroup(name, namespace, queue=queue, min_member=min_member, phase=phase,
                        min_resources=min_resources, **podgroup_fields)
    return JobInfo.from_podgroup(podgroup, priority=priority, tasks=tasks)


def cluster(
    jobs: Sequence[JobInfo] = (),
    nodes: Sequence[NodeInfo] = (),
    *,
    queues: Sequence[str] = ("q1",),
    now: float = 0.0,
    **fields: Any,
) -> ClusterInfo:
    """A cluster holding these jobs, nodes (their tasks placed on them) and queues."""
    node_map = {n.name: n for n in nodes}
    for job in jobs:
        for task in job.tasks.values():
            if task.node_name in node_map and task.status not in (
                TaskStatus.SUCCEEDED, TaskStatus.FAILED
            ):
                node_map[task.node_name].add_task(task)
    return ClusterInfo(
        nodes=node_map,
        jobs={j.uid: j for j in jobs},
        queues={q: QueueInfo(q) for q in queues},
        now=now,
        **fields,
    )
