"""nodegroup: UNIT-CASES-nodes.md (TestNodeGroup, TestNodeGroupResourceLimits,
TestNodeGroupResourceLimitAllocationEvent) and the score rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from node_support import (
    document,
    open_session,
    plugin,
    predicates,
    reasons,
    scores,
    task,
)

from batchsched import Statement
from batchsched.api.queue import NodeGroupAffinity
from batchsched.api.types import FitStatusCode
from batchsched.plugins.nodegroup import (
    REASON_AFFINITY_NOT_SPECIFIED,
    REASON_LABEL_NOT_FOUND,
    REASON_LIMIT_EXCEEDED,
    REASON_LIMIT_INVALID,
    REASON_UNSATISFIED,
    _read_limits,
    group_allowed,
    group_score,
)

UU = int(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
LABEL = "volcano.sh/nodegroup-name"

NODES = """
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 4Gi}, labels: {volcano.sh/nodegroup-name: group1}}
- {name: n2, allocatable: {cpu: 4, memory: 16Gi}, labels: {volcano.sh/nodegroup-name: group2}}
- {name: n3, allocatable: {cpu: 4, memory: 16Gi}, labels: {volcano.sh/nodegroup-name: group3}}
- {name: n4, allocatable: {cpu: 4, memory: 16Gi}, labels: {volcano.sh/nodegroup-name: group4}}
- {name: n5, allocatable: {cpu: 4, memory: 16Gi}}
"""

Q1_AFFINITY: dict[str, Any] = {
    "nodeGroupAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": ["group1", "group3"],
        "preferredDuringSchedulingIgnoredDuringExecution": ["group3"],
    },
    "nodeGroupAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": ["group2", "group4"],
        "preferredDuringSchedulingIgnoredDuringExecution": ["group4"],
    },
}


def _node_group_case(queues: list[dict[str, Any]], job_queue: str, arguments: dict[str, Any],
                     hierarchy: bool) -> Any:
    body = NODES + f"""
jobs:
- {{name: pg, namespace: c1, queue: {job_queue}}}
tasks:
- {{name: p, namespace: c1, job: pg, requests: {{cpu: 2, memory: 4Gi}}}}
"""
    doc = document(body, plugin("nodegroup", arguments, enablePredicate=True,
                                enableNodeOrder=True, enableHierarchy=hierarchy))
    doc["queues"] = queues
    return open_session(doc)


PASS = None
UNSATISFIED = [(UU, REASON_UNSATISFIED)]
NO_LABEL = [(UU, REASON_LABEL_NOT_FOUND)]
NOT_SPECIFIED = [(UU, REASON_AFFINITY_NOT_SPECIFIED)]

CASE_0_RESULT = {"n1": PASS, "n2": UNSATISFIED, "n3": PASS, "n4": PASS, "n5": NO_LABEL}

NODE_GROUP_CASES = {
    "0 soft constraints is subset of hard constraints": (
        [{"name": "q1", "parent": "root", "affinity": Q1_AFFINITY}], "q1", {}, False,
        CASE_0_RESULT, {"n1": 100, "n3": 150, "n4": -1},
    ),
    "1 soft constraints is not subset of hard constraints": (
        [{"name": "q2", "parent": "root", "affinity": {
            "nodeGroupAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": ["group1"],
                "preferredDuringSchedulingIgnoredDuringExecution": ["group3"]},
            "nodeGroupAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": ["group2"],
                "preferredDuringSchedulingIgnoredDuringExecution": ["group4"]}}}],
        "q2", {}, False,
        {"n1": PASS, "n2": UNSATISFIED, "n3": PASS, "n4": PASS, "n5": NO_LABEL},
        {"n1": 100, "n3": 50, "n4": -1},
    ),
    "2 no affinity and strict false: labelled nodes refused, unlabelled accepted": (
        [{"name": "root-no-affinity"}], "root-no-affinity", {"strict": False}, False,
        {"n1": NOT_SPECIFIED, "n2": NOT_SPECIFIED, "n3": NOT_SPECIFIED, "n4": NOT_SPECIFIED,
         "n5": PASS},
        {"n5": 0},
    ),
    "3 affinity inherits from parent queue": (
        [{"name": "root", "affinity": Q1_AFFINITY},
         {"name": "q1", "parent": "root", "affinity": Q1_AFFINITY},
         {"name": "q1-child", "parent": "q1"}], "q1-child", {}, True,
        CASE_0_RESULT, {"n1": 100, "n3": 150, "n4": -1},
    ),
    "4 affinity inherits from ancestor queue if parent queue has no affinity": (
        [{"name": "root", "affinity": Q1_AFFINITY},
         {"name": "q-no-affinity", "parent": "root"},
         {"name": "q-no-affinity-child", "parent": "q-no-affinity"}],
        "q-no-affinity-child", {}, True,
        CASE_0_RESULT, {"n1": 100, "n3": 150, "n4": -1},
    ),
    "6 preferred nodegroup priority ordering": (
        [{"name": "q3", "affinity": {"nodeGroupAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": ["group1", "group3"]}}}],
        "q3", {"enablePreferredOrder": True}, False,
        {"n1": PASS, "n2": UNSATISFIED, "n3": PASS, "n4": UNSATISFIED, "n5": NO_LABEL},
        {"n1": 50, "n3": 25},
    ),
}


@pytest.mark.parametrize("case", list(NODE_GROUP_CASES))
def test_node_group_predicate_and_scores(case: str) -> None:
    queues, job_queue, arguments, hierarchy, expected, expected_scores = NODE_GROUP_CASES[case]
    ssn = _node_group_case(queues, job_queue, arguments, hierarchy)
    got = {name: (reasons(err) or None) for name, err in predicates(ssn, "c1/p").items()}
    assert got == expected
    assert scores(ssn)["c1/p"] == pytest.approx(expected_scores)
    # The Go test also scores the refused nodes: 0 there.
    p = task(ssn, "c1/p")
    for name, verdict in expected.items():
        if verdict is not PASS:
            assert ssn.node_order(p, ssn.nodes[name]) == 0


def test_case_5_job_in_a_missing_queue_never_reaches_the_session() -> None:
    """Go's case 5 checks nothing: its job's queue is absent, so the snapshot drops the job."""
    ssn = _node_group_case([{"name": "root", "affinity": Q1_AFFINITY},
                            {"name": "q-no-affinity", "parent": "root"}],
                           "q-no-affinity-child", {}, True)
    assert ssn.jobs == {}


def test_without_hierarchy_a_child_queue_does_not_inherit() -> None:
    ssn = _node_group_case(
        [{"name": "root", "affinity": Q1_AFFINITY},
         {"name": "q1", "parent": "root", "affinity": Q1_AFFINITY},
         {"name": "q1-child", "parent": "q1"}], "q1-child", {}, False)
    got = {name: (reasons(err) or None) for name, err in predicates(ssn, "c1/p").items()}
    assert got == {"n1": NOT_SPECIFIED, "n2": NOT_SPECIFIED, "n3": NOT_SPECIFIED,
                   "n4": NOT_SPECIFIED, "n5": NO_LABEL}


def test_strict_false_with_affinity_still_needs_a_label() -> None:
    ssn = _node_group_case([{"name": "q1", "affinity": Q1_AFFINITY}], "q1",
                           {"strict": False}, False)
    assert reasons(predicates(ssn, "c1/p")["n5"]) == NO_LABEL


def test_empty_affinity_lists_count_as_unset() -> None:
    ssn = _node_group_case([{"name": "q", "affinity": {}}], "q", {"strict": False}, False)
    got = predicates(ssn, "c1/p")
    assert reasons(got["n1"]) == NOT_SPECIFIED
    assert got["n5"] is None


# -- resource limits ----------------------------------------------------------------------------

LIMIT_NODES = """
nodes:
- {name: n1, allocatable: {cpu: 16, memory: 64Gi, pods: 32},
   labels: {volcano.sh/nodegroup-name: group1}}
- {name: n2, allocatable: {cpu: 16, memory: 64Gi, pods: 32},
   labels: {volcano.sh/nodegroup-name: group2}}
"""
LIMIT_AFFINITY = {"nodeGroupAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": ["group1", "group2"],
    "preferredDuringSchedulingIgnoredDuringExecution": ["group1"]}}


def _limit_session(annotation: str | None, *, used: bool = False) -> Any:
    queue: dict[str, Any] = {"name": "q", "affinity": LIMIT_AFFINITY}
    if annotation is not None:
        queue["annotations"] = {"volcano.sh/nodegroup-resource-limits": annotation}
    body = LIMIT_NODES + """
jobs:
- {name: pg-pending, namespace: limit, queue: q}
- {name: pg-used, namespace: limit, queue: q, phase: Running}
tasks:
- {name: pending, namespace: limit, job: pg-pending, requests: {cpu: 2, memory: 4Gi}}
"""
    if used:
        body += ("- {name: used, namespace: limit, job: pg-used, node: n1, phase: Running,"
                 " requests: {cpu: 2, memory: 4Gi}}\n")
    doc = document(body, plugin("nodegroup", enablePredicate=True, enableNodeOrder=True))
    doc["queues"] = [queue]
    return open_session(doc)


LIMIT_CASES = {
    "0 no annotation keeps existing behavior": (None, False, PASS, PASS),
    "1 under nodegroup limit permits preferred nodegroup": (
        json.dumps({"group1": {"cpu": "3", "memory": "8Gi"}}), False, PASS, PASS),
    "2 omitted resource dimension is unlimited": (
        json.dumps({"group1": {"cpu": "3"}}), False, PASS, PASS),
    "3 specified resource dimension is enforced": (
        json.dumps({"group1": {"cpu": "1"}}), False, [(UU, REASON_LIMIT_EXCEEDED)], PASS),
    "4 over nodegroup limit rejects preferred nodegroup and permits fallback": (
        json.dumps({"group1": {"cpu": "3", "memory": "8Gi"}}), True,
        [(UU, REASON_LIMIT_EXCEEDED)], PASS),
    "5 invalid annotation rejects queue tasks": (
        '{"group1":{"cpu":', False, [(UU, REASON_LIMIT_INVALID)], [(UU, REASON_LIMIT_INVALID)]),
    # What Go's JSON decoding of map[string]ResourceList accepts:
    "6 a null group limits nothing": (
        json.dumps({"group1": None, "group2": {"cpu": "4"}}), False, PASS, PASS),
    "7 a null quantity is a limit of 0": (
        json.dumps({"group1": {"cpu": None}}), False, [(UU, REASON_LIMIT_EXCEEDED)], PASS),
    "8 a blank-padded quantity is read": (
        json.dumps({"group1": {"cpu": " 1"}}), False, [(UU, REASON_LIMIT_EXCEEDED)], PASS),
    "9 a negative quantity is a limit below 0": (
        json.dumps({"group1": {"cpu": "-1"}}), False, [(UU, REASON_LIMIT_EXCEEDED)], PASS),
    "10 a null annotation limits no group": ("null", False, PASS, PASS),
    # Quantity.UnmarshalJSON parses the text as written between the quotes.
    "11 a quantity written with an escape is invalid": (
        '{"group1": {"cpu": "\\u0033"}}', False,
        [(UU, REASON_LIMIT_INVALID)], [(UU, REASON_LIMIT_INVALID)]),
    "12 a boolean quantity is invalid": (
        '{"group1": {"cpu": true}}', False,
        [(UU, REASON_LIMIT_INVALID)], [(UU, REASON_LIMIT_INVALID)]),
    # NewResource drops a name Volcano does not count: its limit is 0 against 0 used.
    "13 a negative limit on an uncounted resource limits nothing": (
        json.dumps({"group1": {"foo": "-1", "count/pods": "-1"}}), False, PASS, PASS),
    # Go decodes every value of a key given twice and keeps the last.
    "14 a malformed first value of a key given twice is invalid": (
        '{"group1": {"cpu": "abc", "cpu": "3"}}', False,
        [(UU, REASON_LIMIT_INVALID)], [(UU, REASON_LIMIT_INVALID)]),
    "15 of a key given twice the last value is the limit": (
        '{"group1": {"cpu": "3", "cpu": "1"}}', False, [(UU, REASON_LIMIT_EXCEEDED)], PASS),
    "16 a group given twice is limited by its last list": (
        '{"group1": {"cpu": "1"}, "group1": {"cpu": "3"}}', False, PASS, PASS),
}


def test_an_unquoted_limit_is_read_from_its_text() -> None:
    """Quantity.UnmarshalJSON reads a JSON number's text: a hair above 1 (more digits
    than a float holds) rounds up to 1001m, where the float read 1000m."""
    limits = _read_limits('{"g": {"cpu": 1.0000000000000001, "memory": 1e3}}')
    assert limits["g"][0].milli_cpu == 1001
    assert limits["g"][0].memory == 1000


@pytest.mark.parametrize("case", list(LIMIT_CASES))
def test_node_group_resource_limits(case: str) -> None:
    annotation, used, n1, n2 = LIMIT_CASES[case]
    got = predicates(_limit_session(annotation, used=used), "limit/pending")
    assert (reasons(got["n1"]) or None, reasons(got["n2"]) or None) == (n1, n2)


def test_limit_is_exceeded_only_by_at_least_the_epsilon() -> None:
    # 2 CPU against a limit of 1999.95 millicores: over by 0.05, less than Volcano's
    # epsilon of 0.1 (in internal units), so still allowed.
    annotation = json.dumps({"group1": {"cpu": "1999950u"}})
    assert predicates(_limit_session(annotation), "limit/pending")["n1"] is None


def test_allocation_event_charges_and_discard_releases_the_group() -> None:
    """TestNodeGroupResourceLimitAllocationEvent, plus the undo of the placement."""
    body = """
nodes:
- {name: n1, allocatable: {cpu: 16, memory: 64Gi, pods: 32},
   labels: {volcano.sh/nodegroup-name: group1}}
jobs:
- {name: pg-1, namespace: limit, queue: q-event-limit}
- {name: pg-2, namespace: limit, queue: q-event-limit}
tasks:
- {name: pending-1, namespace: limit, job: pg-1, requests: {cpu: 2, memory: 4Gi}}
- {name: pending-2, namespace: limit, job: pg-2, requests: {cpu: 2, memory: 4Gi}}
"""
    doc = document(body, plugin("nodegroup", enablePredicate=True, enableNodeOrder=True))
    doc["queues"] = [{
        "name": "q-event-limit",
        "affinity": {"nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": ["group1"]}},
        "annotations": {"volcano.sh/nodegroup-resource-limits":
                        json.dumps({"group1": {"cpu": "3", "memory": "8Gi"}})},
    }]
    ssn = open_session(doc)
    first, second = task(ssn, "limit/pending-1"), task(ssn, "limit/pending-2")
    n1 = ssn.nodes["n1"]
    assert ssn.predicate(first, n1) is None
    stmt = Statement(ssn)
    stmt.allocate(first, n1)
    refused = ssn.predicate(second, n1)
    assert reasons(refused) == [(UU, REASON_LIMIT_EXCEEDED)]
    stmt.discard()
    assert ssn.predicate(second, n1) is None


# -- the pure rules ----------------------------------------------------------------------------

def test_group_allowed_order_of_rules() -> None:
    aff = NodeGroupAffinity(required=("a", "c"), preferred=("p",), anti_required=("a", "x"),
                            anti_preferred=("x",))
    assert not group_allowed(aff, "a")       # required, then forbidden by anti-required
    assert group_allowed(aff, "c")
    assert group_allowed(aff, "p")
    assert group_allowed(aff, "x")           # anti-preferred allows again
    assert not group_allowed(aff, "zzz")


def test_group_score_rules() -> None:
    aff = NodeGroupAffinity(required=("a", "b"), preferred=("b", "c", "d"), anti_preferred=("a",))
    assert group_score(aff, "a", preferred_order=False) == -1
    assert group_score(aff, "b", preferred_order=False) == 150
    assert group_score(aff, "c", preferred_order=False) == 50
    assert group_score(aff, "b", preferred_order=True) == pytest.approx(100 + 50)
    assert group_score(aff, "c", preferred_order=True) == pytest.approx(50 * 2 / 3)
    assert group_score(aff, "d", preferred_order=True) == pytest.approx(50 / 3)
    assert group_score(aff, "zzz", preferred_order=True) == 0


def test_unlabelled_node_and_queue_without_affinity_score_zero() -> None:
    ssn = _node_group_case([{"name": "q"}], "q", {"strict": False}, False)
    p = task(ssn, "c1/p")
    assert all(ssn.node_order(p, n) == 0 for n in ssn.node_list)
    assert LABEL in ssn.nodes["n1"].labels


def test_limits_are_checked_only_after_the_affinity() -> None:
    # group3 is not in the queue's affinity: the affinity reason wins over the limit.
    body = LIMIT_NODES.replace("group2", "group3") + """
jobs: [{name: pg-pending, namespace: limit, queue: q}]
tasks: [{name: pending, namespace: limit, job: pg-pending, requests: {cpu: 2}}]
"""
    doc = document(body, plugin("nodegroup", enablePredicate=True, enableNodeOrder=True))
    doc["queues"] = [{"name": "q", "affinity": LIMIT_AFFINITY, "annotations": {
        "volcano.sh/nodegroup-resource-limits": json.dumps({"group3": {"cpu": "1"}})}}]
    got = predicates(open_session(doc), "limit/pending")
    assert reasons(got["n2"]) == [(UU, REASON_UNSATISFIED)]


def test_only_tasks_holding_resources_count_at_session_open() -> None:
    annotation = json.dumps({"group1": {"cpu": "5"}})
    body = LIMIT_NODES + """
jobs:
- {name: pg-pending, namespace: limit, queue: q}
- {name: pg-used, namespace: limit, queue: q, phase: Running}
tasks:
- {name: pending, namespace: limit, job: pg-pending, requests: {cpu: 2}}
- {name: bound, namespace: limit, job: pg-used, node: n1, requests: {cpu: 2}}
- {name: leaving, namespace: limit, job: pg-used, node: n1, phase: Running, deleting: true,
   requests: {cpu: 2}}
"""
    doc = document(body, plugin("nodegroup", enablePredicate=True, enableNodeOrder=True))
    doc["queues"] = [{"name": "q", "affinity": LIMIT_AFFINITY,
                      "annotations": {"volcano.sh/nodegroup-resource-limits": annotation}}]
    # Bound counts (2), Releasing does not: 2 + 2 <= 5.
    assert predicates(open_session(doc), "limit/pending")["n1"] is None
    doc["tasks"][1]["requests"] = {"cpu": 4}
    got = predicates(open_session(doc), "limit/pending")["n1"]
    assert reasons(got) == [(UU, REASON_LIMIT_EXCEEDED)]


def test_an_invalid_limits_annotation_is_logged_naming_the_queue() -> None:
    # Volcano logs it at session open; the only sign was each node's refusal.
    from batchsched.framework.arguments import collect_warnings

    with collect_warnings() as said:
        _limit_session('{"group1": {"cpu": "2 cores"}}')
    assert any("nodegroup: queue q has invalid volcano.sh/nodegroup-resource-limits "
               "annotation: \"2 cores\" is not a quantity" in line for line in said)
