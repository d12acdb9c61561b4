"""kube-scheduler's NodeUnschedulable and TaintToleration in the default profile: a
cordoned or tainted node took pods (the profile had neither plugin)."""

from __future__ import annotations

from typing import Any

from batchsched.cache.memory import MemoryCache
from batchsched.kube.taints import Taint, Toleration
from batchsched.kubesched import Framework, PodScheduler, default_profile
from batchsched.kubesched.builtin_plugins import (
    BUILTIN_KUBE_PLUGINS,
    NodeUnschedulable,
    TaintToleration,
)
from batchsched.kubesched.events import QueueingHint
from batchsched.kubesched.registry import Registry
from batchsched.scenario import parse_scenario


def cache(nodes: dict[str, dict[str, Any]], pod: dict[str, Any] | None = None) -> MemoryCache:
    doc = {
        "version": 1, "config": {"actions": ""},
        "nodes": [{"name": name, "allocatable": {"cpu": 4, "memory": "4Gi", "pods": 10},
                   **extra} for name, extra in nodes.items()],
        "jobs": [{"name": "j", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "p", "job": "j", "requests": {"cpu": 1}, **(pod or {})}],
    }
    return parse_scenario(doc, source="<test>").build_cache()


def placed(c: MemoryCache) -> tuple[str | None, str]:
    registry = Registry({spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS})
    (result,) = PodScheduler(c, Framework(registry, default_profile())).run(0.0)
    return result.node, result.status.message


def test_a_cordoned_node_takes_only_a_pod_tolerating_it() -> None:
    assert placed(cache({"n0": {"unschedulable": True}})) == (
        None, "0/1 nodes are available: 1 node(s) were unschedulable.")
    tolerant = {"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                 "operator": "Exists", "effect": "NoSchedule"}]}
    assert placed(cache({"n0": {"unschedulable": True}}, tolerant))[0] == "n0"


def test_a_taint_repels_a_pod_without_its_toleration() -> None:
    tainted = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    assert placed(cache({"n0": tainted})) == (
        None, "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}.")
    tolerant = {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                 "effect": "NoSchedule"}]}
    assert placed(cache({"n0": tainted}, tolerant))[0] == "n0"


def test_a_prefer_no_schedule_taint_lowers_the_node_s_score() -> None:
    # n0 would win on LeastAllocated (it is emptier); its PreferNoSchedule taint,
    # weighted 3, puts n1 first.
    soft = {"taints": [{"key": "spot", "effect": "PreferNoSchedule"}]}
    c = cache({"n0": {**soft, "allocatable": {"cpu": 64, "memory": "64Gi", "pods": 10}},
               "n1": {}})
    assert placed(c)[0] == "n1"


def test_a_node_whose_taint_goes_moves_the_pod_back() -> None:
    plugin = TaintToleration()
    c = cache({"n0": {"taints": [{"key": "a", "effect": "NoExecute"}]}})
    pod = next(iter(c.jobs["default/j"].tasks.values()))
    old = c.nodes["n0"]
    new = old.clone()
    new.taints = ()
    assert plugin.after_node_change(pod, old, new) is QueueingHint.QUEUE
    assert plugin.after_node_change(pod, new, new) is QueueingHint.QUEUE_SKIP
    new.taints = (Taint("b", "", "NoSchedule"),)
    assert plugin.after_node_change(pod, old, new) is QueueingHint.QUEUE_SKIP
    pod.tolerations = (Toleration("b", "Exists"),)
    assert plugin.after_node_change(pod, old, new) is QueueingHint.QUEUE


def test_a_taint_refuses_before_the_resources_are_counted() -> None:
    """kube's filter order: TaintToleration before NodeResourcesFit, so a tainted node
    too small for the pod is refused for its taint (unresolvable), not for room."""
    tainted = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    assert placed(cache({"n0": tainted}, {"requests": {"cpu": 8}})) == (
        None, "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}.")


def test_a_pod_turned_down_by_a_cordon_comes_back_when_it_tolerates_it() -> None:
    c = cache({"n0": {"unschedulable": True}})
    registry = Registry({spec.name: spec.factory for spec in BUILTIN_KUBE_PLUGINS})
    s = PodScheduler(c, Framework(registry, default_profile()))
    s.run(0.0)
    old = s.queue.unschedulable["default/p"].pod
    unrelated = old.clone()
    unrelated.tolerations = (Toleration("other", "Exists", "", "NoSchedule"),)
    assert s.queue.move_all_to_active_or_backoff(
        100.0, "UnschedulablePodUpdatePodToleration", old=old, new=unrelated) == 0
    new = old.clone()
    new.tolerations = (Toleration("node.kubernetes.io/unschedulable", "Exists", "",
                                  "NoSchedule"),)
    assert s.queue.move_all_to_active_or_backoff(
        100.0, "UnschedulablePodUpdatePodToleration", old=old, new=new) == 1


def test_a_cordoned_node_added_or_updated_moves_no_pod() -> None:
    """kube's hint reads the node alone: uncordoned, or added schedulable."""
    c = cache({"n0": {"unschedulable": True}})
    pod = next(iter(c.jobs["default/j"].tasks.values()))
    pod.tolerations = (Toleration("node.kubernetes.io/unschedulable", "Exists", "",
                                  "NoSchedule"),)
    cordoned = c.nodes["n0"]
    open_node = cordoned.clone()
    open_node.unschedulable = False
    hint = NodeUnschedulable.after_node_change
    assert hint(pod, None, cordoned) is QueueingHint.QUEUE_SKIP
    assert hint(pod, cordoned, cordoned) is QueueingHint.QUEUE_SKIP
    assert hint(pod, open_node, open_node) is QueueingHint.QUEUE_SKIP
    assert hint(pod, cordoned, open_node) is QueueingHint.QUEUE
    assert hint(pod, None, open_node) is QueueingHint.QUEUE
