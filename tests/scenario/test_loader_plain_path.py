"""The loader's plain (fast) paths build exactly what the fully checked paths build.

Every document below is parsed twice, once as usual and once with the plain paths
turned off; the scenarios (every field of every object, types included), the
warnings and the error messages must be the same.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable
from typing import Any

import attrs
import pytest
import yaml

from batchsched.api.resource import Resource
from batchsched.errors import ScenarioError
from batchsched.scenario import Scenario, parse_scenario
from batchsched.scenario.loader import _Parser

BASE = """
version: 1
now: 1000
config: {actions: ""}
priorityClasses: [{name: low, value: 10}, {name: never, value: 50, preemptionPolicy: Never}]
queues: [{name: q1}]
nodes:
  - {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}, labels: {zone: a}}
  - {name: n2, allocatable: {cpu: "2", memory: 4Gi}, capacity: {cpu: 4, memory: 8Gi}}
jobs:
  - {name: pg1, namespace: c1, queue: q1, minMember: 1}
  - {name: pg2, namespace: c1, queue: q1, phase: Inqueue, priorityClassName: never}
  - {name: pg3, queue: q1, minResources: {cpu: 1, memory: 1Gi}}
tasks:
  - {name: p1, namespace: c1, job: pg1, requests: {cpu: 1, memory: 1Gi}}
  - {name: p2, namespace: c1, job: pg2, role: worker, priorityClassName: low,
     requests: {cpu: 500m, memory: 1Gi}}
  - {name: p3, namespace: c1, job: pg2, priorityClassName: never}
  - {name: p4, job: pg3, requests: {cpu: 1, memory: 1Gi}}
  - {name: p5, namespace: c1, job: pg1, requests: {cpu: 1.5, nvidia.com/gpu: 1}}
"""

Edit = Callable[[dict[str, Any]], None]


def _set(section: str, index: int, key: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc[section][index][key] = value
    return edit


def _drop(section: str, index: int, key: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        del doc[section][index][key]
    return edit


def _append(section: str, item: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc[section].append(item)
    return edit


def _global_default(doc: dict[str, Any]) -> None:
    doc["priorityClasses"].append({"name": "std", "value": 7, "globalDefault": True})


EDITS: dict[str, Edit] = {
    "as is": lambda doc: None,
    "global default class": _global_default,
    # tasks
    "task requests None": _set("tasks", 0, "requests", None),
    "task requests empty": _set("tasks", 0, "requests", {}),
    "task requests bool": _set("tasks", 3, "requests", {"cpu": True}),
    "task requests False": _set("tasks", 3, "requests", {"cpu": False}),
    "task requests float": _set("tasks", 3, "requests", {"cpu": 1.0, "memory": "1Gi"}),
    "task requests bad": _set("tasks", 1, "requests", {"cpu": "1Qi"}),
    "task requests negative": _set("tasks", 1, "requests", {"memory": -1}),
    "task requests list": _set("tasks", 1, "requests", ["cpu"]),
    "task requests unhashable": _set("tasks", 1, "requests", {"cpu": [1]}),
    "task requests int name": _set("tasks", 1, "requests", {1: "1", "cpu": 1}),
    "task requests bool name": _set("tasks", 4, "requests", {True: "1", "cpu": 1}),
    "task requests uncounted": _set("tasks", 1, "requests", {"cpu": 1, "gpu": 1}),
    "task name missing": _drop("tasks", 2, "name"),
    "task name empty": _set("tasks", 2, "name", ""),
    "task name number": _set("tasks", 2, "name", 7),
    "task namespace None": _set("tasks", 3, "namespace", None),
    "task namespace empty": _set("tasks", 3, "namespace", ""),
    "task namespace bool": _set("tasks", 3, "namespace", True),
    "task job missing": _drop("tasks", 0, "job"),
    "task job unknown": _set("tasks", 0, "job", "pg9"),
    "task job number": _set("tasks", 0, "job", 3),
    "task role None": _set("tasks", 1, "role", None),
    "task role number": _set("tasks", 1, "role", 3),
    "task class unknown": _set("tasks", 1, "priorityClassName", "gold"),
    "task class empty": _set("tasks", 1, "priorityClassName", ""),
    "task class None": _set("tasks", 1, "priorityClassName", None),
    "task class number": _set("tasks", 1, "priorityClassName", 1),
    "task duplicate": _append("tasks", {"name": "p1", "namespace": "c1", "job": "pg1"}),
    "task duplicate later": _append("tasks", {"name": "p4", "job": "pg3", "role": 1}),
    "task unknown key": _set("tasks", 0, "replicas", 2),
    "task x- key": _set("tasks", 0, "x-note", "kept out"),
    "task labels": _set("tasks", 0, "labels", {"volcano.sh/preemptable": "false"}),
    "task annotations": _set("tasks", 0, "annotations", {"volcano.sh/revocable-zone": "*"}),
    "task running": _set("tasks", 0, "node", "n1"),
    "task not a mapping": _append("tasks", ["p9"]),
    # jobs
    "job namespace None": _set("jobs", 2, "namespace", None),
    "job queue None": _set("jobs", 0, "queue", None),
    "job queue missing": _drop("jobs", 0, "queue"),
    "job queue unknown": _set("jobs", 0, "queue", "qX"),
    "job queue number": _set("jobs", 0, "queue", 1),
    "job minMember bool": _set("jobs", 0, "minMember", True),
    "job minMember negative": _set("jobs", 0, "minMember", -1),
    "job minMember float": _set("jobs", 0, "minMember", 1.0),
    "job minMember None": _set("jobs", 0, "minMember", None),
    "job phase bad": _set("jobs", 1, "phase", "Sleeping"),
    "job phase None": _set("jobs", 1, "phase", None),
    "job phase number": _set("jobs", 1, "phase", 1),
    "job phase list": _set("jobs", 1, "phase", ["Pending"]),
    "job class unknown": _set("jobs", 1, "priorityClassName", "gold"),
    "job class empty": _set("jobs", 1, "priorityClassName", ""),
    "job name empty": _set("jobs", 0, "name", ""),
    "job duplicate": _append("jobs", {"name": "pg3", "queue": "q1"}),
    "job unknown key": _set("jobs", 0, "minMembr", 1),
    "job minTaskMember": _set("jobs", 0, "minTaskMember", {"worker": 1}),
    "job annotations": _set("jobs", 0, "annotations", {"sla-waiting-time": "bad"}),
    "job minResources": _set("jobs", 0, "minResources", {"cpu": 4, "memory": "16Gi"}),
    "job minResources shared": lambda doc: [job.__setitem__("minResources", {"cpu": 2})
                                            for job in doc["jobs"]],
    "job minResources None": _set("jobs", 0, "minResources", None),
    "job minResources empty": _set("jobs", 0, "minResources", {}),
    "job minResources bad": _set("jobs", 0, "minResources", {"cpu": "1Qi"}),
    "job minResources bool": _set("jobs", 0, "minResources", {"cpu": True}),
    "job minResources negative": _set("jobs", 1, "minResources", {"memory": -1}),
    "job minResources list": _set("jobs", 1, "minResources", ["cpu"]),
    "job minResources unhashable": _set("jobs", 1, "minResources", {"cpu": [1]}),
    # nodes
    "node labels number": _set("nodes", 0, "labels", {"zone": 1}),
    "node labels bool": _set("nodes", 0, "labels", {"gpu": True}),
    "node labels list": _set("nodes", 0, "labels", {"zone": ["a"]}),
    "node labels int key": _set("nodes", 0, "labels", {1: "a"}),
    "node labels None": _set("nodes", 0, "labels", None),
    "node allocatable None": _set("nodes", 0, "allocatable", None),
    "node allocatable bad": _set("nodes", 0, "allocatable", {"cpu": "two"}),
    "node capacity None": _set("nodes", 1, "capacity", None),
    "node capacity bad": _set("nodes", 1, "capacity", {"memory": "1Qi"}),
    "node capacity list": _set("nodes", 1, "capacity", [1]),
    "node allocatable uncounted": _set("nodes", 0, "allocatable", {"cpu": 2, "gpu": 4}),
    "node capacity uncounted": _set("nodes", 1, "capacity", {"cpu": 4, "requests.cpu": 4}),
    "node name empty": _set("nodes", 1, "name", ""),
    "node duplicate": _append("nodes", {"name": "n1", "allocatable": {"cpu": 1}}),
    "node taints": _set("nodes", 0, "taints", [{"key": "k"}]),
    "node not ready": _set("nodes", 0, "ready", False),
}


def _plain(value: Any) -> Any:
    """A structure equal to another one only if every field, value and type is."""
    if isinstance(value, Resource):
        return ("Resource", repr(value.milli_cpu), repr(value.memory),
                _plain(list(value.scalars.items())))
    if attrs.has(type(value)):
        return (type(value).__name__,
                [(f.name, _plain(getattr(value, f.name))) for f in attrs.fields(type(value))])
    if isinstance(value, dict):
        return ("dict", [(_plain(k), _plain(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, frozenset) else value
        return (type(value).__name__, [_plain(v) for v in items])
    if isinstance(value, enum.Enum):
        return repr(value)
    return (type(value).__name__, repr(value))


def _outcome(doc: dict[str, Any]) -> Any:
    try:
        scenario = parse_scenario(copy.deepcopy(doc), source="s.yaml")
    except Exception as exc:  # whatever the checked path raises, the plain one must too
        return ("error", type(exc).__name__, str(exc))
    return ("scenario", _summary(scenario))


def _summary(scenario: Scenario) -> Any:
    return [_plain(scenario.warnings), _plain(scenario.nodes), _plain(scenario.jobs),
            _plain(scenario.tasks), _plain(scenario.queues), _plain(scenario.priority_classes)]


@pytest.mark.parametrize("name", list(EDITS))
def test_plain_paths_change_nothing(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = yaml.safe_load(BASE)
    EDITS[name](doc)
    fast = _outcome(doc)
    for method in ("plain_node", "plain_job", "plain_task"):
        monkeypatch.setattr(_Parser, method, lambda self, *args, **kwargs: None)
    assert _outcome(doc) == fast


def test_the_base_document_takes_the_plain_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # Otherwise the comparison above would prove little.
    doc = yaml.safe_load(BASE)
    def checked(self: _Parser, *args: Any, **kwargs: Any) -> None:
        pytest.fail("an entry of the base document took the checked path")

    for method in ("node", "job", "task"):
        monkeypatch.setattr(_Parser, method, checked)
    parse_scenario(doc)


def test_a_boolean_is_no_quantity_even_after_the_same_number() -> None:
    doc = yaml.safe_load(BASE)
    doc["tasks"][3]["requests"] = {"cpu": 1}
    doc["tasks"].append({"name": "p6", "namespace": "c1", "job": "pg1",
                         "requests": {"cpu": True}})
    with pytest.raises(ScenarioError, match=r"tasks\[5\] \(c1/p6\)\.requests\.cpu: True is not"):
        parse_scenario(doc, source="s.yaml")


def test_plain_jobs_share_one_minimum_per_shape() -> None:
    # A pod group's minResources is read-only once built (replaced whole, never changed
    # in place), so pod groups that ask the same share one object: 100,000 pod
    # groups of one shape hold one Resource, not 100,000.
    doc = yaml.safe_load(BASE)
    for job in doc["jobs"]:
        job["minResources"] = {"cpu": 2}
    scenario = parse_scenario(doc)
    minimums = [job.podgroup.min_resources for job in scenario.jobs]
    assert len({id(m) for m in minimums}) == 1
    assert [m.milli_cpu for m in minimums if m is not None] == [2000.0] * 3


def test_plain_entries_share_their_repeated_names() -> None:
    # A large scenario names a handful of namespaces, queues and classes many times:
    # one string object each, whatever the document's parser made of them.
    doc = yaml.safe_load(BASE)
    for job in doc["jobs"]:
        job["namespace"] = "".join(["c", "1"])  # equal strings, distinct objects
    for task in doc["tasks"]:
        task["namespace"] = "".join(["c", "1"])
    scenario = parse_scenario(doc)
    namespaces = {id(job.namespace) for job in scenario.jobs} | {
        id(task.namespace) for task in scenario.tasks}
    assert len(namespaces) == 1
    # A task names its job by the job's own id string.
    jobs = {job.uid: job for job in scenario.jobs}
    assert all(task.job is jobs[task.job].uid for task in scenario.tasks)


def test_plain_tasks_of_one_shape_share_one_request_vector() -> None:
    # A task's requests are read-only once built (a session hiding resources replaces
    # them): 100,000 pending pods of one shape hold one vector, with the pod counted.
    doc = yaml.safe_load(BASE)
    doc["tasks"] = [{"name": f"t{i}", "namespace": "c1", "job": "pg1",
                     "requests": {"cpu": 1, "memory": "1Gi"}} for i in range(3)]
    doc["tasks"].append({"name": "own", "namespace": "c1", "job": "pg1",
                         "labels": {"app": "x"}, "requests": {"cpu": 1, "memory": "1Gi"}})
    scenario = parse_scenario(doc)
    *plain, labelled = scenario.tasks
    assert len({id(task.resreq) for task in plain}) == 1
    assert all(task.init_resreq is task.resreq for task in plain)
    assert labelled.resreq is not plain[0].resreq and labelled.resreq == plain[0].resreq
    assert plain[0].resreq.get("pods") == 1.0
    # Sessions on the scenario's cluster change no vector the tasks share.
    from batchsched.scenario import run_scenario

    doc["config"] = {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]}
    scenario = parse_scenario(doc)
    for _ in range(2):
        run_scenario(scenario)
    assert scenario.tasks[0].resreq.milli_cpu == 1000.0
    assert scenario.tasks[0].resreq.get("pods") == 1.0
