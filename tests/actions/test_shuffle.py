"""shuffle: Volcano's TestShuffle (pkg/scheduler/actions/shuffle, Apache-2.0), and the
victims of tdm taking effect through it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.plugin import PluginSpec, hookimpl
from batchsched.scenario import parse_scenario, run_scenario

LOW, HIGH = 10, 100


class LowPriorityVictims:
    """Volcano's test plugin: every low-priority candidate is a victim."""

    name = "fake"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Any) -> None:
        ssn.add_victim_tasks_fn(self.name, lambda tasks: [t for t in tasks if t.priority == LOW])

    def on_session_close(self, ssn: Any) -> None:
        """Nothing to write back."""


class _Provider:
    @hookimpl
    def batchsched_register_plugins(self) -> Iterable[PluginSpec]:
        return [PluginSpec("fake", LowPriorityVictims)]


def registry() -> Registry:
    registry = Registry(autoload=False)
    registry.register(_Provider(), name="shuffle-test")
    return registry


def test_select_pods_with_low_priority_and_evict_them() -> None:
    placement = {"pod1-1": ("node1", LOW), "pod1-2": ("node1", HIGH), "pod1-3": ("node1", HIGH),
                 "pod2-1": ("node1", LOW), "pod2-2": ("node2", HIGH),
                 "pod3-1": ("node2", LOW), "pod3-2": ("node2", HIGH)}
    doc = {
        "version": 1, "name": "select pods with low priority and evict them",
        "config": {"actions": "shuffle", "tiers": [{"plugins": [
            {"name": "fake", "enabledVictim": True}]}]},
        "nodes": [{"name": n, "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}
                  for n in ("node1", "node2")],
        "jobs": [{"name": f"pg{i}", "namespace": "test", "minMember": 0, "phase": "Running"}
                 for i in (1, 2, 3)],
        "tasks": [{"name": name, "namespace": "test", "job": f"pg{name[3]}", "node": node,
                   "phase": "Running", "priority": priority,
                   "requests": {"cpu": 1, "memory": "2G"}}
                  for name, (node, priority) in placement.items()],
    }
    decisions = run_scenario(parse_scenario(doc, source="<test>"), registry=registry())
    assert sorted(decisions.evicted) == ["test/pod1-1", "test/pod2-1", "test/pod3-1"]
    # Volcano's ssn.Evict: a Warning on the pod and a Normal on its pod group, each.
    evicts = sorted((e["object"], e["type"], e["message"]) for e in decisions.events
                    if e["reason"] == "Evict")
    assert evicts == sorted(
        [(f"test/pod{i}-1", "Warning", "Pod is evicted, because of shuffle")
         for i in (1, 2, 3)] + [(f"test/pg{i}", "Normal", "shuffle") for i in (1, 2, 3)])


def test_tdm_victims_on_a_revocable_node_outside_its_window_are_evicted() -> None:
    doc = {
        "version": 1, "name": "tdm through shuffle", "now": "2024-01-01T12:00:00Z",
        "config": {"actions": "shuffle", "tiers": [{"plugins": [
            {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": "0:00-1:00"}}]}]},
        "nodes": [{"name": "revocable", "labels": {"volcano.sh/revocable-zone": "rz1"},
                   "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}},
                  {"name": "regular", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": "batch", "minMember": 0, "phase": "Running"}],
        "tasks": [{"name": "on-revocable", "job": "batch", "node": "revocable",
                   "phase": "Running", "annotations": {"volcano.sh/preemptable": "true"},
                   "requests": {"cpu": 1}},
                  {"name": "on-regular", "job": "batch", "node": "regular",
                   "phase": "Running", "annotations": {"volcano.sh/preemptable": "true"},
                   "requests": {"cpu": 1}}],
    }
    decisions = run_scenario(parse_scenario(doc, source="<test>"))
    assert decisions.evicted == ["default/on-revocable"]
