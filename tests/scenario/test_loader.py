"""Scenario loading: strict, with errors naming file, object and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from batchsched.api import TaskStatus
from batchsched.errors import ScenarioError
from batchsched.scenario import load_scenario, parse_scenario, run_scenario

BASE = """
version: 1
name: base
config: {actions: ""}
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
jobs:
  - {name: pg1, namespace: c1, queue: q1, minMember: 1}
tasks:
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 1, memory: 1Gi}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def load_with(tmp_path: Path, old: str, new: str) -> None:
    assert old in BASE, old
    load_scenario(write(tmp_path, BASE.replace(old, new)))


BAD_INPUTS = [
    ("memory: 1Gi}}\n", 'memory: "1Qi"}}\n',
     's.yaml: tasks[0] (c1/p1).requests.memory: "1Qi" is not a quantity'),
    ("cpu: 2, memory: 4Gi", "cpu: two, memory: 4Gi",
     'nodes[0] (n1).allocatable.cpu: "two" is not a quantity'),
    ("job: pg1", "job: pg9", "tasks[0] (c1/p1).job: no job 'pg9' in namespace 'c1'"),
    ("requests: {cpu: 1", "node: n7, phase: Running, requests: {cpu: 1",
     "tasks[0] (c1/p1).node: no node 'n7'"),
    ("minMember: 1}", "minMember: 1, minMembr: 2}", "jobs[0] (c1/pg1).minMembr: unknown key"),
    ("version: 1", "version: 2", "version: must be 1, not 2"),
    ("name: base", "name: base\nextra: 1", "(top level).extra: unknown key"),
    ("minMember: 1}", "minMember: -1}", "jobs[0] (c1/pg1).minMember: must not be negative"),
    ("queues: [{name: q1}]", "queues: [{name: q1}, {name: q1}]",
     "queues[1] (q1): duplicate queue 'q1'"),
    ("minMember: 1}", "minMember: 1, phase: Sleeping}",
     "jobs[0] (c1/pg1).phase: 'Sleeping' is not one of"),
    ("minMember: 1}", "minMember: 1, phase: [Pending]}",
     "jobs[0] (c1/pg1).phase: ['Pending'] is not one of"),
    ('config: {actions: ""}', "config: {actions: allocate, tiers: [{plugins: [{name: gang, "
     "enableJobReady: maybe}]}]}",
     "config.tiers[0].plugins[0].enableJobReady: must be true or false"),
    ("minMember: 1}", "minMember: 1, createdAt: yesterday}",
     "jobs[0] (c1/pg1).createdAt: 'yesterday' is not a time"),
    ("requests: {cpu: 1", "hostPorts: [70000], requests: {cpu: 1",
     "tasks[0] (c1/p1).hostPorts[0]: 70000 is not a port"),
    ("requests: {cpu: 1", "hostPorts: [80, 80], requests: {cpu: 1",
     "tasks[0] (c1/p1).hostPorts[1]: port 80/TCP is given twice"),
    ("requests: {cpu: 1", "hostPorts: [{port: 53, protocol: udp}], requests: {cpu: 1",
     "tasks[0] (c1/p1).hostPorts[0].protocol: 'udp' is not one of TCP, UDP, SCTP"),
    ("requests: {cpu: 1", "hostPorts: [{port: 53, hostIP: 'ten'}], requests: {cpu: 1",
     "tasks[0] (c1/p1).hostPorts[0].hostIP: 'ten' is not an IP address"),
    ("requests: {cpu: 1", "hostPorts: [{port: 53, host: x}], requests: {cpu: 1",
     "tasks[0] (c1/p1).hostPorts[0].host: unknown key"),
    ("requests: {cpu: 1", "hostPorts: [{protocol: UDP}], requests: {cpu: 1",
     "tasks[0] (c1/p1).hostPorts[0].port: None is not a port"),
    ("tasks:\n", "tasks: {p1: 1}\nunused:\n", "(top level).unused: unknown key"),
    ("requests: {cpu: 1", "tolerations: [{key: k, operator: Maybe}], requests: {cpu: 1",
     "tasks[0] (c1/p1).tolerations[0].operator: 'Maybe' is not one of Equal, Exists "
     "(or empty)"),  # the empty choice was printed as a trailing ", "
    ("{name: n1, allocatable", "{name: n1, taints: [{value: v}], allocatable",
     "nodes[0] (n1).taints[0].key: is required"),
    # Found by an audit of the format's contract: each crashed, hung or passed silently.
    ("requests: {cpu: 1", "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuring"
     "Execution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: {x: 1}}]}]}}}, "
     "requests: {cpu: 1",
     "matchExpressions[0].operator: {'x': 1} is not one of"),
    ("minMember: 1}", "minMember: 1, createdAt: 1" + "0" * 400 + "}",
     "jobs[0] (c1/pg1).createdAt: is too large to be a time"),
    ("minMember: 1}", "minMember: 1, createdAt: .nan}", "jobs[0] (c1/pg1).createdAt: nan is not"),
    ("name: base", "name: base\nnow: -90s", "now: '-90s': the session clock cannot be relative"),
    # Label names Kubernetes validates in affinity terms and spread constraints: the
    # term matched nothing, and the task failed at run time instead.
    ("requests: {cpu: 1", "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuring"
     "Execution: [{topologyKey: 'a b', labelSelector: {matchLabels: {app: x}}}]}}, "
     "requests: {cpu: 1", "topologyKey: 'a b' is not a valid label name"),
    ("requests: {cpu: 1", "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnored"
     "DuringExecution: [{topologyKey: zone, labelSelector: {matchLabels: {app: x}}, "
     "matchLabelKeys: ['a b']}]}}, requests: {cpu: 1",
     "matchLabelKeys[0]: 'a b' is not a valid label name"),
    ("requests: {cpu: 1", "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, "
     "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: x}}, "
     "matchLabelKeys: ['a b']}], requests: {cpu: 1",
     "matchLabelKeys[0]: 'a b' is not a valid label name"),
    # Volcano's virtual root's name: the hypernode became its own child, silently.
    ("name: base", "name: base\nhyperNodes: [{name: <cluster-top-hypernode>, tier: 1, "
     "members: [{type: Node, selector: {exactMatch: {name: n1}}}]}]",
     "hyperNodes[0].name: '<cluster-top-hypernode>' is the name of Volcano's virtual root"),
    ("name: base", "name: base\nhyperNodes: [{name: s1, tier: 2, members: [{type: HyperNode, "
     "selector: {exactMatch: {name: <cluster-top-hypernode>}}}]}]",
     "hyperNodes[0].members[0].selector.exactMatch.name: '<cluster-top-hypernode>' is the "
     "name of Volcano's virtual root"),
    # Found by an audit of the time plugins: an empty `now` read as relative, a time
    # in milliseconds accepted (tdm then failed on the year 55971).
    ("name: base", 'name: base\nnow: ""',
     "now: '' is not a time (RFC 3339 or seconds since the epoch)"),
    ("name: base", "name: base\nnow: 1704110400000",
     "now: 1704110400000 is no time of the years 1 to 9999 in seconds since the epoch"),
    ("minMember: 1}", "minMember: 1, createdAt: 1704110400000}",
     "jobs[0] (c1/pg1).createdAt: 1704110400000 is no time of the years 1 to 9999"),
    ("memory: 1Gi}}\n", 'memory: "1e99999999"}}\n',
     'tasks[0] (c1/p1).requests.memory: "1e99999999" is out of range'),
    ("memory: 1Gi}}\n", "memory: " + "1" * 5000 + "}}\n",
     "malformed document: a number of more than 4300 digits"),
    ("name: base", "name: [base]", "s.yaml: name: must be a string, not a list"),
    ("requests: {cpu: 1", "tolerations: [{key: [k]}], requests: {cpu: 1",
     "tasks[0] (c1/p1).tolerations[0].key: must be a string, not a list"),
    ("{name: n1, allocatable", "{name: n1, taints: [{key: k, value: [1]}], allocatable",
     "nodes[0] (n1).taints[0].value: must be a string, not a list"),
    ("tasks:\n", "pdbs: [{name: b, selector: {a: b}, minAvailable: 1},"
     " {name: b, selector: {a: b}, minAvailable: 1}]\ntasks:\n",
     "pdbs[1] (default/b): duplicate pdb 'default/b'"),
    ("tasks:\n", "pdbs: [{name: b, selector: {a: b}, minAvailable: '150%'}]\ntasks:\n",
     "pdbs[0] (default/b).minAvailable: '150%' is not a count or a percentage up to 100%"),
    ("tasks:\n", "pdbs: [{name: b, selector: {a: b}, minAvailable: ' 50%'}]\ntasks:\n",
     "pdbs[0] (default/b).minAvailable: ' 50%' is not a count"),
    ("tasks:\n", "pdbs: [{name: b, selector: {a: b}, disruptionsAllowed: -3}]\ntasks:\n",
     "pdbs[0] (default/b).disruptionsAllowed: must not be negative, not -3"),
    ("tasks:\n", "pdbs: [{name: b, matchExpressions: [{key: a, operator: Within}],"
     " disruptionsAllowed: 1}]\ntasks:\n",
     "pdbs[0] (default/b).matchExpressions[0].operator: 'Within' is not one of"),
    ("tasks:\n", "resourceQuotas: [{name: r, namespace: c1, hard: {cpu: 1}},"
     " {name: r, namespace: c1, hard: {cpu: 2}}]\ntasks:\n",
     "resourceQuotas[1] (c1/r): duplicate resource quota 'c1/r'"),
    ("queues:", "priorityClasses: [{name: a, value: 1, globalDefault: true},"
     " {name: b, value: 2, globalDefault: true}]\nqueues:",
     "priorityClasses[1] (b).globalDefault: 'a' is the global default already"),
    ("requests: {cpu: 1", "role: worker, annotations: {volcano.sh/task-spec: master}, "
     "requests: {cpu: 1",
     "tasks[0] (c1/p1).role: 'worker' is not the pod's volcano.sh/task-spec annotation"),
    ("requests: {cpu: 1", "tolerations: [{key: k, operator: Exists, value: v}], "
     "requests: {cpu: 1",
     "tasks[0] (c1/p1).tolerations[0].value: must be empty when the operator is Exists"),
    ("requests: {cpu: 1", "tolerations: [{value: v}], requests: {cpu: 1",
     "tasks[0] (c1/p1).tolerations[0].operator: must be Exists when the key is empty"),
    ("tasks:\n", "expect: {taskStatusCounts: {c1/pg1: {Bindng: 0}}}\ntasks:\n",
     "expect.taskStatusCounts.c1/pg1.Bindng: not a task status (known: Pending,"),
    ("tasks:\n", "expect: {taskStatusCounts: {c1/pg9: {Pending: 0}}}\ntasks:\n",
     "expect.taskStatusCounts.c1/pg9: no job 'c1/pg9'"),
    ("tasks:\n", "expect: {podGroupPhases: {pg1: Pending}}\ntasks:\n",
     "expect.podGroupPhases.pg1: no job 'pg1' (a job id is namespace/name)"),
    ("tasks:\n", "expect: {podGroupPhases: {c1/pg1: Runing}}\ntasks:\n",
     "expect.podGroupPhases.c1/pg1: 'Runing' is not a pod group phase"),
    ("tasks:\n", "expect: {scores: {c1/p1: {n1: .nan}}}\ntasks:\n",
     "expect.scores: has the wrong shape"),
    ("tasks:\n", "expect: {scores: {c1/p1: {n1: 1" + "0" * 400 + "}}}\ntasks:\n",
     "expect.scores: has the wrong shape"),
    # Found by a later audit: each crashed or passed silently.
    ("tasks:\n", "expect: {taskStatusCounts: {c1/pg1: null}}\ntasks:\n",
     "expect.taskStatusCounts: has the wrong shape"),
    ("tasks:\n", "expect: {scores: {c1/p1: null}}\ntasks:\n", "expect.scores: has the wrong shape"),
    ("tasks:\n", "expect: {pipelined: {c1/pg1: null}}\ntasks:\n",
     "expect.pipelined: has the wrong shape"),
    ("requests: {cpu: 1", "requests: {2: 1, cpu: 1",
     "tasks[0] (c1/p1).requests.2: a resource name is a string, not a number"),
    ("{cpu: 2, memory: 4Gi", "{5: 1, cpu: 2, memory: 4Gi",
     "nodes[0] (n1).allocatable.5: a resource name is a string, not a number"),
    ("queues: [{name: q1}]", "queues: [{name: q1, capability: {7: 1}}]",
     "queues[0] (q1).capability.7: a resource name is a string, not a number"),
    ("memory: 1Gi}}\n", 'memory: "\uff11Gi"}}\n',
     'tasks[0] (c1/p1).requests.memory: "\uff11Gi" is not a quantity'),
    ("cpu: 2, memory: 4Gi", 'cpu: "\u0664", memory: 4Gi',
     'nodes[0] (n1).allocatable.cpu: "\u0664" is not a quantity'),
    ("queues: [{name: q1}]", "queues: [{name: q1, affinity: {nodeGroupAffinity: "
     "{requiredDuringSchedulingIgnoredDuringExecution: [[groupA]]}}}]",
     "nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: must be a node "
     "group name, not a list"),
    ('config: {actions: ""}', 'config: {actions: "", configurations: [{name: allocate, '
     'arguments: []}]}', "configurations[0].arguments: must be a mapping"),
    ('config: {actions: ""}', 'config: {actions: "", configurations: [{name: allocate, '
     'arguments: false}]}', "configurations[0].arguments: must be a mapping"),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD_INPUTS,
                         ids=[m.split(":")[0] + ":" + m.split(":")[1] for _, _, m in BAD_INPUTS])
def test_bad_input_names_object_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_with(tmp_path, old, new)
    assert message in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "s.yaml"))


def test_times_yaml_leaves_unread_are_numbers_as_in_json(tmp_path: Path) -> None:
    # YAML 1.1 reads 1.7e9 as text (a float wants a dot and a signed exponent).
    scenario = load_scenario(write(tmp_path, BASE.replace("name: base", "name: base\nnow: 1.7e9")
                                   .replace("minMember: 1}", "minMember: 1, createdAt: 1e9}")))
    assert scenario.now == 1.7e9
    assert scenario.jobs[0].creation_time == 1e9


def test_a_spread_constraint_s_topology_key_need_not_be_a_label_name() -> None:
    # The API server only asks that it be given (ValidateTopologyKey).
    doc = yaml.safe_load(BASE)
    doc["tasks"][0]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "Example.com/rack", "whenUnsatisfiable": "ScheduleAnyway"}]
    parse_scenario(doc, source="s.yaml")


def test_an_unquoted_yaml_date_is_its_midnight_in_utc(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE.replace("name: base",
                                                          "name: base\nnow: 2024-01-02")))
    assert scenario.now == 1704153600.0  # as "2024-01-02" quoted


def test_a_byte_order_mark_is_not_part_of_a_json_scenario(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('\ufeff{"version": 1, "name": "bom", "config": {"actions": ""}}',
                    encoding="utf-8")
    assert load_scenario(path).name == "bom"


def test_the_task_spec_annotation_is_the_task_s_role(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE.replace(
        "requests: {cpu: 1", "annotations: {volcano.sh/task-spec: master}, requests: {cpu: 1")))
    assert scenario.tasks[0].role == "master"


@pytest.mark.parametrize("fields, role", [
    # Volcano's getTaskRole: the annotation unless missing or empty, then the label.
    ("labels: {volcano.sh/task-spec: worker}, ", "worker"),
    ("labels: {volcano.sh/task-spec: worker}, annotations: {volcano.sh/task-spec: ''}, ",
     "worker"),
    ("labels: {volcano.sh/task-spec: worker}, annotations: {volcano.sh/task-spec: ps}, ", "ps"),
    ("role: worker, annotations: {volcano.sh/task-spec: ''}, ", "worker"),
    ("role: worker, labels: {volcano.sh/task-spec: worker}, ", "worker"),
])
def test_the_task_spec_label_is_the_role_when_no_annotation_names_one(
        tmp_path: Path, fields: str, role: str) -> None:
    scenario = load_scenario(write(tmp_path, BASE.replace(
        "requests: {cpu: 1", fields + "requests: {cpu: 1")))
    assert scenario.tasks[0].role == role


def test_a_role_that_is_not_the_task_spec_label_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"'ps' is not the pod's volcano\.sh/task-spec "
                                            r"label 'worker'"):
        load_scenario(write(tmp_path, BASE.replace(
            "requests: {cpu: 1", "role: ps, labels: {volcano.sh/task-spec: worker}, "
                                 "requests: {cpu: 1")))


def test_an_empty_toleration_operator_is_equal(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE.replace(
        "requests: {cpu: 1", "tolerations: [{key: k, operator: '', value: v}], requests: {cpu: 1")))
    assert scenario.tasks[0].tolerations[0].operator == "Equal"


def test_a_toleration_value_yaml_reads_as_a_boolean_is_its_label_text(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE.replace(
        "requests: {cpu: 1", "tolerations: [{key: gpu, value: true}], requests: {cpu: 1")))
    assert scenario.tasks[0].tolerations[0].value == "true"


def test_malformed_yaml(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"s.yaml: malformed document at line \d+"):
        load_scenario(write(tmp_path, "version: 1\nconfig: {actions: [\n"))


def test_missing_file() -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario("does/not/exist.yaml")


def test_job_with_missing_queue_is_dropped_with_a_warning() -> None:
    scenario = parse_scenario(yaml.safe_load(BASE.replace("queue: q1,", "queue: qX,")))
    assert not scenario.to_cluster().jobs  # left out of the session
    assert any("queue 'qX' does not exist" in w for w in scenario.warnings)


def test_a_resource_name_volcano_does_not_count_is_left_out_with_a_warning() -> None:
    # Kubernetes refuses a bare "gpu" in a pod or on a node; Volcano's NewResource
    # would not see it: an extended resource is qualified (nvidia.com/gpu).
    doc = yaml.safe_load(BASE)
    doc["nodes"][0]["allocatable"]["gpu"] = 4
    doc["tasks"][0]["requests"] = {"cpu": 1, "gpu": 1, "example.com/fpga": 1}
    scenario = parse_scenario(doc, source="s.yaml")
    assert "gpu" not in scenario.nodes[0].allocatable.scalars
    task = scenario.tasks[0]
    assert "gpu" not in task.resreq.scalars and "example.com/fpga" in task.resreq.scalars
    node_path, task_path = "nodes[0] (n1).allocatable", f"tasks[0] ({task.uid}).requests"
    for path, holder in ((node_path, "node"), (task_path, "pod")):
        assert (f"s.yaml: {path}.gpu: not a resource name Volcano counts (Kubernetes refuses "
                f"it in a {holder}; an extended resource is qualified, such as "
                "example.com/gpu); left out") in scenario.warnings


def test_a_queue_quota_on_a_name_volcano_does_not_count_is_warned_of() -> None:
    # It was dropped silently: the queue looked bounded and was not.
    doc = yaml.safe_load(BASE)
    doc["queues"][0]["capability"] = {"cpu": 4, "gpu": 2}
    scenario = parse_scenario(doc, source="s.yaml")
    assert ("s.yaml: queues[0] (q1).capability.gpu: not a resource name Volcano counts "
            "(no pod can ask for it; an extended resource is qualified, such as "
            "example.com/gpu): it bounds nothing") in scenario.warnings


def test_unknown_priority_class_gives_zero_with_a_warning() -> None:
    doc = yaml.safe_load(BASE.replace("minMember: 1}", "minMember: 1, priorityClassName: gold}"))
    scenario = parse_scenario(doc)
    assert scenario.jobs[0].priority == 0
    assert any("no priority class 'gold'" in w for w in scenario.warnings)


def test_task_status_table() -> None:
    doc = yaml.safe_load(BASE)
    doc["tasks"] = [
        {"name": "a", "namespace": "c1", "job": "pg1", "phase": "Running", "node": "n1"},
        {"name": "b", "namespace": "c1", "job": "pg1", "phase": "Pending", "node": "n1"},
        {"name": "c", "namespace": "c1", "job": "pg1", "phase": "Running", "node": "n1",
         "deleting": True},
        {"name": "d", "namespace": "c1", "job": "pg1"},
        {"name": "e", "namespace": "c1", "job": "pg1", "phase": "Succeeded"},
    ]
    statuses = [t.status for t in parse_scenario(doc).tasks]
    assert statuses == [TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.RELEASING,
                        TaskStatus.PENDING, TaskStatus.SUCCEEDED]


def test_task_priority_defaults() -> None:
    doc = yaml.safe_load(BASE)
    doc["priorityClasses"] = [{"name": "hi", "value": 100}, {"name": "std", "value": 7,
                                                             "globalDefault": True}]
    doc["tasks"] = [
        {"name": "a", "namespace": "c1", "job": "pg1", "priority": 5},
        {"name": "b", "namespace": "c1", "job": "pg1", "priorityClassName": "hi"},
        {"name": "c", "namespace": "c1", "job": "pg1"},
    ]
    assert [t.priority for t in parse_scenario(doc).tasks] == [5, 100, 7]
    del doc["priorityClasses"][1]
    assert parse_scenario(doc).tasks[2].priority == 1


def test_relative_times_and_pdb_budget() -> None:
    doc = yaml.safe_load(BASE)
    doc["now"] = "2024-01-01T00:10:00Z"
    doc["jobs"][0]["createdAt"] = "-90s"
    doc["tasks"][0].update({"labels": {"app": "web"}, "phase": "Running", "node": "n1"})
    doc["pdbs"] = [{"name": "b", "namespace": "c1", "selector": {"app": "web"},
                    "minAvailable": "50%"}]
    scenario = parse_scenario(doc)
    assert scenario.now is not None
    assert scenario.jobs[0].creation_time == scenario.now - 90
    assert scenario.pdbs[0].disruptions_allowed == 0  # healthy 1 - ceil(50% of 1)


def test_finished_tasks_hold_nothing_on_their_node() -> None:
    doc = yaml.safe_load(BASE)
    doc["tasks"] = [
        {"name": "done", "namespace": "c1", "job": "pg1", "phase": "Succeeded", "node": "n1",
         "requests": {"cpu": 2}},
        {"name": "run", "namespace": "c1", "job": "pg1", "phase": "Running", "node": "n1",
         "requests": {"cpu": 1}},
    ]
    scenario = parse_scenario(doc)
    for cluster in (scenario.to_cluster(), scenario.build_cache().snapshot()):
        node = cluster.nodes["n1"]
        assert sorted(node.tasks) == ["c1/run"]
        assert node.used.milli_cpu == 1000


def test_a_document_handed_to_parse_scenario_is_left_unchanged(tmp_path: Path) -> None:
    """load_scenario drops a file's entries as it converts them (its own document);
    a document a caller hands over is theirs and stays whole."""
    import copy
    import json as json_module

    from batchsched.scenario import load_scenario, parse_scenario

    document = {
        "version": 1, "config": {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 2, "pods": 10}}],
        "jobs": [{"name": "j", "minMember": 1}],
        "tasks": [{"name": "t", "job": "j", "requests": {"cpu": 1}}],
    }
    kept = copy.deepcopy(document)
    parsed = parse_scenario(document)
    assert document == kept
    path = tmp_path / "s.json"
    path.write_text(json_module.dumps(document))
    loaded = load_scenario(path)
    assert [t.uid for t in loaded.tasks] == [t.uid for t in parsed.tasks]
    assert [n.name for n in loaded.nodes] == [n.name for n in parsed.nodes]


def test_a_job_left_out_for_its_missing_queue_still_holds_its_nodes(tmp_path: Path) -> None:
    """Volcano leaves such a job out of the session, but its cache still counts the job's
    pods on their nodes: nothing may be placed on the room they use."""
    from batchsched.scenario import parse_scenario, run_scenario

    doc = {"version": 1, "config": {"actions": "enqueue, allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "predicates"}, {"name": "proportion"}]}]},
        "queues": [{"name": "q1"}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "pods": 10}}],
        "jobs": [{"name": "ghost", "queue": "nosuch", "minMember": 1, "phase": "Running"},
                 {"name": "new", "queue": "q1", "minMember": 1}],
        "tasks": [{"name": "g0", "job": "ghost", "node": "n1", "phase": "Running",
                   "requests": {"cpu": 4}},
                  {"name": "n0", "job": "new", "requests": {"cpu": 4}}]}
    scenario = parse_scenario(doc)
    assert any("queue 'nosuch' does not exist" in w for w in scenario.warnings)
    decisions = run_scenario(scenario)
    assert decisions.binds == {}
    assert "default/ghost" not in decisions.pod_group_phases
    assert run_scenario(parse_scenario(doc)).binds == run_scenario(
        parse_scenario(doc)).binds  # and again, from a fresh copy
    cache = parse_scenario(doc).build_cache()
    assert list(cache.snapshot().nodes["n1"].tasks) == ["default/g0"]


def test_a_pdb_selects_pods_with_its_match_expressions_too(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE.replace("tasks:\n", """pdbs:
  - {name: b, namespace: c1, selector: {app: web},
     matchExpressions: [{key: tier, operator: In, values: [front, edge]}], minAvailable: 0}
tasks:
""").replace("requests: {cpu: 1, memory: 1Gi}}",
             "requests: {cpu: 1, memory: 1Gi}, labels: {app: web, tier: edge}}")))
    pdb = scenario.pdbs[0]
    assert pdb.matches("c1", {"app": "web", "tier": "edge"})
    assert not pdb.matches("c1", {"app": "web", "tier": "back"})
    assert not pdb.matches("c1", {"tier": "edge"})


CONFIG_AS_VOLCANO_READS = """\
version: 1
config:
  actions: enqueue
  tiers:
  - plugins:
    - name: overcommit
      arguments:
        overcommit-factor: 1.5e0
        quoted: "1.5e0"
    - {name: gang, enableJobOrder: n}
queues: [{name: q1}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 110}}
jobs:
- {name: big, namespace: ns, queue: q1, minMember: 1, minResources: {cpu: 5}, phase: Pending}
tasks:
- {name: big-0, namespace: ns, job: big, requests: {cpu: 5}}
"""


def test_a_scenario_s_config_block_is_read_as_volcano_reads_its_file(tmp_path: Path) -> None:
    # yaml.v2 reads 1.5e0 as a number (PyYAML as text) and n as false in a flag; a
    # quoted value stays text. The same configuration as a file reads alike.
    path = tmp_path / "s.yaml"
    path.write_text(CONFIG_AS_VOLCANO_READS)
    scenario = load_scenario(path)
    overcommit = scenario.configuration.plugin_option("overcommit")
    gang = scenario.configuration.plugin_option("gang")
    assert overcommit is not None and gang is not None
    assert overcommit.arguments["overcommit-factor"] == 1.5
    assert overcommit.arguments["quoted"] == "1.5e0"
    assert gang.flags.get("enableJobOrder") is False
    decisions = run_scenario(scenario)
    assert decisions.pod_group_phases == {"ns/big": "Inqueue"}  # 4 cpus x 1.5 hold 5


def test_a_config_block_s_merge_keys_and_tags_are_yaml_v2_s(tmp_path: Path) -> None:
    """The config block is read by yaml.v2's rules alone: a merge after a flag turns it
    off (PyYAML let the explicit key win), and a tagged ``!!bool y`` is true (PyYAML
    raised a KeyError from its constructor)."""
    path = tmp_path / "s.yaml"
    path.write_text("""version: 1
name: merge in config
config:
  actions: "allocate"
  tiers:
  - plugins:
    - name: predicates
      enablePredicate: true
      <<: {enablePredicate: false}
    - name: gang
      enableJobOrder: !!bool y
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, labels: {disk: hdd}}
jobs:
- {name: j, minMember: 1, phase: Inqueue}
tasks:
- {name: p, job: j, requests: {cpu: 1}, nodeSelector: {disk: ssd}}
""")
    scenario = load_scenario(path)
    assert [o.flags for o in scenario.configuration.tiers[0].plugins] == [
        {"enablePredicate": False}, {"enableJobOrder": True}]
    assert run_scenario(scenario).binds == {"default/p": "n1"}  # no predicate asked


@pytest.mark.parametrize("head", [
    # An anchor of the file merged into a plugin of the config block: read by yaml.v2's
    # rules there, and by PyYAML's where the file declares it.
    "x-base: &base {enablePredicate: true}\nx-pred: &pred {<<: *base, name: predicates, "
    "enablePredicate: false}\nconfig: {actions: allocate, tiers: [{plugins: [*pred, "
    "{name: gang}]}]}\n",
    # The config block brought by the file's own merge key.
    "<<: {config: {actions: allocate, tiers: [{plugins: [{name: predicates, "
    "enablePredicate: n}, {name: gang}]}]}}\n",
])
def test_a_config_block_through_anchors_and_merges_reads_as_volcano_reads_it(
        tmp_path: Path, head: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("version: 1\nname: anchors\n" + head + (
        "nodes:\n- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}, "
        "labels: {disk: hdd}}\njobs:\n- {name: j, minMember: 1, phase: Inqueue}\n"
        "tasks:\n- {name: p, job: j, requests: {cpu: 1}, nodeSelector: {disk: ssd}}\n"))
    assert run_scenario(load_scenario(path)).binds == {"default/p": "n1"}


def test_a_key_given_twice_in_the_config_block_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("version: 1\nname: twice\nconfig:\n  actions: allocate\n"
                    "  actions: \"enqueue, allocate\"\n")
    with pytest.raises(ScenarioError, match="line 5: found duplicate key 'actions'"):
        load_scenario(path)


def test_the_system_priority_classes_exist_without_being_given() -> None:
    # The API server creates them in every cluster: a pod naming one has its value.
    document = {
        "version": 1, "name": "critical",
        "config": {"actions": "allocate", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "predicates"}]}]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 1, "memory": "4Gi", "pods": 10}}],
        "jobs": [{"name": "j", "namespace": "c1", "minMember": 1, "phase": "Inqueue"}],
        "tasks": [{"name": "crit", "namespace": "c1", "job": "j", "requests": {"cpu": 1},
                   "priorityClassName": "system-node-critical"},
                  {"name": "app", "namespace": "c1", "job": "j", "requests": {"cpu": 1},
                   "priority": 100}],
    }
    scenario = parse_scenario(document, source="<test>")
    assert not scenario.warnings
    assert run_scenario(scenario).binds == {"c1/crit": "n1"}
    classes = {c.name: c.value for c in scenario.priority_classes}
    assert classes["system-cluster-critical"] == 2_000_000_000


def test_a_name_that_is_no_string_says_so_and_a_whole_float_count_is_a_count() -> None:
    base = {"version": 1, "name": "names", "config": {"actions": "allocate"},
            "nodes": [{"name": 5, "allocatable": {"cpu": 1}}]}
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.name: must be a string, not a "
                                            "number"):
        parse_scenario(base, source="<test>")
    counted = {**base, "nodes": [], "expect": {"bindCount": 0.0, "evictCount": 0}}
    scenario = parse_scenario(counted, source="<test>")
    assert scenario.expect["bindCount"] == 0 and type(scenario.expect["bindCount"]) is int
    nested = parse_scenario({**base, "nodes": [], "jobs": [{"name": "j", "minMember": 1}],
                             "expect": {"taskStatusCounts": {"default/j": {"Pending": 0.0}},
                                        "x-nodeBindCounts": {"n1": 2.0}}}, source="<test>")
    assert type(nested.expect["taskStatusCounts"]["default/j"]["Pending"]) is int
    assert type(nested.expect["x-nodeBindCounts"]["n1"]) is int
    with pytest.raises(ScenarioError, match="bindCount"):
        parse_scenario({**counted, "expect": {"bindCount": 0.5}}, source="<test>")
