"""`batchsched import kubectl`: a real cluster's `kubectl get ... -o json` as a scenario.

The dump under data/ is what the API server returns for a small Volcano cluster:
five nodes (one tainted for infra, one with GPUs, one NotReady), three queues, a
gang training job partly running, pods with init containers, a terminating pod,
a finished one, a pod without a PodGroup, system pods of the default scheduler,
two PodDisruptionBudgets and Volcano's scheduler ConfigMap.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchsched.api import TaskStatus
from batchsched.cli import main
from batchsched.errors import ConfigError, ScenarioError
from batchsched.kube.host_ports import HostPort
from batchsched.scenario import load_scenario, run_scenario
from batchsched.scenario.kubectl import (
    is_kubectl_dump,
    load_kubectl_dump,
    load_scenario_or_dump,
    scenario_document_from_kubectl,
)

DUMP = Path(__file__).parent / "data" / "kubectl-dump.json"
TRAIN = "team-a/train-5b7e2c1a-8d4f-4f0e-9a63-2c1d7e9b4a10"
DEBUG_SHELL_JOB = "team-b/podgroup-8b0c6f0e-4d3a-4e2b-9c1d-0a9b8c7d6e5f"
GiB = 2**30


def dump() -> dict[str, Any]:
    return json.loads(DUMP.read_text())


def item(document: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    return next(i for i in document["items"]
                if i["kind"] == kind and i["metadata"]["name"] == name)


def write(tmp_path: Path, document: Any, name: str = "dump.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def test_the_dump_imports_nodes_queues_jobs_and_tasks() -> None:
    scenario = load_kubectl_dump(DUMP)
    assert len(scenario.nodes) == 5
    assert {q.name for q in scenario.queues} == {"default", "root", "team-a", "team-b"}
    assert len(scenario.jobs) == 5  # 4 PodGroups, 1 for the bare Volcano pod
    assert len(scenario.tasks) == 15  # 16 pods, less the one waiting for kube-scheduler
    # kube-scheduler's placed pods hold their nodes in no job, as in Volcano's cache.
    assert sorted(t.name for t in scenario.tasks if not t.job) == [
        "coredns-5d78c9869d-7xkq2", "coredns-5d78c9869d-m2c8v", "kube-proxy-8hz2f",
        "kube-proxy-q9w4d", "volcano-scheduler-7c8f9d5b6-2vhtn"]
    nodes = {n.name: n for n in scenario.nodes}
    assert nodes["node-1"].allocatable.milli_cpu == 7800
    assert nodes["node-1"].allocatable.memory == 31 * GiB
    assert nodes["gpu-node-1"].allocatable.get("nvidia.com/gpu") == 4000
    assert [(t.key, t.value, t.effect) for t in nodes["infra-node-1"].taints] == [
        ("dedicated", "infra", "NoSchedule")]
    assert nodes["infra-node-1"].labels["kubernetes.io/hostname"] == "infra-node-1"
    # Volcano ignores node conditions: the unreachable node keeps pods off by its taints.
    assert nodes["node-3"].ready and nodes["node-1"].ready
    assert {t.key for t in nodes["node-3"].taints} == {"node.kubernetes.io/unreachable"}
    team_a = next(q for q in scenario.queues if q.name == "team-a")
    assert team_a.weight == 2 and team_a.parent == "root"
    assert team_a.guarantee is not None and team_a.guarantee.milli_cpu == 4000
    assert not next(q for q in scenario.queues if q.name == "team-b").reclaimable
    assert scenario.configuration.plugin_names()[-1] == "binpack"  # from the ConfigMap


def test_the_gang_keeps_its_pod_group_and_roles() -> None:
    scenario = load_kubectl_dump(DUMP)
    train = next(j for j in scenario.jobs if j.uid == TRAIN)
    assert train.podgroup.min_member == 3
    assert dict(train.podgroup.min_task_member) == {"master": 1, "worker": 2}
    assert train.queue == "team-a" and train.priority == 100000
    tasks = {t.name: t for t in scenario.tasks if t.job == TRAIN}
    assert {n: (t.role, t.status, t.node_name) for n, t in tasks.items()} == {
        "train-master-0": ("master", TaskStatus.RUNNING, "gpu-node-1"),
        "train-worker-0": ("worker", TaskStatus.RUNNING, "gpu-node-1"),
        "train-worker-1": ("worker", TaskStatus.RUNNING, "gpu-node-1"),
        "train-worker-2": ("worker", TaskStatus.PENDING, ""),
    }


def test_a_pod_s_task_spec_label_is_its_role_when_it_has_no_annotation(
        tmp_path: Path) -> None:
    document = dump()
    pod = item(document, "Pod", "train-worker-2")
    del pod["metadata"]["annotations"]["volcano.sh/task-spec"]
    pod["metadata"].setdefault("labels", {})["volcano.sh/task-spec"] = "worker"
    scenario = load_kubectl_dump(write(tmp_path, document))
    task = next(t for t in scenario.tasks if t.name == "train-worker-2")
    assert task.role == "worker"


def test_host_ports_keep_their_protocol_and_address(tmp_path: Path) -> None:
    """A DNS pod takes 53 for UDP and for TCP: both are kept, each with its protocol."""
    document = dump()
    pod = item(document, "Pod", "eval-0")
    pod["spec"]["containers"][0]["ports"] = [
        {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
        {"containerPort": 53, "hostPort": 53, "protocol": "TCP"},
        {"containerPort": 9153, "hostPort": 9153, "hostIP": "10.0.0.1"}]
    scenario = load_kubectl_dump(write(tmp_path, document))
    task = next(t for t in scenario.tasks if t.name == "eval-0")
    assert task.host_ports == (HostPort("", "UDP", 53), 53, HostPort("10.0.0.1", "TCP", 9153))


def test_a_sidecar_s_host_ports_are_the_pod_s(tmp_path: Path) -> None:
    """kube-scheduler counts a restartable init container's host ports (1.33 and later);
    a plain init container's are gone once it ends."""
    document = dump()
    pod = item(document, "Pod", "eval-0")
    pod["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
         "ports": [{"containerPort": 8081, "hostPort": 8081}]},
        {"name": "setup", "image": "busybox", "ports": [{"containerPort": 99, "hostPort": 99}]}]
    scenario = load_kubectl_dump(write(tmp_path, document))
    task = next(t for t in scenario.tasks if t.name == "eval-0")
    assert task.host_ports == (8081,)


@pytest.mark.parametrize("where", ["affinity", "spread"])
def test_match_label_keys_the_api_server_merged_are_read_once(tmp_path: Path,
                                                              where: str) -> None:
    """A current API server stores the matchLabelKeys requirement in the labelSelector
    (pod affinity since 1.31, topology spread since 1.34) and keeps the key listed."""
    document = dump()
    pod = item(document, "Pod", "eval-0")
    pod["metadata"].setdefault("labels", {})["pod-template-hash"] = "abc"
    term = {"labelSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]},
        "matchLabelKeys": ["pod-template-hash"], "topologyKey": "kubernetes.io/hostname"}
    if where == "affinity":
        pod["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    else:
        pod["spec"]["topologySpreadConstraints"] = [
            {**term, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]
    scenario = load_kubectl_dump(write(tmp_path, document))  # refused before
    task = next(t for t in scenario.tasks if t.name == "eval-0")
    if where == "affinity":
        from batchsched.kube.pod_view import task_affinity

        [read] = task_affinity(task).required_anti_affinity
    else:
        [read] = task.topology_spread
    selector = read.label_selector if where == "affinity" else read.selector
    assert selector is not None
    assert [(r.key, r.operator, r.values) for r in selector.requirements
            if r.key == "pod-template-hash"] == [("pod-template-hash", "In", ("abc",))]


def _one_pod_dump(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns",
                                                         "uid": "u1"},
         "spec": {"schedulerName": "volcano", **spec},
         "status": {"phase": "Pending", **(status or {})}}]}


def test_pod_level_requests_replace_the_containers_cpu_and_memory(tmp_path: Path) -> None:
    """Kubernetes' PodLevelResources (on in the Kubernetes Volcano builds on): Volcano's
    amendResourceAccordingToPodFeatures, then the overhead on top."""
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump({
        "resources": {"requests": {"cpu": "3", "memory": "1Gi"}},
        "overhead": {"cpu": "100m"},
        "containers": [{"name": "a", "resources": {"requests": {
            "cpu": "100m", "memory": "64Mi", "example.com/foo": "1"}}}]})))
    task = scenario.tasks[0]
    assert task.resreq.milli_cpu == 3100
    assert task.resreq.memory == GiB
    assert task.resreq.get("example.com/foo") == 1000


def test_a_pod_level_limit_nothing_requests_is_the_pod_s_request(tmp_path: Path) -> None:
    """The API server's defaultPodRequests: a pod-level limit of a resource that no
    container and not the pod level requests becomes the pod-level request (a
    hand-written dump has not been through it); an image without ``sizeBytes`` (omitted
    when 0) is an image of 0 bytes."""
    document = _one_pod_dump({
        "resources": {"limits": {"cpu": "3", "memory": "1Gi", "hugepages-2Mi": "200Mi"}},
        "containers": [{"name": "a", "image": "i", "resources": {
            "requests": {"memory": "64Mi", "hugepages-2Mi": "100Mi"},
            "limits": {"hugepages-2Mi": "100Mi"}}}]})
    document["items"][0]["status"]["images"] = [{"names": ["i"]}]
    scenario = load_kubectl_dump(write(tmp_path, document))
    task = scenario.tasks[0]
    assert task.resreq.milli_cpu == 3000  # from the limit: no container asks cpu
    assert task.resreq.memory == 64 * 2**20  # a container asks memory: its figure stands
    # Hugepages are not overcommitted: the pod-level limit is the request regardless.
    assert task.resreq.get("hugepages-2Mi") == 200 * 2**20 * 1000
    assert scenario.nodes[0].images == {"i": 0}


def _numatopology(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
            "metadata": {"name": name}, "spec": spec}


def test_a_node_s_numatopology_is_its_numa_topology(tmp_path: Path) -> None:
    """Volcano's NUMA exporter writes one per node, under the node's name; it was
    skipped, and a pod with a NUMA policy then fitted no imported node."""
    document = _one_pod_dump({"containers": [{"name": "a", "resources": {
        "requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]})
    document["items"].append(_numatopology(
        "n1", policies={"CPUManagerPolicy": "static", "TopologyManagerPolicy": "best-effort"},
        numares={"cpu": {"allocatable": "0-3", "capacity": 4}},
        cpuDetail={str(i): {"numa": i // 2, "socket": 0, "core": i} for i in range(4)},
        podAllocations=[{"name": "other", "namespace": "ns"}]))
    document["items"].append(_numatopology("gone", numares={}))
    scenario = load_kubectl_dump(write(tmp_path, document))
    topology = scenario.nodes[0].numa_topology
    assert topology is not None and topology.resources["cpu"].allocatable == frozenset(range(4))
    assert topology.topology_manager_policy == "best-effort"
    assert topology.reports("no-such-uid", "ns/other")  # podAllocations, by name
    assert not any("skipped" in w for w in scenario.warnings)
    assert any("Numatopology gone: no Node of that name in the dump: not read" in w
               for w in scenario.warnings)


def test_a_malformed_numatopology_is_named(tmp_path: Path) -> None:
    document = _one_pod_dump({})
    document["items"].append(_numatopology(
        "n1", cpuDetail={"0": {"numa": -1}}, numares={"cpu": {"allocatable": "0"}}))
    with pytest.raises(ScenarioError, match=r"Node n1: \(its Numatopology's\) "
                                            r"spec\.cpuDetail\.0\.numa: must not be negative"):
        load_kubectl_dump(write(tmp_path, document))


def test_a_pod_s_own_pod_group_asks_the_pod_s_quota_usage(tmp_path: Path) -> None:
    """Volcano's PodGroup controller writes the pod's quota usage as minResources
    (CalTaskRequests): quotas on requests.cpu, pods or a GPU then hold it back."""
    document = scenario_document_from_kubectl(_one_pod_dump({"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "2"},
                                    "limits": {"cpu": "2", "nvidia.com/gpu": "2"}}}]}),
        source="dump.json")
    assert document["jobs"][0]["minResources"] == {
        "count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1",
        "nvidia.com/gpu": "2", "requests.nvidia.com/gpu": "2", "limits.cpu": "2"}


def test_the_quota_usage_limits_are_kubernetes_pod_limits() -> None:
    """PodLimits: pod-level limits replace the containers', an init container counts
    with the sidecars started before it, ephemeral storage is limited too."""
    def usage(spec: dict[str, Any]) -> dict[str, str]:
        document = scenario_document_from_kubectl(_one_pod_dump(spec), source="dump.json")
        return {k: v for k, v in document["jobs"][0]["minResources"].items()
                if k.startswith("limits.")}

    assert usage({"resources": {"limits": {"cpu": "4"}}, "containers": [
        {"name": "a", "resources": {"limits": {"cpu": "1", "ephemeral-storage": "1Gi"}}}]}) == {
        "limits.cpu": "4", "limits.ephemeral-storage": str(GiB)}
    assert usage({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}],
                  "initContainers": [
                      {"name": "s", "restartPolicy": "Always",
                       "resources": {"limits": {"cpu": "2"}}},
                      {"name": "i", "resources": {"limits": {"cpu": "3"}}}]}) == {
        "limits.cpu": "5"}


def test_a_resized_container_asks_the_most_of_spec_status_and_allocation(
        tmp_path: Path) -> None:
    """In-place resize (Volcano's determineContainerReqs): the largest of the spec's,
    the status' and the allocated requests; an infeasible resize leaves out the spec."""
    container = {"name": "a", "resources": {"requests": {"cpu": "1"}}}
    status = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "2"}},
                                     "allocatedResources": {"cpu": "4"}}]}
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump(
        {"containers": [container]}, status)))
    assert scenario.tasks[0].resreq.milli_cpu == 4000
    container = {"name": "a", "resources": {"requests": {"cpu": "8"}}}
    status = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "2"}}}],
              "conditions": [{"type": "PodResizePending", "reason": "Infeasible",
                              "status": "True"}]}
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump(
        {"containers": [container]}, status)))
    assert scenario.tasks[0].resreq.milli_cpu == 2000


def test_each_container_s_requests_are_rounded_before_they_are_summed(tmp_path: Path) -> None:
    """Volcano's NewResource per container: 1500u twice is 2m + 2m, not 3m."""
    containers = [{"name": n, "resources": {"requests": {"cpu": "1500u", "memory": "0.5"}}}
                  for n in ("a", "b")]
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump({"containers": containers})))
    assert scenario.tasks[0].resreq.milli_cpu == 4
    assert scenario.tasks[0].resreq.memory == 2


def test_pods_map_to_tasks_as_volcano_sees_them() -> None:
    scenario = load_kubectl_dump(DUMP)
    tasks = {t.uid: t for t in scenario.tasks}
    assert tasks["team-a/eval-0"].status == TaskStatus.RELEASING  # deletionTimestamp
    assert tasks["team-b/etl-download-0"].status == TaskStatus.SUCCEEDED
    # Init containers: the larger of the running and the init requests; a sidecar
    # (restartPolicy Always) adds to both, the pod overhead too.
    assert tasks["team-b/etl-0"].resreq.milli_cpu == 2100
    assert tasks["team-b/etl-1"].resreq.milli_cpu == 3250
    assert tasks["team-b/etl-1"].resreq.memory == (4 * 1024 + 160) * 2**20
    infer = tasks["team-a/infer-server-0"]
    assert infer.node_selector == {"dedicated": "infra"}
    assert ("dedicated", "Equal", "infra", "NoSchedule") in [
        (t.key, t.operator, t.value, t.effect) for t in infer.tolerations]
    assert infer.affinity is not None and "podAntiAffinity" in infer.affinity
    assert infer.host_ports == (8080,)
    assert "kubectl.kubernetes.io/last-applied-configuration" not in infer.annotations


def test_a_pod_without_group_name_gets_a_single_task_job_as_volcano_s_controller_does(
) -> None:
    scenario = load_kubectl_dump(DUMP)
    job = next(j for j in scenario.jobs if j.uid == DEBUG_SHELL_JOB)
    assert job.podgroup.min_member == 1
    assert job.queue == "team-b"  # the pod's scheduling.volcano.sh/queue-name
    assert [t.uid for t in scenario.tasks if t.job == DEBUG_SHELL_JOB] == ["team-b/debug-shell"]


def test_the_pdb_reads_the_status_volcano_reads() -> None:
    pdbs = {p.name: p for p in load_kubectl_dump(DUMP).pdbs}
    assert pdbs["train-pdb"].selector == {"volcano.sh/job-name": "train"}
    assert pdbs["train-pdb"].disruptions_allowed == 1
    assert pdbs["coredns"].namespace == "kube-system"


def test_a_pdb_keeps_its_match_expressions_and_a_budget_without_status_or_spec_allows_none(
        tmp_path: Path) -> None:
    document = dump()
    coredns = item(document, "PodDisruptionBudget", "coredns")
    coredns["spec"] = {"selector": {"matchExpressions": [
        {"key": "k8s-app", "operator": "NotIn", "values": ["a", "b"]}]}}
    coredns.pop("status", None)
    pdbs = {p.name: p for p in load_kubectl_dump(write(tmp_path, document)).pdbs}
    assert pdbs["coredns"].matches("kube-system", {"k8s-app": "kube-dns"})
    assert not pdbs["coredns"].matches("kube-system", {"k8s-app": "a"})
    assert pdbs["coredns"].disruptions_allowed == 0


def test_a_queue_without_a_state_is_not_open(tmp_path: Path) -> None:
    """Volcano's plugins compare status.state with Open: a queue its controller has
    not opened yet schedules nothing."""
    document = dump()
    item(document, "Queue", "team-b").pop("status", None)
    scenario = load_kubectl_dump(write(tmp_path, document))
    team_b = next(q for q in scenario.queues if q.name == "team-b")
    assert not team_b.is_open
    assert any("Queue team-b: no status.state" in w for w in scenario.warnings)


def test_a_pending_pod_of_another_scheduler_is_left_out_with_a_warning() -> None:
    scenario = load_kubectl_dump(DUMP)
    assert "kube-system/metrics-server-6d94bc8694-lp4nz" not in {t.uid for t in scenario.tasks}
    assert any("Pod kube-system/metrics-server-6d94bc8694-lp4nz: left out" in w
               for w in scenario.warnings)
    # Placed pods of other schedulers still occupy their nodes.
    assert "kube-system/coredns-5d78c9869d-7xkq2" in {t.uid for t in scenario.tasks}


def test_import_writes_yaml_that_loads_and_decides_as_the_dump(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scenario.yaml"
    assert main(["import", "kubectl", str(DUMP), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "5 nodes, 5 jobs, 15 tasks, 3 queues" in captured.out  # as the file lists
    assert "batchsched: warning:" in captured.err
    text = out.read_text()
    assert "cpu: 7800m" in text and "memory: 31Gi" in text
    from_yaml = run_scenario(load_scenario(out)).to_json()
    assert from_yaml == run_scenario(load_kubectl_dump(DUMP)).to_json()
    assert from_yaml["binds"]["team-a/infer-server-0"] == "infra-node-1"  # tolerates the taint
    assert "team-a/train-worker-2" not in from_yaml["binds"]  # every GPU is taken
    assert main(["run", str(DUMP), "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["binds"] == from_yaml["binds"]


def test_import_without_output_prints_the_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "kubectl", str(DUMP), "--now", "2024-05-13T10:00:00Z"]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert document["version"] == 1 and document["now"] == "2024-05-13T10:00:00Z"
    assert "Pod kube-system/metrics-server" in document["description"]


def test_explain_reads_the_dump(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(DUMP), "--job", TRAIN]) == 0
    verdict = capsys.readouterr().out.splitlines()[0]
    assert verdict.startswith(f"job {TRAIN}: started (3 task(s) placed, minMember 3); 1 more "
                              "wait: held back by proportion")
    assert "nvidia.com/gpu" in verdict


def test_a_configmap_given_apart_replaces_the_dump_s(tmp_path: Path) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "volcano-scheduler-configmap",
                               "namespace": "volcano-system"},
                  "data": {"volcano-scheduler.conf": "actions: \"enqueue, allocate\"\ntiers:\n"
                           "- plugins:\n  - name: gang\n  - name: predicates\n"}}
    path = write(tmp_path, yaml.safe_dump(config_map), "cm.yaml")
    scenario = load_kubectl_dump(DUMP, config_path=path)
    assert scenario.configuration.actions == ("enqueue", "allocate")
    assert scenario.configuration.plugin_names() == ["gang", "predicates"]
    assert any("ConfigMap volcano-system/volcano-scheduler-configmap: not used" in w
               for w in scenario.warnings)
    bad = write(tmp_path, "actions: allocate\ntiers: [{plugins: [{name: gang, "
                "enableJobReady: maybe}]}]\n", "bad.yaml")
    with pytest.raises(ConfigError, match=f"^{bad}: tiers.0..plugins.0..enableJobReady"):
        load_kubectl_dump(DUMP, config_path=bad)


def test_without_a_configmap_the_configuration_is_volcano_s_default() -> None:
    document = dump()
    document["items"] = [i for i in document["items"] if i["kind"] != "ConfigMap"]
    scenario = scenario_document_from_kubectl(document, source="dump.json")
    assert scenario["config"]["actions"] == "enqueue, allocate, backfill"
    assert "now" not in scenario


def test_a_pod_whose_pod_group_is_missing_is_kept_out_with_a_warning(tmp_path: Path) -> None:
    document = dump()
    annotations = item(document, "Pod", "etl-0")["metadata"]["annotations"]
    annotations["scheduling.k8s.io/group-name"] = "etl-v2"
    scenario = load_kubectl_dump(write(tmp_path, document))
    assert "team-b/etl-0" not in {t.uid for t in scenario.tasks}
    assert any("Pod team-b/etl-0: left out: its PodGroup team-b/etl-v2 does not exist" in w
               for w in scenario.warnings)


def test_placed_pods_of_a_missing_pod_group_keep_their_node(tmp_path: Path) -> None:
    document = dump()
    for pod in document["items"]:
        if pod["metadata"]["name"].startswith("train-") and pod["kind"] == "Pod":
            pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "train-gone"
    scenario = load_kubectl_dump(write(tmp_path, document))
    tasks = {t.name: t for t in scenario.tasks if t.name.startswith("train-")}
    assert sorted(tasks) == ["train-master-0", "train-worker-0", "train-worker-1"]
    assert {t.job for t in tasks.values()} == {""}  # in no job: Volcano leaves it out
    assert {t.node_name for t in tasks.values()} == {"gpu-node-1"}
    assert any("Pod team-a/train-worker-2: left out" in w for w in scenario.warnings)


def test_objects_of_other_kinds_are_skipped_with_one_warning(tmp_path: Path) -> None:
    document = dump()
    document["items"] += [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kube-dns", "namespace": "kube-system"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"}},
        # Read for its annotations (the queue of its pods' own groups), not skipped.
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    ]
    warnings = load_kubectl_dump(write(tmp_path, document)).warnings
    assert any("skipped 2 object(s) of other kinds (Secret 1, Service 1)" in w
               for w in warnings)


def _bad_quantity(d: dict[str, Any]) -> None:
    pod = item(d, "Pod", "train-worker-2")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2x"


def _no_kind(d: dict[str, Any]) -> None:
    del item(d, "Pod", "eval-0")["kind"]


def _bad_affinity(d: dict[str, Any]) -> None:
    terms = item(d, "Pod", "infer-server-0")["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    terms[0]["matchExpressions"][0]["operator"] = "Maybe"


def _pdb_expression(d: dict[str, Any]) -> None:
    item(d, "PodDisruptionBudget", "coredns")["spec"]["selector"] = {"matchExpressions": [
        {"key": "k8s-app", "operator": "Within", "values": ["a", "b"]}]}


def _bad_phase(d: dict[str, Any]) -> None:
    item(d, "PodGroup", "eval")["status"]["phase"] = "Sleeping"


BAD_DUMPS: list[tuple[str, Callable[[dict[str, Any]], None] | str, str]] = [
    ("bad quantity", _bad_quantity, "dump.json: Pod team-a/train-worker-2: "
     'spec.containers[0].resources.requests.cpu: "2x" is not a quantity'),
    ("object without kind", _no_kind, "dump.json: items[16] (eval-0): an object without kind"),
    ("loader error named after the pod", _bad_affinity,
     "dump.json: Pod team-a/infer-server-0: spec.affinity.nodeAffinity."),
    ("pdb selector", _pdb_expression, "dump.json: PodDisruptionBudget kube-system/coredns: "
     "spec.selector.matchExpressions[0].operator: 'Within' is not one of"),
    ("pod group phase", _bad_phase,
     "dump.json: PodGroup team-a/eval: status.phase: 'Sleeping' is not one of"),
    ("not a List", json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
     "dump.json: not a kubectl List (the output of `kubectl get ... -o json`: kind List with "
     "items); found kind 'Pod'"),
    ("not JSON", '{"apiVersion": "v1", "items": [', "dump.json: malformed JSON at line 1"),
    ("a node name that is no string", lambda d: item(d, "Pod", "eval-0")["spec"].update(
        nodeName=5), "dump.json: Pod team-a/eval-0: spec.nodeName: must be a string, not 5"),
    ("an annotation that is no string", lambda d: item(d, "Pod", "eval-0")["metadata"][
        "annotations"].update({"scheduling.k8s.io/group-name": 5}),
     "dump.json: Pod team-a/eval-0: metadata.annotations.scheduling.k8s.io/group-name: must "
     "be a string, not 5"),
    ("a host port", lambda d: item(d, "Pod", "eval-0")["spec"]["containers"][0].update(
        ports=[{"containerPort": 80, "hostPort": "eighty"}]),
     "dump.json: Pod team-a/eval-0: spec.containers[0].ports[0].hostPort: 'eighty' is not a "
     "port"),
    ("a pod phase that is no string", lambda d: item(d, "Pod", "eval-0")["status"].update(
        phase=["Running"]),
     "dump.json: Pod team-a/eval-0: status.phase: must be a string, not ['Running']"),
    ("a nominated node that is no string", lambda d: item(d, "Pod", "train-worker-2")[
        "status"].update(nominatedNodeName=["node-1"]),
     "dump.json: Pod team-a/train-worker-2: status.nominatedNodeName: must be a string"),
    ("a null container", lambda d: item(d, "Pod", "eval-0")["spec"]["containers"].append(
        None), "dump.json: Pod team-a/eval-0: spec.containers[1]: must be a mapping, not None"),
    ("a null init container", lambda d: item(d, "Pod", "eval-0")["spec"].update(
        initContainers=[None]),
     "dump.json: Pod team-a/eval-0: spec.initContainers[0]: must be a mapping, not None"),
    ("a spread choice that is a list", lambda d: item(d, "Pod", "eval-0")["spec"].update(
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone",
                                    "whenUnsatisfiable": ["DoNotSchedule"]}]),
     "dump.json: Pod team-a/eval-0: spec.topologySpreadConstraints[0].whenUnsatisfiable: "
     "['DoNotSchedule'] is not one of"),
    ("shard nodes that are no list", lambda d: d["items"].append({
        "apiVersion": "shard.volcano.sh/v1alpha1", "kind": "NodeShard",
        "metadata": {"name": "volcano"}, "spec": {"nodesDesired": ["node-1"]},
        "status": {"nodesInUse": 5}}),
     "dump.json: NodeShard volcano: status.nodesInUse: must be a list, not 5"),
    ("shard node names that are no names", lambda d: d["items"].append({
        "apiVersion": "shard.volcano.sh/v1alpha1", "kind": "NodeShard",
        "metadata": {"name": "volcano"}, "spec": {"nodesDesired": [7]}}),
     "dump.json: NodeShard volcano: spec.nodesDesired[0]: must be a name, not 7"),
    ("a pod group's status count", lambda d: item(d, "PodGroup", "eval")["status"].update(
        running="one"), "dump.json: PodGroup team-a/eval: status.running: must be an integer"),
    ("a pod group's condition", lambda d: item(d, "PodGroup", "eval")["status"].update(
        conditions=[{"type": "Unschedulable", "status": "True", "message": 7}]),
     "dump.json: PodGroup team-a/eval: status.conditions[0].message: must be a string"),
    ("a pod's scheduled condition", lambda d: item(d, "Pod", "train-worker-2")["status"].update(
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": ["0/1 nodes"]}]),
     "dump.json: Pod team-a/train-worker-2: status.conditions[type=PodScheduled].message: "
     "must be a string"),
    ("a hypernode's tier", lambda d: d["items"].append({
        "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
        "metadata": {"name": "s0"}, "spec": {"tier": "one", "members": []}}),
     "dump.json: HyperNode s0: spec.tier: must be a non-negative integer"),
    ("a container status's allocation", lambda d: item(d, "Pod", "eval-0")["status"].update(
        containerStatuses=[{"name": "eval", "resources": {"requests": {"cpu": "1"}},
                            "allocatedResources": {"cpu": "bad"}}]),
     "dump.json: Pod team-a/eval-0: status.containerStatuses[0].allocatedResources.cpu: "
     '"bad" is not a quantity'),
    ("an image size", lambda d: item(d, "Node", "node-1")["status"]["images"][1].update(
        sizeBytes=-5), "dump.json: Node node-1: status.images[1].sizeBytes: must be a size in "
     "bytes (a whole number >= 0), not -5"),
    ("a PodGroup twice", lambda d: d["items"].append(copy.deepcopy(item(d, "PodGroup", "eval"))),
     "dump.json: PodGroup team-a/eval: metadata.name: a PodGroup of that name is in the dump "
     "already"),
]


@pytest.mark.parametrize(("label", "change", "message"), BAD_DUMPS, ids=[b[0] for b in BAD_DUMPS])
def test_a_malformed_dump_is_one_line_naming_the_object(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str,
        change: Callable[[dict[str, Any]], None] | str, message: str) -> None:
    if isinstance(change, str):
        path = write(tmp_path, change)
    else:
        document = dump()
        change(document)
        path = write(tmp_path, document)
    assert main(["import", "kubectl", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"batchsched: error: {tmp_path / message.split(': ', 1)[0]}")
    assert message.split(": ", 1)[1] in err[0]
    with pytest.raises(ScenarioError):
        load_kubectl_dump(path)


def test_run_on_a_single_object_says_it_is_not_a_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, json.dumps(item(dump(), "Pod", "eval-0")))
    assert main(["run", str(path)]) == 2
    assert "not a kubectl List" in capsys.readouterr().err


def test_is_kubectl_dump() -> None:
    assert is_kubectl_dump(dump())
    assert is_kubectl_dump({"apiVersion": "v1", "kind": "PodList", "items": []})
    assert not is_kubectl_dump({"apiVersion": "v1", "kind": "Pod", "items": []})
    assert not is_kubectl_dump({"version": 1, "config": {}})
    assert not is_kubectl_dump(copy.deepcopy([dump()]))


def test_a_device_configuration_configmap_is_imported(tmp_path: Path) -> None:
    document = dump()
    text = "nvidia:\n  resourceCountName: volcano.sh/vgpu-number\n"
    document["items"].append({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "volcano-vgpu-device-config", "namespace": "kube-system"},
        "data": {"device-config.yaml": text, "other": "x"}})
    scenario = load_kubectl_dump(write(tmp_path, document))
    assert scenario.config_maps == {
        "kube-system/volcano-vgpu-device-config": {"device-config.yaml": text}}
    assert scenario.to_cluster().config_maps == scenario.config_maps
    assert scenario.build_cache().config_maps == scenario.config_maps


def test_hypernodes_and_network_topologies_are_imported(tmp_path: Path) -> None:
    document = dump()
    document["items"].append({
        "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
        "metadata": {"name": "rack-a"},
        "spec": {"tier": 1, "tierName": "rack", "members": [
            {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[12]$"}}}]}})
    item(document, "PodGroup", TRAIN.split("/")[1])["spec"]["networkTopology"] = {
        "mode": "hard", "highestTierName": "rack"}
    scenario = load_kubectl_dump(write(tmp_path, document))
    [rack] = scenario.hyper_nodes
    assert (rack.name, rack.tier, rack.tier_name, rack.members[0].regex) == (
        "rack-a", 1, "rack", "^node-[12]$")
    [train] = [job for job in scenario.jobs if job.uid == TRAIN]
    assert train.podgroup.network_topology is not None
    assert train.podgroup.network_topology.highest_tier_name == "rack"
    assert scenario.build_cache().hyper_nodes == {"rack-a": rack}


def test_node_shards_are_imported(tmp_path: Path) -> None:
    document = dump()
    document["items"].append({
        "apiVersion": "shard.volcano.sh/v1alpha1", "kind": "NodeShard",
        "metadata": {"name": "volcano"},
        "spec": {"nodesDesired": ["node-1", "node-2"]},
        "status": {"nodesInUse": ["node-1"], "nodesToAdd": ["node-2"]}})
    scenario = load_kubectl_dump(write(tmp_path, document))
    [shard] = scenario.node_shards
    assert (shard.name, shard.nodes_desired, shard.nodes_in_use) == (
        "volcano", ("node-1", "node-2"), ("node-1",))
    assert scenario.build_cache().node_shards == {"volcano": shard}


@pytest.mark.parametrize(("annotations", "want"), [
    ({"volcano.sh/network-topology-mode": "Soft"}, ("soft", None)),
    ({"volcano.sh/network-topology-highest-tier": "2"}, ("hard", 2)),
    ({"volcano.sh/network-topology-mode": "strict",
      "volcano.sh/network-topology-highest-tier": "two"}, ("hard", None)),
])
def test_a_pod_without_a_group_takes_its_network_topology_from_its_annotations(
    tmp_path: Path, annotations: dict[str, str], want: tuple[str, int | None]
) -> None:
    """Volcano's pod-group controller reads these annotations for the group it makes."""
    document = dump()
    pod = next(i for i in document["items"] if i["kind"] == "Pod"
               and "scheduling.k8s.io/group-name" not in i["metadata"].get("annotations", {})
               and i.get("spec", {}).get("schedulerName") == "volcano")
    pod["metadata"].setdefault("annotations", {}).update(annotations)
    scenario = load_kubectl_dump(write(tmp_path, document))
    topologies = [job.podgroup.network_topology for job in scenario.jobs
                  if job.podgroup.network_topology is not None]
    assert [(t.mode, t.highest_tier_allowed) for t in topologies] == [want]


def test_dynamic_resource_allocation_objects_and_pod_claims_are_imported(
        tmp_path: Path) -> None:
    document = dump()
    pending = next(i for i in document["items"] if i["kind"] == "Pod"
                   and not i.get("spec", {}).get("nodeName")
                   and i.get("spec", {}).get("schedulerName") == "volcano")
    namespace, pod = pending["metadata"]["namespace"], pending["metadata"]["name"]
    node = next(i for i in document["items"] if i["kind"] == "Node")["metadata"]["name"]
    document["items"] += [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "gpu", "resourceVersion": "7", "managedFields": []},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": f"{node}-gpus"},
         "spec": {"driver": "gpu.example.com", "nodeName": node,
                  "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-gpu", "namespace": namespace},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": f"{pod}-gpu-x7k2q", "namespace": namespace,
                      "ownerReferences": [{"kind": "Pod", "name": pod, "controller": True}]},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu"}}]}}},
    ]
    pending["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    pending.setdefault("status", {})["resourceClaimStatuses"] = [
        {"name": "gpu", "resourceClaimName": f"{pod}-gpu-x7k2q"}]
    scenario = load_kubectl_dump(write(tmp_path, document))
    assert set(scenario.dra.device_classes) == {"gpu"}
    assert [s.name for s in scenario.dra.resource_slices] == [f"{node}-gpus"]
    claim = scenario.dra.resource_claims[f"{namespace}/{pod}-gpu-x7k2q"]
    assert claim.owner == f"{namespace}/{pod}" and claim.allocation is None
    assert set(scenario.dra.claim_templates) == {f"{namespace}/one-gpu"}
    [task] = [t for t in scenario.tasks if t.name == pod]
    assert [(c.name, c.template_name, c.generated) for c in task.resource_claims] == [
        ("gpu", "one-gpu", f"{pod}-gpu-x7k2q")]


def test_an_ascend_cluster_is_scheduled_from_its_dump(tmp_path: Path) -> None:
    """Nodes registering 910B3 cards, the HAMi device ConfigMap and a pod asking a card
    in its limits only (the API server makes them its requests): the pod gets a card
    cut to the template its memory needs."""
    conf = ('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
            '  - name: predicates\n  - name: deviceshare\n    arguments:\n'
            '      deviceshare.AscendHAMiVNPUEnable: true\n'
            '      deviceshare.KnownGeometriesCMNamespace: kube-system\n'
            '      deviceshare.KnownGeometriesCMName: hami-scheduler-device\n')
    devices = ("vnpus:\n  hamiVnpuCore: false\n  configs:\n  - chipName: 910B3\n"
               "    commonWord: Ascend910B3\n    resourceName: huawei.com/Ascend910B3\n"
               "    resourceMemoryName: huawei.com/Ascend910B3-memory\n"
               "    memoryAllocatable: 65536\n    memoryCapacity: 65536\n    templates:\n"
               "    - {name: vir05_1c_16g, memory: 16384}\n"
               "    - {name: vir10_3c_32g, memory: 32768}\n")
    register = json.dumps([{"id": f"npu-{i}", "count": 4, "devmem": 65536, "devcore": 20}
                           for i in range(2)])
    document = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
         "data": {"volcano-scheduler.conf": conf}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "hami-scheduler-device", "namespace": "kube-system"},
         "data": {"device-config.yaml": devices}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "default"}, "spec": {"weight": 1}},
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "atlas-0", "labels": {"ascend": "on"},
                      "annotations": {"hami.io/node-register-Ascend910B3": register}},
         "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110",
                                    "huawei.com/Ascend910B3": "8"},
                    "conditions": [{"type": "Ready", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "infer", "namespace": "ml", "uid": "u-1"},
         "spec": {"schedulerName": "volcano", "containers": [{
             "name": "main", "resources": {"limits": {
                 "huawei.com/Ascend910B3": "1", "huawei.com/Ascend910B3-memory": "20000"}}}]},
         "status": {"phase": "Pending"}},
    ]}
    scenario = load_kubectl_dump(write(tmp_path, document))
    got = run_scenario(scenario).to_json()
    assert got["binds"] == {"ml/infer": "atlas-0"}
    assert got["vnpuDevices"] == {"ml/infer": [
        {"uuid": "npu-0", "type": "Ascend910B3", "memory": 32768, "cores": 0}]}


def test_a_placed_pod_keeps_when_it_started() -> None:
    """``status.startTime``: a replay forward (``explain --predict-start``) counts a
    running pod's time from it, not from now."""
    document = dump()
    placed = next(i for i in document["items"] if i["kind"] == "Pod"
                  and i["spec"].get("nodeName") and i["status"].get("phase") == "Running")
    placed["status"]["startTime"] = "2024-06-01T11:00:00Z"
    scenario = load_kubectl_dump_document(document)
    task = next(t for t in scenario.tasks if t.name == placed["metadata"]["name"])
    assert task.start_time == 1717239600.0


def load_kubectl_dump_document(document: dict[str, Any]) -> Any:
    from batchsched.scenario import parse_scenario

    return parse_scenario(scenario_document_from_kubectl(document, source="dump.json"))


def test_a_node_given_twice_is_bad_input() -> None:
    document = dump()
    node = next(i for i in document["items"] if i["kind"] == "Node")
    document["items"].append(copy.deepcopy(node))
    with pytest.raises(ScenarioError, match="a node of that name is in the dump already"):
        scenario_document_from_kubectl(document, source="dump.json")


def test_a_queue_weight_outside_the_api_server_s_range_is_bad_input() -> None:
    from batchsched.scenario import parse_scenario

    doc = {"version": 1, "config": {"actions": ""}, "queues": [{"name": "q", "weight": -3}]}
    with pytest.raises(ScenarioError, match=r"queues\[0\] \(q\)\.weight: must be between 1"):
        parse_scenario(doc)


def test_a_configmap_naming_an_unknown_action_is_refused_at_import_naming_it() -> None:
    document = dump()
    cm = next(i for i in document["items"] if i["kind"] == "ConfigMap"
              and "volcano-scheduler.conf" in (i.get("data") or {}))
    conf = cm["data"]["volcano-scheduler.conf"]
    cm["data"]["volcano-scheduler.conf"] = conf.replace("allocate", "allocat", 1)
    with pytest.raises(ConfigError, match=r"ConfigMap .*unknown action 'allocat'"):
        scenario_document_from_kubectl(document, source="dump.json")


def test_several_dumps_in_one_file_are_one_list(tmp_path: Path) -> None:
    """The outputs of several ``kubectl get`` commands appended (JSON values one after
    another, or a YAML stream), and Lists within the List, give all their objects."""
    document = dump()
    nodes = [i for i in document["items"] if i["kind"] == "Node"]
    rest = [i for i in document["items"] if i["kind"] != "Node"]
    whole = load_kubectl_dump(DUMP)
    node_list = {"apiVersion": "v1", "kind": "NodeList",
                 "items": [{k: v for k, v in n.items() if k != "kind"} for n in nodes]}
    appended = write(tmp_path, json.dumps(node_list) + "\n" + json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": rest}), "appended.json")
    stream = write(tmp_path, yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "List", "items": rest}, *nodes]), "stream.yaml")
    nested = write(tmp_path, {"apiVersion": "v1", "kind": "List", "items": [node_list, *rest]},
                   "nested.json")
    for path in (appended, stream, nested):
        scenario = load_kubectl_dump(path)
        assert sorted(n.name for n in scenario.nodes) == sorted(n.name for n in whole.nodes)
        assert len(scenario.tasks) == len(whole.tasks)
        assert len(run_scenario(load_scenario_or_dump(path)).binds) == len(
            run_scenario(whole).binds)


def test_a_scenario_of_two_documents_keeps_the_loader_s_error(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nname: a\n---\nversion: 1\nname: b\n", "s.yaml")
    with pytest.raises(ScenarioError, match="malformed document"):
        load_scenario_or_dump(path)


def test_the_loader_s_warnings_name_the_kubernetes_object(tmp_path: Path) -> None:
    document = dump()
    item(document, "PodGroup", "eval")["spec"]["priorityClassName"] = "missing-class"
    scenario = load_kubectl_dump(write(tmp_path, document))
    assert any("PodGroup team-a/eval: spec.priorityClassName: no priority class "
               "'missing-class'" in w for w in scenario.warnings), scenario.warnings


def test_a_scheduler_configmap_naming_no_action_is_refused(tmp_path: Path) -> None:
    """Volcano refuses such a configuration (and keeps its default)."""
    document = dump()
    for obj in document["items"]:
        if obj["kind"] == "ConfigMap" and "volcano-scheduler.conf" in obj.get("data", {}):
            obj["data"]["volcano-scheduler.conf"] = 'actions: ""\n'
    with pytest.raises(ConfigError, match="names no action"):
        load_kubectl_dump(write(tmp_path, document))


def test_an_error_in_a_list_within_the_list_says_where(tmp_path: Path) -> None:
    nested = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {}}]}]}
    with pytest.raises(ScenarioError, match=r"items\[0\]\.items\[0\] \(Node\): an object "
                                            r"without metadata\.name"):
        load_kubectl_dump(write(tmp_path, nested))


def test_init_containers_images_are_the_task_s_images_too(tmp_path: Path) -> None:
    """kube-scheduler's image locality (since v1.30) sums and counts the images of the
    init containers with the containers'."""
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump({
        "initContainers": [{"name": "setup", "image": "registry.example/init:1"}],
        "containers": [{"name": "a", "image": "registry.example/app:1"}]})))
    assert scenario.tasks[0].images == ("registry.example/init:1", "registry.example/app:1")


def test_pod_level_hugepages_replace_the_containers_too(tmp_path: Path) -> None:
    # IsSupportedPodLevelResource takes hugepages-* besides cpu and memory.
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump({
        "resources": {"requests": {"cpu": "1", "hugepages-2Mi": "1Gi"}},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]})))
    assert scenario.tasks[0].resreq.get("hugepages-2Mi") == GiB * 1000


def test_the_old_resize_status_field_is_not_read(tmp_path: Path) -> None:
    # The IsPodResizeInfeasible Volcano vendors reads the PodResizePending condition
    # only: an old kubelet's status.resize leaves the spec's requests counted.
    container = {"name": "a", "resources": {"requests": {"cpu": "2"}}}
    status = {"resize": "Infeasible", "containerStatuses": [
        {"name": "a", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}}]}
    scenario = load_kubectl_dump(write(tmp_path, _one_pod_dump({"containers": [container]},
                                                               status)))
    assert scenario.tasks[0].resreq.milli_cpu == 2000


def test_a_pod_s_own_pod_group_inherits_what_volcano_s_controller_copies(
        tmp_path: Path) -> None:
    # buildPodGroupFromPod copies these annotations (one budget) and labels, no others.
    document = scenario_document_from_kubectl(_one_pod_dump({"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "1"}}}]}), source="dump.json")
    assert "annotations" not in document["jobs"][0]
    dump_document = _one_pod_dump({"containers": [{"name": "a"}]})
    dump_document["items"][1]["metadata"].update(
        annotations={"volcano.sh/preemptable": "true", "volcano.sh/cooldown-time": "60s",
                     "volcano.sh/revocable-zone": "*", "volcano.sh/jdb-min-available": "1",
                     "volcano.sh/jdb-max-unavailable": "2", "other": "x"},
        labels={"volcano.sh/preemptable": "false", "app": "web"})
    job = scenario_document_from_kubectl(dump_document, source="dump.json")["jobs"][0]
    assert job["annotations"] == {
        "volcano.sh/preemptable": "true", "volcano.sh/cooldown-time": "60s",
        "volcano.sh/revocable-zone": "*", "volcano.sh/jdb-min-available": "1"}
    assert job["labels"] == {"volcano.sh/preemptable": "false"}
    scenario = load_kubectl_dump(write(tmp_path, dump_document))
    assert scenario.jobs[0].preemptable


def test_pods_created_in_the_same_second_are_ordered_by_their_uid(tmp_path: Path) -> None:
    # Volcano's task order falls back to the pod's uid (CompareTask): real pods' uids,
    # not the namespace-name of Volcano's test pods.
    document = _one_pod_dump({"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "8"}}}]})
    pod = document["items"][1]
    pod["metadata"].update(annotations={"scheduling.k8s.io/group-name": "g"},
                           creationTimestamp="2024-01-01T00:00:00Z")
    twin = copy.deepcopy(pod)
    pod["metadata"].update(name="web-aaaaa", uid="ffffffff-0000-0000-0000-000000000000")
    twin["metadata"].update(name="web-bbbbb", uid="00000000-0000-0000-0000-000000000000")
    document["items"] += [twin, {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}}]
    scenario = load_kubectl_dump(write(tmp_path, document))
    assert run_scenario(scenario).binds == {"ns/web-bbbbb": "n1"}


def test_an_empty_min_resources_is_kept_for_the_enqueue_vote(tmp_path: Path) -> None:
    """Volcano's enqueue skips the plugins' vote only for a pod group without
    minResources: an empty map is kept, and the vote is taken."""
    document = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "empty", "namespace": "ns"},
         "spec": {"minMember": 1, "minResources": {}}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "absent", "namespace": "ns"}, "spec": {"minMember": 1}}]}
    converted = scenario_document_from_kubectl(document, source="dump.json")
    by_name = {job["name"]: job for job in converted["jobs"]}
    assert by_name["empty"]["minResources"] == {}
    assert "minResources" not in by_name["absent"]
    scenario = load_kubectl_dump(write(tmp_path, document))
    jobs = {job.name: job for job in scenario.jobs}
    assert jobs["empty"].podgroup.min_resources is not None
    assert jobs["absent"].podgroup.min_resources is None


def _owned_pod_dump(owner_annotations: dict[str, str], namespace_annotations: dict[str, str]
                    ) -> dict[str, Any]:
    document = _one_pod_dump({"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "1"}}}]})
    pod = document["items"][1]
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-1",
         "controller": True}]
    document["items"] += [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": "web", "namespace": "ns", "annotations": owner_annotations}},
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "ns", "annotations": namespace_annotations}}]
    return document


def test_a_pod_s_own_pod_group_reads_its_owner_and_its_namespace() -> None:
    """Volcano's pod-group controller takes minMember from the owner's
    group-min-member (minResources: the pod's usage that many times) and its volcano.sh/
    annotations; its admission webhook moves a group of the default queue to the
    namespace's queue."""
    document = scenario_document_from_kubectl(_owned_pod_dump(
        {"scheduling.volcano.sh/group-min-member": "3", "volcano.sh/preemptable": "true",
         "other.io/kept-out": "x"},
        {"scheduling.volcano.sh/queue-name": "team-q"}), source="dump.json")
    job = document["jobs"][0]
    assert (job["name"], job["queue"], job["minMember"]) == ("podgroup-rs-1", "team-q", 3)
    assert job["minResources"]["cpu"] == "3"
    assert job["annotations"] == {"volcano.sh/preemptable": "true"}
    plain = scenario_document_from_kubectl(_owned_pod_dump({}, {}), source="dump.json")
    assert (plain["jobs"][0]["queue"], plain["jobs"][0]["minMember"]) == ("default", 1)
    # No replica: CalTaskRequests adds none, an empty list.
    none = scenario_document_from_kubectl(_owned_pod_dump(
        {"scheduling.volcano.sh/group-min-member": "0"}, {}), source="dump.json")
    assert (none["jobs"][0]["minMember"], none["jobs"][0]["minResources"]) == (0, {})


def test_a_pod_s_claim_statuses_are_named_by_their_kubernetes_field(tmp_path: Path) -> None:
    document = _one_pod_dump({"containers": [{"name": "a"}],
                              "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
                             {"resourceClaimStatuses": "x"})
    with pytest.raises(ScenarioError, match=r"status\.resourceClaimStatuses: must be a list"):
        load_kubectl_dump(write(tmp_path, document))



def test_a_configuration_of_the_dump_refusing_arguments_is_named_by_its_configmap(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = _one_pod_dump({"containers": [{"name": "a"}]})
    document["items"].append({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {"volcano-scheduler.conf": (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: wfp3\n"
            "    arguments: {wfp3.waitingTime: sometimes}\n")}})
    code = main(["run", str(write(tmp_path, document))])
    assert code == 2
    assert ("ConfigMap volcano-system/volcano-scheduler-configmap: data.volcano-scheduler.conf"
            ".tiers[0].plugins[1].arguments: plugin 'wfp3'") in capsys.readouterr().err


def test_a_cluster_s_written_statuses_decide_the_events_at_close(tmp_path: Path) -> None:
    """Volcano's job updater compares with the status the pod group had (phase, counts,
    conditions) and its cache with the pod's PodScheduled condition: an unchanged status
    records no event, a changed one does."""
    conf = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": (
                "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n"
                "  - name: predicates\n")}}
    scheduled = [{"type": "Scheduled", "status": "True",
                  "reason": "tasks in gang are ready to be scheduled"}]

    def group(name: str, running: int, conditions: Any = None) -> dict[str, Any]:
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "c1"},
                "spec": {"minMember": 1, "queue": "default"},
                "status": {"phase": "Running", "running": running, "conditions": conditions}}

    def pod(name: str, group_name: str, status: dict[str, Any], **spec: Any) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "c1", "uid": name,
                             "annotations": {"scheduling.k8s.io/group-name": group_name}},
                "spec": {"schedulerName": "volcano", "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "1"}}}], **spec},
                "status": status}

    waiting_message = "0/1 nodes are unavailable: 1 Insufficient cpu."
    document = {"apiVersion": "v1", "kind": "List", "items": [
        conf,
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}},
        group("steady", 2, scheduled), group("draining", 1),
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "waiting", "namespace": "c1"},
         "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}},
        pod("s0", "steady", {"phase": "Running"}, nodeName="n1"),
        pod("s1", "steady", {"phase": "Running"}, nodeName="n1"),
        {**pod("d0", "draining", {"phase": "Running"}, nodeName="n1"),
         "metadata": {"name": "d0", "namespace": "c1", "uid": "d0",
                      "deletionTimestamp": "2024-01-01T00:05:00Z",
                      "annotations": {"scheduling.k8s.io/group-name": "draining"}}},
        pod("w0", "waiting", {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": waiting_message}]}),
    ]}
    events = run_scenario(load_kubectl_dump(write(tmp_path, document))).events
    said = {(e["object"], e["reason"]) for e in events}
    assert ("c1/steady", "Scheduled") not in said       # unchanged: no event
    assert ("c1/draining", "Scheduled") in said         # running 1 -> 0
    assert ("c1/w0", "FailedScheduling") not in said    # the same condition again
