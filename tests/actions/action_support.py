"""Shared helpers for the action tests: small test plugins and a scenario runner.

The test plugins make one behaviour at a time observable without depending on
the built-in plugins' policies:

* ``test-label-score``: node-order score = the node's ``score`` label;
* ``test-selector``: predicate checking the task's nodeSelector and the node's
  ``pods`` allocatable, with the predicates plugin's wording;
* ``test-vote``: job-enqueueable vote read from the pod group's ``test/vote``
  annotation (permit / reject / abstain); job-enqueued records the job id in
  ``ssn.extra["enqueued"]``; with argument ``explain: true`` a rejection records
  its own event;
* ``test-overused``: a queue annotated ``test/overused: "true"`` is overused;
* ``test-ready``: job ready = ready tasks (no best-effort credit) >= minMember.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import yaml

from batchsched.api.fit import FitError
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.task import TaskInfo
from batchsched.api.types import FitStatusCode, TaskStatus, Vote
from batchsched.cache.memory import MemoryCache
from batchsched.framework.arguments import Arguments
from batchsched.framework.events import RecordedEvent
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.scenario import parse_scenario
from batchsched.scheduler import run_actions


class _Plugin:
    name = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_close(self, ssn: Session) -> None:
        pass


class LabelScorePlugin(_Plugin):
    name = "test-label-score"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda _t, n: float(n.labels.get("score", "0")))


class SelectorPlugin(_Plugin):
    name = "test-selector"

    def on_session_open(self, ssn: Session) -> None:
        def predicate(task: TaskInfo, node: NodeInfo) -> FitError | None:
            if len(node.tasks) >= node.max_task_num:
                return FitError.of(task.namespace, task.name, node.name,
                                   "node(s) pod number exceeded",
                                   code=FitStatusCode.UNSCHEDULABLE)
            if any(node.labels.get(k) != v for k, v in task.node_selector.items()):
                return FitError.of(task.namespace, task.name, node.name,
                                   "node(s) didn't match Pod's node affinity/selector",
                                   code=FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
            return None

        ssn.add_predicate_fn(self.name, predicate)


class VotePlugin(_Plugin):
    name = "test-vote"

    def on_session_open(self, ssn: Session) -> None:
        votes = {"permit": Vote.PERMIT, "reject": Vote.REJECT, "abstain": Vote.ABSTAIN}
        explain = self.arguments.get_bool("explain", False)

        def enqueueable(job: JobInfo) -> int:
            vote = votes[job.podgroup.annotations.get("test/vote", "abstain")]
            if vote == Vote.REJECT and explain:
                ssn.record_event(job.uid, "Normal", "Unschedulable", "test-vote says no")
            return int(vote)

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(
            self.name, lambda job: ssn.extra.setdefault("enqueued", []).append(job.uid)
        )


class OverusedPlugin(_Plugin):
    name = "test-overused"

    def on_session_open(self, ssn: Session) -> None:
        def overused(queue: QueueInfo) -> bool:
            return queue.annotations.get("test/overused") == "true"

        ssn.add_overused_fn(self.name, overused)


class ReadyPlugin(_Plugin):
    name = "test-ready"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_job_ready_fn(self.name, lambda job: job.ready_task_num() >= job.min_available)


class _TestPlugins:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec(cls.name, cls) for cls in (
            LabelScorePlugin, SelectorPlugin, VotePlugin, OverusedPlugin, ReadyPlugin)]


def make_registry() -> Registry:
    registry = Registry(autoload=False)
    registry.register(_TestPlugins(), name="action-test-plugins")
    return registry


REGISTRY = make_registry()


@attrs.define
class Outcome:
    """A session after its actions ran and it closed."""

    ssn: Session
    cache: MemoryCache

    @property
    def binds(self) -> dict[str, str]:
        return {b.task: b.node for b in self.cache.binds}

    @property
    def bind_order(self) -> list[str]:
        return [b.task for b in self.cache.binds]

    def task(self, uid: str) -> TaskInfo:
        for job in self.ssn.jobs.values():
            if uid in job.tasks:
                return job.tasks[uid]
        raise KeyError(uid)

    def status(self, uid: str) -> TaskStatus:
        return self.task(uid).status

    def job(self, uid: str) -> JobInfo:
        return self.ssn.jobs[uid]

    def events(self, obj: str, reason: str | None = None) -> list[RecordedEvent]:
        return [e for e in self.ssn.events
                if e.object == obj and (reason is None or e.reason == reason)]


def run_document(text: str, *, before_actions: Callable[[Session], None] | None = None,
                 registry: Registry | None = None) -> Outcome:
    """Parse a YAML scenario, open a session, run its actions, close it."""
    document: dict[str, Any] = yaml.safe_load(textwrap.dedent(text))
    document.setdefault("version", 1)
    document.setdefault("name", "action test")
    return run_parsed(document, before_actions=before_actions, registry=registry)


def run_parsed(document: dict[str, Any], *, before_actions: Callable[[Session], None] | None = None,
               registry: Registry | None = None) -> Outcome:
    scenario = parse_scenario(document, source="<action test>")
    cache = scenario.build_cache()
    ssn = Session.open(cache, scenario.configuration, registry=registry or REGISTRY)
    if before_actions is not None:
        before_actions(ssn)
    run_actions(ssn)
    ssn.close()
    return Outcome(ssn, cache)


def plugins(*names: str) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


def config(
    actions: str, *tiers: Iterable[str], **action_arguments: dict[str, Any]
) -> dict[str, Any]:
    """A configuration document; omitted enable flags default to true, as in Volcano files."""
    out: dict[str, Any] = {"actions": actions, "tiers": [{"plugins": plugins(*t)} for t in tiers]}
    if action_arguments:
        out["configurations"] = [{"name": k, "arguments": v} for k, v in action_arguments.items()]
    return out
