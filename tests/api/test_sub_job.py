"""Sub-jobs (Volcano's sub_job_info_test.go, the session's topology conversions of
session_test.go, and how tasks split), through the objects a session uses."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
from batchsched.api.hypernode import NetworkTopology, build_topology
from batchsched.api.sub_job import SubGroupPolicy, check_sub_jobs, sub_job_uid, sub_jobs_of
from batchsched.framework.network_topology import sub_job_session_topology
from batchsched.kube.affinity import parse_label_selector
from batchsched.plugins.gang import job_valid

S = TaskStatus


def task(name: str, status: TaskStatus = S.PENDING, labels: dict[str, str] | None = None, *,
         cpu: int = 1000, priority: int = 1) -> TaskInfo:
    t = TaskInfo.create("ns", name, "ns/pg", Resource(cpu, 0) if cpu else Resource(),
                        labels=labels, priority=priority)
    t.status = status
    return t


def job(*tasks: TaskInfo, policies: tuple[SubGroupPolicy, ...] = (), min_member: int = 0,
        topology: NetworkTopology | None = None) -> JobInfo:
    pg = PodGroup("pg", "ns", min_member=min_member, sub_group_policies=policies,
                  network_topology=topology)
    return JobInfo.from_podgroup(pg, tasks=tasks)


def selector(raw: dict[str, Any]) -> Any:
    return parse_label_selector(raw, "labelSelector")


# -- getSubJobMatchValues ------------------------------------------------------------------


@pytest.mark.parametrize(("policy", "labels", "want"), [
    (SubGroupPolicy("p", label_selector=selector({"matchLabels": {"app": "test"}}),
                    match_label_keys=("version", "env")),
     {"app": "test", "version": "v1", "env": "dev"}, ["v1", "dev"]),
    (SubGroupPolicy("p", match_label_keys=("zone",)), {"zone": "zone-1"}, ["zone-1"]),
    (SubGroupPolicy("p", label_selector=selector({"matchLabels": {"app": "test"}})),
     {"app": "test"}, []),
    (SubGroupPolicy("p", label_selector=selector({}), match_label_keys=("key",)),
     {"key": "value"}, ["value"]),
    (SubGroupPolicy("p", label_selector=selector({"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["test", "demo"]}]}),
                    match_label_keys=("app",)), {"app": "demo"}, ["demo"]),
    (SubGroupPolicy("p", match_label_keys=("a", "b")), {"a": "", "b": "val"}, None),
    (SubGroupPolicy("p", label_selector=selector({"matchLabels": {"app": "test"}})),
     {"app": "prod"}, None),
    (SubGroupPolicy("p", match_label_keys=("missing",)), {"app": "test"}, None),
    (SubGroupPolicy("p", match_label_keys=("app",)), {}, None),
])
def test_match_values(policy: SubGroupPolicy, labels: dict[str, str],
                      want: list[str] | None) -> None:
    assert policy.match_values(labels) == want


def test_sub_job_ids() -> None:
    assert sub_job_uid("job1", "policy1", ["value1", "value2"]) == "job1/policy1-value1-value2"
    assert sub_job_uid("job1", "policy1", ["value1"]) == "job1/policy1-value1"
    long = sub_job_uid("job1", "p", ["x" * 200])
    assert long.startswith("job1/p-") and len(long) < 40
    assert set(long.removeprefix("job1/p-")) <= set("bcdfghjklmnpqrstvwxz2456789")


# -- how tasks split -----------------------------------------------------------------------


def test_tasks_split_by_their_label_values_first_policy_wins() -> None:
    policies = (SubGroupPolicy("by-rack", sub_group_size=2, match_label_keys=("rack",)),
                SubGroupPolicy("by-role", match_label_keys=("role",)),
                SubGroupPolicy("keyless", min_sub_groups=0))
    j = job(task("a", labels={"rack": "1", "role": "w"}), task("b", labels={"rack": "1"}),
            task("c", labels={"rack": "2"}), task("d", labels={"role": "ps"}),
            task("e"), policies=policies)
    split = sub_jobs_of(j)
    assert {uid: sorted(s.tasks) for uid, s in split.items()} == {
        "ns/pg/by-rack-1": ["ns/a", "ns/b"],
        "ns/pg/by-rack-2": ["ns/c"],
        "ns/pg/by-role-ps": ["ns/d"],
        "ns/pg": ["ns/e"],  # no policy took it (a policy without keys takes none)
    }
    assert split["ns/pg/by-rack-1"].min_available == 2
    assert split["ns/pg/by-rack-1"].gid == "ns/pg/by-rack"
    assert split["ns/pg"].min_available == 1 and split["ns/pg"].default


def test_without_policies_one_sub_job_holds_every_task() -> None:
    j = job(task("a"), task("b"), min_member=2, topology=NetworkTopology("hard", 1))
    [only] = sub_jobs_of(j).values()
    assert (only.uid, only.min_available, only.policy_topology) == (
        "ns/pg", 2, NetworkTopology("hard", 1))
    assert only.tasks is j.tasks


def test_match_index_is_the_first_value_read_as_an_integer() -> None:
    policy = SubGroupPolicy("p", match_label_keys=("index",))
    j = job(task("a", labels={"index": "3"}), task("b", labels={"index": "w-0"}),
            task("c", labels={"index": "-2"}), policies=(policy,))
    assert {s.uid: s.match_index for s in sub_jobs_of(j).values()} == {
        "ns/pg/p-3": 3, "ns/pg/p-w-0": 0, "ns/pg/p--2": -2}


# -- IsReady / IsPipelined / priority --------------------------------------------------------


def one_sub_job(*tasks: TaskInfo, size: int) -> Any:
    policy = SubGroupPolicy("p", sub_group_size=size, match_label_keys=("g",))
    for t in tasks:
        t.labels = {**t.labels, "g": "x"}
    return sub_jobs_of(job(*tasks, policies=(policy,)))["ns/pg/p-x"]


@pytest.mark.parametrize(("statuses", "best_effort", "size", "ready", "pipelined"), [
    ([S.PIPELINED] * 3, 0, 3, False, True),
    ([S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.SUCCEEDED], 0, 6, False, True),
    ([S.PIPELINED], 2, 3, False, True),
    ([S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.SUCCEEDED], 2, 8, False, True),
    ([S.PENDING, S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.SUCCEEDED], 1, 8,
     False, False),
    ([S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.FAILED], 2, 8, False, False),
    ([S.UNKNOWN], 2, 3, False, False),
    ([S.PENDING] * 3, 0, 3, False, False),
    ([], 2, 2, True, True),
    ([S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING, S.SUCCEEDED], 1, 6, True, True),
    ([S.FAILED], 0, 1, False, False),
])
def test_ready_and_pipelined(statuses: list[TaskStatus], best_effort: int, size: int,
                             ready: bool, pipelined: bool) -> None:
    tasks = [task(f"t{i}", status) for i, status in enumerate(statuses)]
    tasks += [task(f"be{i}", cpu=0) for i in range(best_effort)]
    sub_job = one_sub_job(*tasks, size=size)
    assert (sub_job.is_ready(), sub_job.is_pipelined()) == (ready, pipelined)


@pytest.mark.parametrize(("priorities", "want"), [
    ([1], 1), ([1, 2, 3], 3), ([-1, -2, -3], 0)])
def test_priority_is_the_highest_task_priority_at_least_zero(priorities: list[int],
                                                             want: int) -> None:
    tasks = [task(f"t{i}", priority=p) for i, p in enumerate(priorities)]
    assert one_sub_job(*tasks, size=1).priority == want


# -- the job's checks -------------------------------------------------------------------------


def test_min_sub_groups_makes_the_job_valid_ready_and_pipelined() -> None:
    policy = SubGroupPolicy("p", sub_group_size=2, min_sub_groups=2, match_label_keys=("g",))
    group = lambda name, g, status=S.PENDING: task(name, status, {"g": g})  # noqa: E731
    one = job(group("a", "1"), group("b", "1"), policies=(policy,))
    assert not check_sub_jobs(one, "valid")
    verdict = job_valid(one)
    assert verdict is not None
    assert verdict.message == "Not enough valid subGroups of each task for gang-scheduling"
    two = job(group("a", "1", S.RUNNING), group("b", "1", S.RUNNING),
              group("c", "2", S.PIPELINED), group("d", "2"), policies=(policy,))
    assert check_sub_jobs(two, "valid")
    assert not check_sub_jobs(two, "ready") and not check_sub_jobs(two, "pipelined")
    two.update_task_status(two.tasks["ns/d"], S.PIPELINED)
    assert check_sub_jobs(two, "pipelined") and not check_sub_jobs(two, "ready")


# -- the session's reading of a sub-job's topology (session_test.go) -------------------------


@pytest.mark.parametrize(("job_spec", "spec", "want"), [
    (None, NetworkTopology("soft"), NetworkTopology("hard", 4)),
    (None, NetworkTopology("hard", 2), NetworkTopology("hard", 2)),
    (NetworkTopology("hard", 2), NetworkTopology("soft"), NetworkTopology("hard", 2)),
    (NetworkTopology("hard", 3), NetworkTopology("soft", 1), NetworkTopology("hard", 3)),
    (None, NetworkTopology("hard", None, "rack"), NetworkTopology("hard", 1)),
    (None, NetworkTopology("hard", None, "unknown"), NetworkTopology("hard", None, "unknown")),
])
def test_sub_job_topology_as_the_session_reads_it(job_spec: NetworkTopology | None,
                                                  spec: NetworkTopology,
                                                  want: NetworkTopology) -> None:
    from batchsched.api.hypernode import HyperNode, HyperNodeMember

    leaf = HyperNode("r", 1, (HyperNodeMember("Node", exact="n"),), "rack")
    spine = HyperNode("s", 3, (HyperNodeMember("HyperNode", exact="r"),))
    topology = build_topology([leaf, spine], [])
    assert topology.top_tier == 4
    assert sub_job_session_topology(spec, job_spec, topology) == want


def test_a_selector_kubernetes_cannot_read_makes_its_policy_take_no_task() -> None:
    # The API server stores a pod group whose subGroupPolicy selector Kubernetes cannot
    # read (In with no values); Volcano logs it and the policy matches no task: the
    # tasks go to the next policy, else to the default sub-job. The scenario loads.
    from batchsched.scenario import parse_scenario
    document = {
        "version": 1, "config": {"actions": "allocate", "tiers": [{"plugins": [
            {"name": "gang"}]}]},
        "nodes": [], "jobs": [{"name": "pg", "minMember": 1, "subGroupPolicy": [
            {"name": "bad", "matchLabelKeys": ["group"],
             "labelSelector": {"matchExpressions": [
                 {"key": "group", "operator": "In", "values": []}]}},
            {"name": "good", "matchLabelKeys": ["group"]}]}],
        "tasks": [{"name": "t", "job": "pg", "labels": {"group": "0"}}]}
    scenario = parse_scenario(document, source="s.yaml")
    assert any("labelSelector.matchExpressions[0].values" in w and "takes no task" in w
               for w in scenario.warnings)
    bad, good = scenario.jobs[0].podgroup.sub_group_policies
    assert bad.match_values({"group": "0"}) is None
    assert good.match_values({"group": "0"}) == ["0"]


@pytest.mark.parametrize(("policy", "where"), [
    # labels.NewRequirement checks every value, whatever the operator.
    ({"labelSelector": {"matchExpressions": [
        {"key": "group", "operator": "In", "values": ["0", "not a value"]}]}},
     "labelSelector.matchExpressions[0].values[1]"),
    ({"labelSelector": {"matchExpressions": [
        {"key": "group", "operator": "NotIn", "values": ["-x"]}]}},
     "labelSelector.matchExpressions[0].values[0]"),
    ({"labelSelector": {"matchExpressions": [{"key": "", "operator": "Exists"}]}},
     "labelSelector.matchExpressions[0].key"),
    ({"labelSelector": {"matchLabels": {"group": "a b"}}}, "labelSelector.matchLabels.group"),
    ({"labelSelector": {"matchLabels": {"bad key!": "0"}}}, "labelSelector.matchLabels"),
    # No pod has a label "": Volcano's getSubJobMatchValues takes no task.
    ({"matchLabelKeys": ["group", ""]}, "matchLabelKeys[1]"),
])
def test_a_policy_volcano_cannot_read_takes_no_task_and_the_scenario_loads(
        policy: dict[str, Any], where: str) -> None:
    from batchsched.scenario import parse_scenario
    document = {
        "version": 1, "config": {"actions": "allocate", "tiers": [{"plugins": [
            {"name": "gang"}]}]},
        "nodes": [], "jobs": [{"name": "pg", "minMember": 1, "subGroupPolicy": [
            {"name": "bad", "matchLabelKeys": ["group"], **policy},
            {"name": "good", "matchLabelKeys": ["group"]}]}],
        "tasks": [{"name": "t", "job": "pg", "labels": {"group": "0"}}]}
    scenario = parse_scenario(document, source="s.yaml")
    assert any(f"subGroupPolicy[0].{where}" in w and "takes no task" in w
               for w in scenario.warnings), scenario.warnings
    bad, good = scenario.jobs[0].podgroup.sub_group_policies
    assert bad.match_values({"group": "0"}) is None
    assert good.match_values({"group": "0"}) == ["0"]
