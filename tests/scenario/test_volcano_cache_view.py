"""What Volcano's cache makes of objects it does not schedule or count: pods no pod
group holds occupy their node and nothing else; a pod group's ``minResources`` counts
only the names ``NewResource`` keeps; ephemeral storage is a resource."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from batchsched.api import TaskInfo, TaskStatus
from batchsched.api.resource import Resource
from batchsched.api.resource_names import counted_by_volcano
from batchsched.cache import MemoryCache
from batchsched.errors import ScenarioError, SchedulingError
from batchsched.scenario import load_scenario, parse_scenario, run_scenario
from batchsched.scenario.kubectl import load_kubectl_dump
from batchsched.simulation.predict import predict_start

PREEMPT_AND_RECLAIM = {
    "actions": "enqueue, allocate, preempt, reclaim",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"},
                           {"name": "conformance"}]},
              {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                           {"name": "nodeorder"}]}],
}


def foreign_pod_scenario() -> dict[str, Any]:
    """n1 (8 cpu) holds a 6-cpu pod of no job; a high-priority 4-cpu job waits."""
    return {
        "version": 1, "name": "foreign pod", "config": PREEMPT_AND_RECLAIM,
        "priorityClasses": [{"name": "high", "value": 1000}],
        "queues": [{"name": "default"}, {"name": "team-a"}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 8, "memory": "16Gi", "pods": 110}}],
        "jobs": [{"name": "train", "namespace": "team-a", "queue": "team-a", "minMember": 1,
                  "phase": "Inqueue", "priorityClassName": "high"}],
        "tasks": [
            {"name": "prometheus-0", "namespace": "monitoring", "node": "n1",
             "phase": "Running", "requests": {"cpu": 6, "memory": "8Gi"}},
            {"name": "train-0", "namespace": "team-a", "job": "train",
             "priorityClassName": "high", "requests": {"cpu": 4, "memory": "4Gi"}},
        ],
    }


def test_a_pod_of_no_job_holds_its_node_and_is_never_evicted() -> None:
    got = run_scenario(parse_scenario(foreign_pod_scenario(), source="<test>")).to_json()
    assert got["binds"] == {} and got["evicted"] == []
    assert "monitoring/prometheus-0" not in got["taskStatusCounts"]


def test_a_pod_of_no_job_leaves_room_as_it_should() -> None:
    doc = foreign_pod_scenario()
    doc["tasks"][1]["requests"] = {"cpu": 2, "memory": "4Gi"}
    got = run_scenario(parse_scenario(doc, source="<test>")).to_json()
    assert got["binds"] == {"team-a/train-0": "n1"}


def test_a_pod_of_no_job_is_not_counted_in_any_queue() -> None:
    got = run_scenario(parse_scenario(foreign_pod_scenario(), source="<test>")).to_json()
    assert got["queueStatus"]["default"]["allocated"] == {"cpu": "0", "memory": "0"}


@pytest.mark.parametrize("task", [
    {"name": "p", "requests": {"cpu": 1}},                                  # not placed
    {"name": "p", "node": "n1", "phase": "Pending", "deleting": True},       # on no node
    {"name": "p", "job": "", "node": "n1", "phase": "Running"},              # empty job
])
def test_only_a_placed_pod_may_have_no_job(task: dict[str, Any]) -> None:
    doc = foreign_pod_scenario()
    doc["tasks"] = [task]
    if task.get("deleting"):
        task.pop("node")
    with pytest.raises(ScenarioError, match=r"tasks\[0\] \(default/p\)\.job: a task needs"):
        parse_scenario(doc, source="<test>")


def test_a_cache_built_from_the_scenario_keeps_the_pod_on_its_node() -> None:
    cache = parse_scenario(foreign_pod_scenario(), source="<test>").build_cache()
    assert "monitoring/prometheus-0" in cache.nodes["n1"].tasks
    assert all("monitoring/prometheus-0" not in job.tasks for job in cache.jobs.values())


def test_memory_cache_takes_a_foreign_pod_only_placed_and_without_a_job() -> None:
    cache = MemoryCache()
    with pytest.raises(SchedulingError, match="a foreign pod is one placed on a node"):
        cache.add_foreign_pod(TaskInfo.create("ns", "p", "", Resource(1000.0)))
    with pytest.raises(SchedulingError, match="has no job"):
        cache.add_foreign_pod(TaskInfo.create("ns", "p", "ns/j", Resource(1000.0),
                                              status=TaskStatus.RUNNING, node_name="n1"))


def test_a_prediction_keeps_a_pod_of_no_job_on_its_node() -> None:
    scenario = parse_scenario(foreign_pod_scenario(), source="<test>")
    task = scenario.tasks[1]
    task.annotations = {**task.annotations, "batchsched.io/run-time": "60"}
    prediction = predict_start(scenario, "team-a/train", horizon=3600.0)
    assert prediction["expectedStart"] is None
    assert prediction["unknownRunTimes"] == 1


# -- the kubectl import ---------------------------------------------------------------------


def _node(name: str, **allocatable: str) -> dict[str, Any]:
    figures = {"cpu": "8", "memory": "32Gi", "pods": "110", **allocatable}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": figures, "capacity": figures,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, namespace: str, *, group: str | None = None, node: str | None = None,
         scheduler: str = "volcano", **requests: str) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "annotations": annotations},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _podgroup(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"queue": "default", "minMember": 1, **spec},
            "status": {"phase": "Pending"}}


def _queue(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name}, "spec": {"weight": 1}, "status": {"state": "Open"}}


def _dump(tmp_path: Path, *items: dict[str, Any]) -> Path:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return path


#: What Volcano's pod-group controller writes: the pods' quota usage.
CONTROLLER_MIN_RESOURCES = {"count/pods": "1", "cpu": "1", "limits.cpu": "2",
                            "limits.memory": "2Gi", "memory": "1Gi", "pods": "1",
                            "requests.cpu": "1", "requests.memory": "1Gi"}


def test_a_pod_group_as_volcano_s_controller_writes_it_is_admitted(tmp_path: Path) -> None:
    path = _dump(tmp_path, _node("n1"), _queue("default"),
                 _podgroup("pg", "default", minResources=CONTROLLER_MIN_RESOURCES),
                 _pod("web-0", "default", group="pg", cpu="1", memory="1Gi"))
    got = run_scenario(load_kubectl_dump(path)).to_json()
    assert got["binds"] == {"default/web-0": "n1"}  # overcommit counts no count/pods


def test_the_quota_names_of_min_resources_reach_the_resourcequota_plugin(
        tmp_path: Path) -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "q", "namespace": "team"},
             "spec": {"hard": {"requests.cpu": "2"}},
             "status": {"hard": {"requests.cpu": "2"}, "used": {"requests.cpu": "2"}}}
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "volcano-scheduler-configmap",
                           "namespace": "volcano-system"},
              "data": {"volcano-scheduler.conf": json.dumps({
                  "actions": "enqueue, allocate",
                  "tiers": [{"plugins": [{"name": "gang"}, {"name": "resourcequota"}]},
                            {"plugins": [{"name": "predicates"}, {"name": "proportion"}]}]})}}
    path = _dump(tmp_path, _node("n1"), _queue("default"), quota, config,
                 _podgroup("pg", "team", minResources=CONTROLLER_MIN_RESOURCES),
                 _pod("x-0", "team", group="pg", cpu="1", memory="1Gi"))
    got = run_scenario(load_kubectl_dump(path)).to_json()
    assert got["binds"] == {}
    assert any("resource quota insufficient, requested: map[requests.cpu:1]" in e["message"]
               for e in got["events"])


def test_pods_of_other_schedulers_and_of_missing_pod_groups_hold_only_their_node(
        tmp_path: Path) -> None:
    path = _dump(tmp_path, _node("n1"), _queue("default"),
                 _pod("nginx-0", "web", node="n1", scheduler="default-scheduler", cpu="3"),
                 _pod("orphan-0", "ml", group="gone", node="n1", cpu="3"))
    scenario = load_kubectl_dump(path)
    assert {t.uid: t.job for t in scenario.tasks} == {"web/nginx-0": "", "ml/orphan-0": ""}
    assert not scenario.jobs
    assert any("ml/orphan-0: its PodGroup ml/gone does not exist; the pod holds its place"
               in warning for warning in scenario.warnings)
    cache = scenario.build_cache()
    assert cache.nodes["n1"].used.milli_cpu == 6000


def test_an_imported_scenario_with_pods_of_no_job_loads_back(tmp_path: Path) -> None:
    from batchsched.cli import main

    path = _dump(tmp_path, _node("n1"), _queue("default"),
                 _pod("nginx-0", "web", node="n1", scheduler="default-scheduler", cpu="3"))
    out = tmp_path / "scenario.yaml"
    assert main(["import", "kubectl", str(path), "-o", str(out)]) == 0
    assert [t.job for t in load_scenario(out).tasks] == [""]


def test_ephemeral_storage_is_counted_as_volcano_counts_it(tmp_path: Path) -> None:
    assert counted_by_volcano("ephemeral-storage")
    path = _dump(tmp_path, _node("n1", **{"ephemeral-storage": "10Gi"}), _queue("default"),
                 _podgroup("small", "default"), _podgroup("big", "default"),
                 _pod("small-0", "default", group="small", cpu="1",
                      **{"ephemeral-storage": "5Gi"}),
                 _pod("big-0", "default", group="big", cpu="1",
                      **{"ephemeral-storage": "20Gi"}))
    got = run_scenario(load_kubectl_dump(path)).to_json()
    assert got["binds"] == {"default/small-0": "n1"}


def test_explaining_a_pod_of_no_job_says_so() -> None:
    from batchsched.explain import explain

    scenario = parse_scenario(foreign_pod_scenario(), source="<test>")
    with pytest.raises(ScenarioError, match="is in no job: a pod no pod group holds"):
        explain(scenario, task="monitoring/prometheus-0")


def test_explaining_a_placed_pod_of_a_missing_pod_group_names_the_pod_group(
        tmp_path: Path) -> None:
    from batchsched.explain import explain

    path = _dump(tmp_path, _node("n1"), _queue("default"),
                 _pod("lost-0", "ml", group="lost", node="n1", cpu="1"))
    with pytest.raises(ScenarioError, match="is in no job: its PodGroup ml/lost does not "
                                            "exist"):
        explain(load_kubectl_dump(path), task="ml/lost-0")


def test_explaining_a_pod_the_dump_leaves_out_says_why(tmp_path: Path) -> None:
    """A pending pod of a missing PodGroup, or one another scheduler is to place, is in
    no session: asked about, the answer is why (not "no task", which reads as a typo)."""
    from batchsched.explain import explain

    done = _pod("orphan-1", "ml", group="missing", cpu="1")
    done["status"]["phase"] = "Succeeded"
    path = _dump(tmp_path, _node("n1"), _queue("default"),
                 _pod("orphan-0", "ml", group="missing", cpu="1"), done,
                 _pod("web-0", "web", scheduler="default-scheduler", cpu="1"))
    scenario = load_kubectl_dump(path)
    with pytest.raises(ScenarioError, match="task 'ml/orphan-1' is in no session: its "
                                            "PodGroup ml/missing does not exist, and it is "
                                            "Succeeded: no job counts it"):
        explain(scenario, task="ml/orphan-1")
    with pytest.raises(ScenarioError, match="task 'ml/orphan-0' is in no session: its "
                                            "PodGroup ml/missing does not exist"):
        explain(scenario, task="ml/orphan-0")
    with pytest.raises(ScenarioError, match="task 'web/web-0' is in no session: it waits "
                                            "for scheduler 'default-scheduler'"):
        explain(scenario, task="web/web-0")
    with pytest.raises(ScenarioError, match=r"no job 'ml/missing': no PodGroup ml/missing "
                                            r"in the cluster.*wait for it.*\(ml/orphan-0\)$"):
        explain(scenario, job="ml/missing")
    with pytest.raises(ScenarioError, match=r"no task 'ml/typo'$"):
        explain(scenario, task="ml/typo")


def test_queue_status_quantities_are_written_in_kubernetes_canonical_form() -> None:
    """Volcano writes a queue's allocated resources with ConvertRes2ResList (cpu and
    scalars as milli DecimalSI, memory as BinarySI, pods as a count), which Kubernetes
    prints in its canonical form."""
    doc = {
        "version": 1, "name": "canonical", "config": PREEMPT_AND_RECLAIM,
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4000, "memory": "64Gi", "pods": 2000,
                                                "ephemeral-storage": "100G"}}],
        "jobs": [{"name": "a", "minMember": 1, "phase": "Running"}],
        "tasks": [{"name": "a1", "job": "a", "node": "n1", "phase": "Running",
                   "requests": {"cpu": 2000, "memory": "4Gi", "ephemeral-storage": "10G"}},
                  {"name": "a2", "job": "a", "node": "n1", "phase": "Running",
                   "requests": {"cpu": "1500m", "memory": "1000"}}],
    }
    got = run_scenario(parse_scenario(doc, source="<test>")).to_json()
    assert got["queueStatus"]["default"]["allocated"] == {
        "cpu": "2001500m", "memory": "4294968296", "ephemeral-storage": "10G", "pods": "2"}
    doc["tasks"].pop()
    got = run_scenario(parse_scenario(doc, source="<test>")).to_json()
    assert got["queueStatus"]["default"]["allocated"] == {
        "cpu": "2k", "memory": "4Gi", "ephemeral-storage": "10G", "pods": "1"}


def test_kube_scheduler_s_stand_in_requests_are_worked_out_per_container(
        tmp_path: Path) -> None:
    """kube-scheduler's resource scores count 100m / 200Mi for each container that asks
    no cpu / memory (NonMissingContainerRequests), not for the pod as a whole: the
    import writes the pod's figure when it differs from the merged requests'."""
    sidecar = _pod("sidecar", "default", group="g", cpu="1", memory="1Gi")
    sidecar["spec"]["containers"].append({"name": "proxy", "image": "envoy"})
    sidecar["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    zero = _pod("zero", "default", group="g", cpu="0", memory="1Gi")
    plain = _pod("plain", "default", group="g", cpu="1", memory="1Gi")
    empty = _pod("empty", "default", group="g")
    restartable = _pod("restartable", "default", group="g", cpu="1", memory="1Gi")
    restartable["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]
    path = _dump(tmp_path, _node("n1"), _queue("default"), _podgroup("g", "default"),
                 sidecar, zero, plain, empty, restartable)
    tasks = {t.name: t for job in load_kubectl_dump(path).to_cluster().jobs.values()
             for t in job.tasks.values()}
    assert tasks["sidecar"].nonzero_request == (1100, (1024 + 200) * 2**20)
    assert tasks["zero"].nonzero_request == (0, 2**30)        # an explicit 0 stays 0
    assert tasks["plain"].nonzero_request is None
    assert tasks["empty"].nonzero_request is None               # the pod's stand-in: the same
    assert tasks["restartable"].nonzero_request == (1100, (1024 + 200) * 2**20)


@pytest.mark.parametrize(("given", "problem"), [
    ({"cpu": 1}, "tasks[0] (default/p).nonZeroRequests: needs memory"),
    ({"cpu": 1, "memory": "1Gi", "gpu": 1}, "nonZeroRequests.gpu"),
    ({"cpu": "x", "memory": "1Gi"}, "nonZeroRequests.cpu"),
])
def test_non_zero_requests_are_cpu_and_memory_quantities(given: dict[str, Any],
                                                          problem: str) -> None:
    doc = {"version": 1, "config": PREEMPT_AND_RECLAIM, "nodes": [],
           "jobs": [{"name": "j", "minMember": 1}],
           "tasks": [{"name": "p", "job": "j", "nonZeroRequests": given}]}
    with pytest.raises(ScenarioError, match=re.escape(problem)):
        parse_scenario(doc, source="<test>")


def test_a_negative_oversubscription_takes_away_from_the_node() -> None:
    doc = {"version": 1, "config": PREEMPT_AND_RECLAIM,
           "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10},
                      "annotations": {"volcano.sh/oversubscription-cpu": "-2000"}}],
           "jobs": [{"name": "j", "minMember": 1, "phase": "Inqueue"}],
           "tasks": [{"name": "p", "job": "j", "requests": {"cpu": 3}}]}
    scenario = parse_scenario(doc, source="<test>")
    assert not scenario.warnings
    assert run_scenario(scenario).binds == {}


def test_an_oversubscription_taking_more_than_the_node_has_is_refused() -> None:
    doc = {"version": 1, "config": PREEMPT_AND_RECLAIM,
           "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "8Gi", "pods": 10},
                      "annotations": {"volcano.sh/oversubscription-cpu": "-4000"}}],
           "jobs": [], "tasks": []}
    with pytest.raises(ScenarioError, match=r"nodes\[0\] \(n1\)\.annotations\.volcano\.sh/"
                       r"oversubscription-cpu: takes away more than the node's allocatable"):
        parse_scenario(doc, source="<test>")


@pytest.mark.parametrize(("annotations", "binds", "warned"), [
    ({}, {}, False),
    ({"volcano.sh/oversubscription-cpu": "2000"}, {"default/p": "n1"}, False),
    ({"volcano.sh/oversubscription-cpu": "lots"}, {}, False),     # ParseFloat: 0
    # A negative amount takes away, as Volcano adds it: 4 - 1 cpu is 3, 4 - 2 is 2.
    ({"volcano.sh/oversubscription-cpu": "2000",
      "volcano.sh/oversubscription-memory": "-1"}, {"default/p": "n1"}, False),
    ({"volcano.sh/oversubscription-cpu": "-1000"}, {}, False),
    ({"volcano.sh/oversubscription-cpu": "+Inf"}, {}, True),   # infinite: ignored
    ({"volcano.sh/oversubscription-cpu": "NaN"}, {}, True),
])
def test_a_node_s_oversubscription_annotations_add_to_its_resources(
        annotations: dict[str, str], binds: dict[str, str], warned: bool) -> None:
    """Volcano's NewNodeInfo adds a node's volcano.sh/oversubscription-cpu (milli-cpu)
    and -memory (bytes) to its allocatable, capacity and idle."""
    doc = {"version": 1, "config": PREEMPT_AND_RECLAIM,
           "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "memory": "8Gi", "pods": 10},
                      "annotations": annotations}],
           "jobs": [{"name": "j", "minMember": 1, "phase": "Inqueue"}],
           "tasks": [{"name": "p", "job": "j", "requests": {"cpu": 3}}]}
    scenario = parse_scenario(doc, source="<test>")
    assert bool(scenario.warnings) == warned
    assert run_scenario(scenario).binds == binds


def test_a_finished_pod_of_another_scheduler_counts_in_its_pod_group(tmp_path: Path) -> None:
    """Volcano's cache takes every placed pod and puts it in the job its group-name
    annotation names, whatever its scheduler: a finished one counts for the gang."""
    done = _pod("done", "default", group="j", node="n1", scheduler="default-scheduler")
    done["status"]["phase"] = "Succeeded"
    path = _dump(tmp_path, _node("n1"), _queue("default"),
                 _podgroup("j", "default", minMember=2),
                 done, _pod("p", "default", group="j", cpu="1"))
    assert run_scenario(load_kubectl_dump(path)).binds == {"default/p": "n1"}


def test_a_quota_the_controller_has_not_written_limits_nothing(tmp_path: Path) -> None:
    """Volcano's cache keeps a ResourceQuota's status only: spec.hard alone limits
    nothing (with a warning)."""
    conf = ("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
            "  - name: gang\n  - name: resourcequota\n- plugins:\n  - name: predicates\n"
            "  - name: proportion\n")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "volcano-scheduler-configmap",
                              "namespace": "volcano-system"},
                 "data": {"volcano-scheduler.conf": conf}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "q", "namespace": "default"},
             "spec": {"hard": {"requests.cpu": "1"}}}
    group = _podgroup("j", "default", minResources={"cpu": "2", "requests.cpu": "2"})
    path = _dump(tmp_path, configmap, quota, _node("n1"), _queue("default"), group,
                 _pod("p", "default", group="j", cpu="2"))
    scenario = load_kubectl_dump(path)
    assert any("no status.hard" in warning for warning in scenario.warnings)
    assert run_scenario(scenario).binds == {"default/p": "n1"}
    quota["status"] = {"hard": {"requests.cpu": "1"}, "used": {}}
    path = _dump(tmp_path, configmap, quota, _node("n1"), _queue("default"), group,
                 _pod("p", "default", group="j", cpu="2"))
    assert run_scenario(load_kubectl_dump(path)).binds == {}


def test_a_pod_the_scheduler_preempted_is_imported_as_such(tmp_path: Path) -> None:
    victim = _pod("v", "default", group="g", node="n1", cpu="1")
    victim["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    victim["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    other = _pod("o", "default", group="g", node="n1", cpu="1")
    other["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]
    path = _dump(tmp_path, _node("n1"), _queue("default"), _podgroup("g", "default"),
                 victim, other)
    tasks = {t.name: t for job in load_kubectl_dump(path).to_cluster().jobs.values()
             for t in job.tasks.values()}
    assert tasks["v"].preempted_by_scheduler and tasks["v"].status is TaskStatus.RELEASING
    assert not tasks["o"].preempted_by_scheduler
