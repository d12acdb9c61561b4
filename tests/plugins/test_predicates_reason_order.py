"""predicates: the order of a node's failure reasons (Volcano
pkg/scheduler/plugins/predicates/predicates_test.go
TestPredicateFailureReasonAggregationOrderStable, commit
ed72c7c815a9fd547a787134676f73d42e9d049c, Apache-2.0) -- adapted, not transcribed.

The Go test replaces the kube filters by fakes that all fail Unschedulable (so none
aborts) and checks, 20 times over, that ``FitError.Reasons()`` lists the stable filters
in ``StableFilterOrder`` (nodeunschedulable, nodeaffinity, tainttoleration) and then
the non-stable ones of ``FilterOrder`` (nodeports), whatever Go's map order. batchsched
hard-codes its filters (``PredicatesPlugin._stable_filters`` then ``_dynamic_filters``):
there are no plugin maps to inject fakes into, and its real node-static filters fail
UnschedulableAndUnresolvable and stop, as Volcano's real ones do (``util.ShouldAbort``).
So the four-reason list cannot be produced. What is checked is the same order with the
real filters: pod count first (it does not stop), then the first failing stable filter
in Volcano's order, else the host ports; identical over 20 calls.
"""

from __future__ import annotations

from node_support import document, open_session, plugin, predicates, reasons

from batchsched.api.types import FitStatusCode
from batchsched.plugins.predicates import (
    REASON_NODE_AFFINITY,
    REASON_NODE_PORTS,
    REASON_NODE_UNSCHEDULABLE,
)

UU = int(FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
UNSCHED = int(FitStatusCode.UNSCHEDULABLE)
POD_NUMBER = "node(s) pod number exceeded"
TAINT = "node(s) had untolerated taint(s)"

BODY = """
nodes:
- {name: all, unschedulable: true, allocatable: {cpu: 8, pods: 1}, labels: {zone: a},
   taints: [{key: k, value: v, effect: NoSchedule}]}
- {name: affinity-taint, allocatable: {cpu: 8, pods: 10}, labels: {zone: a},
   taints: [{key: k, value: v, effect: NoSchedule}]}
- {name: taint-ports, allocatable: {cpu: 8, pods: 10}, labels: {zone: b},
   taints: [{key: k, value: v, effect: NoSchedule}]}
- {name: ports, allocatable: {cpu: 8, pods: 1}, labels: {zone: b}}
jobs: [{name: pg, namespace: c1}, {name: other, namespace: c1}]
tasks:
- {name: r1, namespace: c1, job: other, node: all, phase: Running, hostPorts: [80]}
- {name: r2, namespace: c1, job: other, node: taint-ports, phase: Running, hostPorts: [80],
   tolerations: [{key: k, operator: Exists}]}
- {name: r3, namespace: c1, job: other, node: ports, phase: Running, hostPorts: [80]}
- {name: p, namespace: c1, job: pg, requests: {cpu: 1}, nodeSelector: {zone: b},
   hostPorts: [80]}
"""


def test_predicate_failure_reason_order_is_stable() -> None:
    ssn = open_session(document(BODY, plugin("predicates")))
    expected = {
        "all": [(UNSCHED, POD_NUMBER), (UU, REASON_NODE_UNSCHEDULABLE)],
        "affinity-taint": [(UU, REASON_NODE_AFFINITY)],
        "taint-ports": [(UU, TAINT)],
        "ports": [(UNSCHED, POD_NUMBER), (UNSCHED, REASON_NODE_PORTS)],
    }
    for _ in range(20):
        got = {name: reasons(err) for name, err in predicates(ssn, "c1/p").items()}
        assert got == expected
