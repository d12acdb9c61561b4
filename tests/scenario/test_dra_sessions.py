"""Resource claims through sessions and caches: what binds write, what the pods' statuses
say, pipelines, hierarchical quotas and queue status (each case failed before its fix)."""

from __future__ import annotations

from typing import Any

import attrs
import yaml

from batchsched.kube.dra.documents import parse_resource_claim
from batchsched.scenario import parse_scenario, run_scenario
from batchsched.scheduler import Scheduler

GPU = "gpu.example.com"
CONFIG = {"actions": "enqueue, allocate", "tiers": [
    {"plugins": [{"name": "gang"}]}, {"plugins": [{"name": "predicates"}]}]}


def document(tasks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": 1, "name": "dra", "config": CONFIG,
        "deviceClasses": [{"name": "gpu", "selectors": [
            {"cel": {"expression": f'device.driver == "{GPU}"'}}]}],
        "resourceSlices": [{"name": "n1-gpus", "driver": GPU, "nodeName": "n1",
                            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}],
        "resourceClaimTemplates": [{"name": "one-gpu", "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": task["job"], "minMember": 1, "phase": "Inqueue"}
                 for task in tasks if "node" not in task],
        "tasks": tasks,
    }
    doc.update(extra)
    return doc


def pod(name: str, entries: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return {"name": name, "job": f"pg-{name}", "requests": {"cpu": 1},
            "resourceClaims": entries, **extra}


def test_a_status_entry_without_a_claim_means_the_pod_needs_none() -> None:
    task = pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
               resourceClaimStatuses=[{"name": "gpu"}])
    decisions = run_scenario(parse_scenario(document([task])))
    assert decisions.binds == {"default/p1": "n1"}
    assert decisions.claim_allocations == {}


def test_a_claim_made_from_a_template_does_not_replace_one_of_the_same_name() -> None:
    own = {"name": "p1-gpu", "requests": [{"name": "nic", "exactly": {"deviceClassName": "gpu"}}]}
    task = pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                      {"name": "nic", "resourceClaimName": "p1-gpu"}])
    decisions = run_scenario(parse_scenario(document([task], resourceClaims=[own])))
    assert set(decisions.claim_allocations) == {"default/p1-gpu", "default/p1-gpu-1"}


def test_the_host_binder_is_not_called_when_a_claim_cannot_be_written() -> None:
    scenario = parse_scenario(document([pod("p1", [{"name": "gpu",
                                                      "resourceClaimName": "mine"}])],
        resourceClaims=[{"name": "mine", "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}]))
    cache = scenario.build_cache()
    called: list[str] = []

    def binder(task: Any, node: str) -> bool:
        called.append(task.uid)
        return True
    cache.binder = binder
    original = cache.snapshot

    def snapshot() -> Any:  # the claim is allocated elsewhere once the session has begun
        taken = original()
        claim = cache.resource_claims["default/mine"]
        cache.resource_claims["default/mine"] = attrs.evolve(
            claim, allocation=parse_resource_claim({"name": "x", "allocation": {"results": [
                {"request": "gpu", "driver": GPU, "pool": "n1", "device": "gpu-1"}]}}).allocation)
        return taken
    cache.snapshot = snapshot  # type: ignore[method-assign]
    Scheduler(cache, scenario.configuration).run_once()
    assert called == [] and not cache.binds


def test_a_cache_binds_a_pod_whose_claims_no_plugin_allocated() -> None:
    """Without the predicates plugin nothing reserves devices (Volcano's capacity-only
    DRA case): the bind goes through and writes nothing on the claims."""
    doc = document([pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])],
                   config={"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]})
    scenario = parse_scenario(doc)
    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert [b.task for b in cache.binds] == ["default/p1"]
    assert cache.resource_claims["default/p1-gpu"].allocation is None


def _claim_reserved_for_256() -> dict[str, Any]:
    """A pod asking for a claim already reserved for 256 other pods."""
    return document([pod("p1", [{"name": "gpu", "resourceClaimName": "shared"}])],
                    resourceClaims=[{"name": "shared", "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}],
                        "allocation": {"results": [{"request": "gpu", "driver": GPU,
                                                    "pool": "n1", "device": "gpu-0"}]},
                        "reservedFor": [f"default/other-{i}" for i in range(256)]}])


def test_a_claim_reserved_for_256_pods_takes_no_more() -> None:
    """kube's PreFilter: an allocated claim that cannot be reserved for one more pod is
    "in use": the pod waits, nothing is placed (the bind used to be tried and fail)."""
    doc = _claim_reserved_for_256()
    scenario = parse_scenario(doc)
    cache = scenario.build_cache()
    ssn = Scheduler(cache, scenario.configuration).run_once()
    assert not cache.binds and not cache.unbinds
    assert any(e.reason == "FailedScheduling" and "resourceclaim in use" in e.message
               for e in ssn.events)


def test_a_pod_with_claims_to_allocate_is_not_pipelined() -> None:
    """Volcano reserves a pipelined pod for its empty spec.nodeName: the reservation
    fails and the pipeline is undone."""
    releasing = {"name": "old", "job": "pg-old", "node": "n1", "phase": "Running",
                 "deleting": True, "requests": {"cpu": 4}}
    waiting = pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    doc = document([releasing, waiting])
    doc["jobs"].append({"name": "pg-old", "minMember": 1, "phase": "Running"})
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.pipelined == {}
    without_claims = run_scenario(parse_scenario(document(
        [releasing, {**waiting, "resourceClaims": []}],
        jobs=doc["jobs"])))
    assert without_claims.pipelined == {"default/pg-p1": {"default/p1": "n1"}}


def test_a_job_of_the_root_queue_counts_twice_there() -> None:
    """Volcano's queue-status walk takes the root's parent to be the root."""
    doc = document([{"name": "p1", "job": "pg-p1", "node": "n1", "phase": "Running",
                     "requests": {"cpu": 1}}],
                   queues=[{"name": "root"}],
                   jobs=[{"name": "pg-p1", "queue": "root", "phase": "Running"}])
    status = run_scenario(parse_scenario(doc)).queue_status["root"]
    assert status["allocated"]["cpu"] == "2"


def test_a_job_of_a_root_queue_with_a_parent_counts_there_too() -> None:
    """Volcano's walk reads the root's own parent: root -> a -> root."""
    doc = document([{"name": "p1", "job": "pg-p1", "node": "n1", "phase": "Running",
                     "requests": {"cpu": 1}}],
                   queues=[{"name": "root", "parent": "a"}, {"name": "a"}],
                   jobs=[{"name": "pg-p1", "queue": "root", "phase": "Running"}])
    status = run_scenario(parse_scenario(doc)).queue_status
    assert (status["root"]["allocated"]["cpu"], status["a"]["allocated"]["cpu"]) == ("2", "1")


def test_an_ancestor_s_device_quota_is_checked_at_enqueue() -> None:
    doc = {
        "version": 1, "name": "hierarchy",
        "config": {"actions": "enqueue", "tiers": [{"plugins": [
            {"name": "capacity", "enableHierarchy": True}]}]},
        "queues": [{"name": "root"},
                   {"name": "team", "parent": "root",
                    "capability": {"cpu": 100, "deviceclass/gpu": 1}},
                   {"name": "leaf", "parent": "team"}],
        "resourceClaims": [{"name": "two", "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}]}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": "pg", "queue": "leaf", "minMember": 1, "phase": "Pending",
                  "minResources": {"cpu": 1}}],
        "tasks": [{"name": "p1", "job": "pg", "requests": {"cpu": 1},
                   "resourceClaims": [{"name": "gpu", "resourceClaimName": "two"}]}],
    }
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.pod_group_phases == {"default/pg": "Pending"}


def test_only_the_job_s_own_queue_reserves_devices_at_enqueue() -> None:
    """Volcano reserves a job's devices (its ancestors' too) only when its own queue keeps
    a device quota: a leaf without one leaves its parent's quota to allocate."""
    doc = {
        "version": 1, "name": "ancestor device inqueue",
        "config": {"actions": "enqueue", "tiers": [{"plugins": [
            {"name": "capacity", "enableHierarchy": True}]}]},
        "deviceClasses": [{"name": "gpu"}],
        "queues": [{"name": "root"},
                   {"name": "team", "parent": "root",
                    "capability": {"cpu": 100, "memory": "100Gi", "deviceclass/gpu": 2}},
                   {"name": "leaf", "parent": "team"}],
        "resourceClaims": [
            {"name": "c1", "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                                                    "count": 2}}]},
            {"name": "c2", "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                                                    "count": 1}}]}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": "j1", "queue": "leaf", "minMember": 1, "phase": "Pending",
                  "minResources": {"cpu": 1}, "createdAt": "2025-01-01T00:00:00Z"},
                 {"name": "j2", "queue": "leaf", "minMember": 1, "phase": "Pending",
                  "minResources": {"cpu": 1}, "createdAt": "2025-01-01T00:01:00Z"}],
        "tasks": [{"name": "p1", "job": "j1", "requests": {"cpu": 1},
                   "resourceClaims": [{"name": "gpu", "resourceClaimName": "c1"}]},
                  {"name": "p2", "job": "j2", "requests": {"cpu": 1},
                   "resourceClaims": [{"name": "gpu", "resourceClaimName": "c2"}]}],
    }
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.pod_group_phases == {"default/j1": "Inqueue", "default/j2": "Inqueue"}


# -- a third review's cases (each failed before its fix) -----------------------------------

def _running_with_template_claim() -> Any:
    doc = document([pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])])
    scenario = parse_scenario(doc)
    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert cache.resource_claims["default/p1-gpu"].allocation is not None
    return scenario, cache


def test_a_deleted_node_s_pods_get_new_claims() -> None:
    _, cache = _running_with_template_claim()
    cache.delete_node("n1")
    [task] = cache.jobs["default/pg-p1"].tasks.values()
    assert task.node_name == ""
    fresh = cache.resource_claims["default/p1-gpu"]
    assert fresh.allocation is None and fresh.reserved_for == ()


def test_a_template_set_after_its_pods_gives_them_claims() -> None:
    doc = document([pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "late"}])])
    scenario = parse_scenario(doc)
    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert not cache.binds  # ResourceClaim not created yet
    cache.set_claim_template(attrs.evolve(scenario.dra.claim_templates["default/one-gpu"],
                                          name="late"))
    Scheduler(cache, scenario.configuration).run_once()
    assert [b.task for b in cache.binds] == ["default/p1"]


def test_a_claim_reserved_for_256_pods_takes_no_more_in_a_run_either() -> None:
    doc = _claim_reserved_for_256()
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.binds == {}
    assert any(e["message"] == "0/1 nodes are unavailable: 1 plugin DynamicResources "
               "pre-predicates failed resourceclaim in use." for e in decisions.events)


def test_a_pod_with_claims_is_not_placed_without_the_pre_filter() -> None:
    """The predicates plugin's predicate off: kube's Reserve finds no state and fails."""
    doc = document([pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])],
                   config={"actions": "allocate", "tiers": [
                       {"plugins": [{"name": "gang"},
                                    {"name": "predicates", "enablePredicate": False}]}]})
    assert run_scenario(parse_scenario(doc)).binds == {}


def test_predicting_a_start_sees_claims_made_from_templates() -> None:
    from batchsched.simulation.predict import predict_start

    scenario = parse_scenario(document([pod("p1", [{"name": "gpu",
                                                     "resourceClaimTemplateName": "one-gpu"}])]))
    prediction = predict_start(scenario, "default/pg-p1")
    assert prediction["expectedStart"] is not None


def test_turning_dra_off_is_reported_and_on_is_in_force(
        tmp_path: Any, capsys: Any) -> None:
    """Volcano no longer reads predicate.DynamicResourceAllocationEnable: its feature
    gate, which is on, decides."""
    from batchsched.cli import main

    for value, ignored in (("false", True), ("true", False)):
        path = tmp_path / f"dra-{value}.conf"
        path.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n'
                        f"    arguments: {{predicate.DynamicResourceAllocationEnable: {value}}}\n")
        main(["conf", "validate", str(path)])
        assert ("ignored" in capsys.readouterr().out) is ignored


def test_a_template_the_scenario_lacks_is_a_warning_naming_the_task() -> None:
    scenario = parse_scenario(document([pod("p1", [{"name": "gpu",
                                                    "resourceClaimTemplateName": "nope"}])]))
    assert any("task default/p1: resourceClaims 'gpu': no claim template 'nope'" in warning
               for warning in scenario.warnings)


def test_an_extended_resource_backed_by_a_device_class_is_what_the_node_advertises() -> None:
    """Volcano's own resource check refuses a pod asking an extended resource its node
    does not advertise before kube's DRA plugin could allocate a class's devices for
    it (``extendedResourceName``); where the node advertises it, its device plugin
    serves it and no claim is allocated."""
    task = {"name": "p1", "job": "pg-p1", "requests": {"cpu": 1, "example.com/gpu": 1}}
    doc = document([task])
    doc["deviceClasses"][0]["extendedResourceName"] = "example.com/gpu"
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.binds == {}
    assert any("Insufficient example.com/gpu" in e["message"]
               for e in decisions.to_json()["events"])
    doc["nodes"][0]["allocatable"]["example.com/gpu"] = 1
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.binds == {"default/p1": "n1"}
    assert decisions.claim_allocations == {}


TOLERATING_CLAIM = """
version: 1
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}]
  - plugins: [{name: predicates}]
deviceClasses:
- name: gpu
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
resourceSlices:
- name: n1-gpus
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    taints: [{key: maintenance, value: "soon", effect: NoSchedule}]
resourceClaimTemplates:
- name: one-gpu
  namespace: t
  requests:
  - name: gpu
    exactly:
      deviceClassName: gpu
      tolerations: [{key: maintenance, operator: Exists}]
queues: [{name: q}]
nodes: [{name: n1, allocatable: {cpu: 16, memory: 64Gi, pods: 110}}]
jobs: [{name: j, namespace: t, queue: q, minMember: 1, phase: Inqueue}]
tasks:
- {name: p, namespace: t, job: j, requests: {cpu: 1},
   resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
"""


def test_an_allocation_carries_the_request_s_tolerations() -> None:
    # Kubernetes' allocator copies the request's tolerations into each device result
    # (what lets the pod keep a tainted device), and PreBind writes them.
    decisions = run_scenario(parse_scenario(yaml.safe_load(TOLERATING_CLAIM)))
    assert decisions.binds == {"t/p": "n1"}
    assert decisions.claim_allocations["t/p-gpu"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0",
         "tolerations": [{"key": "maintenance", "operator": "Exists"}]}]
    # Read back from the written status, they stay.
    claim = parse_resource_claim({
        "metadata": {"name": "p-gpu", "namespace": "t"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu"}}]}},
        "status": {"allocation": {"devices": {"results": decisions.claim_allocations[
            "t/p-gpu"]}}}})
    assert claim.allocation is not None
    assert claim.allocation.results[0].tolerations[0].operator == "Exists"


def test_a_pod_naming_one_unallocated_claim_twice_fails_its_bind() -> None:
    """kube allocates the claim once per entry; PreBind writes the first allocation and
    the second entry finds the claim allocated: "got allocated elsewhere in the
    meantime", and the pod is not bound."""
    claim = {"name": "shared", "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}
    twice = pod("p", [{"name": "a", "resourceClaimName": "shared"},
                      {"name": "b", "resourceClaimName": "shared"}])
    decisions = run_scenario(parse_scenario(document([twice], resourceClaims=[claim])))
    assert decisions.binds == {} and decisions.bind_failures == ["default/p"]
    assert any("claim default/shared got allocated elsewhere in the meantime" in e["message"]
               for e in decisions.events)
    once = pod("p", [{"name": "a", "resourceClaimName": "shared"}])
    assert run_scenario(parse_scenario(document([once], resourceClaims=[claim]))).binds == {
        "default/p": "n1"}


def test_a_slice_node_selector_kube_cannot_parse_fails_the_allocation_with_its_error() -> None:
    """The API server lets ``Gt abc`` through; kube's GatherPools cannot parse it and the
    DynamicResources Filter errs on every node, in kube's words."""
    doc = document([pod("p", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])])
    doc["resourceSlices"] = [{
        "name": "rack-gpus", "driver": GPU,
        "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "rack", "operator": "Gt", "values": ["abc"]}]}]},
        "pool": {"name": "rack", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}]
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.binds == {}
    assert any(
        "1 gather pool information: failed to perform node selection for slice rack-gpus: "
        "failed to parse node selector &NodeSelector{NodeSelectorTerms:[]NodeSelectorTerm{"
        "NodeSelectorTerm{MatchExpressions:[]NodeSelectorRequirement{NodeSelectorRequirement{"
        "Key:rack,Operator:Gt,Values:[abc],},},MatchFields:[]NodeSelectorRequirement{},},},}: "
        "nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"abc\": for 'Gt', "
        "'Lt' operators, the value must be an integer." in event["message"]
        for event in decisions.events)


def test_a_device_node_selector_kube_cannot_parse_fails_the_allocation_too() -> None:
    """kube's GatherPools goes device after device through a slice of per-device node
    selection: one it cannot parse, before a device on the node, fails it."""
    doc = document([pod("p", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])])
    doc["resourceSlices"] = [{
        "name": "rack-gpus", "driver": GPU, "perDeviceNodeSelection": True,
        "pool": {"name": "rack", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "Gt", "values": ["abc"]}]}]}},
            {"name": "gpu-1", "nodeName": "n1"}]}]
    decisions = run_scenario(parse_scenario(doc))
    assert decisions.binds == {}
    assert any("failed to perform node selection for device gpu-0 in slice rack-gpus"
               in event["message"] for event in decisions.events)


def test_a_generated_claim_another_pod_reserves_outlives_its_owner() -> None:
    """kube's garbage collector deletes a pod's generated claim with the pod, and the
    claim's finalizer keeps it (allocated) while another pod still reserves it."""
    doc = document([pod("p1", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]),
                    pod("q1", [{"name": "gpu", "resourceClaimName": "p1-gpu"}])])
    doc["resourceSlices"][0]["devices"] = [{"name": "gpu-0"}]
    scenario = parse_scenario(doc)
    cache = scenario.build_cache()
    Scheduler(cache, scenario.configuration).run_once()
    assert sorted(b.task for b in cache.binds) == ["default/p1", "default/q1"]
    for job, task in (("default/pg-p1", "default/p1"), ("default/pg-q1", "default/q1")):
        cache.task_started(job, task, at=0.0)
    cache.task_ended("default/pg-p1", "default/p1")
    claim = cache.resource_claims["default/p1-gpu"]
    assert (claim.allocation is not None, claim.reserved_for, claim.deleting) == (
        True, ("default/q1",), True)
    cache.task_ended("default/pg-q1", "default/q1")
    assert "default/p1-gpu" not in cache.resource_claims
