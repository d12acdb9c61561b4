"""nodeorder: kube-scheduler's scores with Volcano's weights, the normalisations, and the
node view they read (live with the predicates plugin, session-open state without)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from node_support import document, node_scores, open_session, plugin, task

from batchsched import Statement
from batchsched.framework.arguments import Arguments
from batchsched.framework.session import Session
from batchsched.plugins.nodeorder import (
    WEIGHT_ARGUMENTS,
    NodeOrderPlugin,
    balance_score,
    balanced_allocation,
    default_normalize,
    image_locality_score,
    inter_pod_affinity_normalize,
    least_allocated,
    most_allocated,
    normalized_image_name,
)

GI = 1024**3
ONLY = {key: 0 for key in WEIGHT_ARGUMENTS}


def _weights(**weights: int) -> dict[str, int]:
    """Every nodeorder weight 0 except the ones given (``least=1`` for leastrequested)."""
    names = {"least": "leastrequested.weight", "most": "mostrequested.weight",
             "balanced": "balancedresource.weight", "node_affinity": "nodeaffinity.weight",
             "pod_affinity": "podaffinity.weight", "taint": "tainttoleration.weight",
             "spread": "podtopologyspread.weight", "image": "imagelocality.weight"}
    return {**ONLY, **{names[k]: v for k, v in weights.items()}}


def test_default_weights() -> None:
    p = NodeOrderPlugin(Arguments({}))
    assert p.weights == {"leastrequested.weight": 1, "mostrequested.weight": 0,
                         "balancedresource.weight": 1, "nodeaffinity.weight": 2,
                         "podaffinity.weight": 2, "tainttoleration.weight": 3,
                         "podtopologyspread.weight": 2, "imagelocality.weight": 1}


# -- the resource scores on numbers (the worked examples of docs/plugins/nodeorder.md) --------

def test_least_allocated_worked_example() -> None:
    # Task 1 cpu / 1G on an empty node of 2 cpu / 4Gi, then 4 cpu / 8Gi.
    assert least_allocated((1000, 10**9), (0, 0), (2000, 4 * GI)) == (50 + 76) // 2 == 63
    assert least_allocated((1000, 10**9), (0, 0), (4000, 8 * GI)) == (75 + 88) // 2 == 81


def test_most_allocated_worked_example() -> None:
    assert most_allocated((1000, 10**9), (0, 0), (2000, 4 * GI)) == (50 + 23) // 2 == 36
    assert most_allocated((1000, 10**9), (0, 0), (4000, 8 * GI)) == (25 + 11) // 2 == 18


def test_over_request_and_missing_resource() -> None:
    assert least_allocated((3000, 0), (0, 0), (2000, 4 * GI)) == (0 + 100) // 2
    assert most_allocated((3000, 0), (0, 0), (2000, 4 * GI)) == (100 + 0) // 2
    # A node without memory: only cpu counts.
    assert least_allocated((1000, GI), (0, 0), (4000, 0)) == 75


def test_balance_worked_examples() -> None:
    assert balance_score((1000, GI), (2000, 2 * GI)) == 100
    assert balance_score((1000, GI), (4000, 2 * GI)) == 87  # std (0.5 - 0.25) / 2
    # Three fractions: the population standard deviation.
    assert balance_score((1000, 10**9, 2), (5000, 10 * GI, 10)) == 94
    assert balance_score((2000, 2 * 10**9, 4), (5000, 10 * GI, 10)) == 89
    assert balance_score((8000, GI), (4000, 2 * GI)) == 75  # a fraction above 1 counts 1


def test_balanced_allocation_scores_the_change_of_balance() -> None:
    """Kubernetes 1.36: 50 + (50 + balance with the task - balance without) // 2."""
    assert balanced_allocation((1000, GI, 0), (0, 0, 0), (2000, 2 * GI, 0)) == 75
    assert balanced_allocation((1000, GI, 0), (0, 0, 0), (4000, 2 * GI, 0)) == 68
    assert balanced_allocation((1000, 10**9, 2), (0, 0, 0), (5000, 10 * GI, 10)) == 72
    assert balanced_allocation((1000, 10**9, 2), (1000, 10**9, 2), (5000, 10 * GI, 10)) == 72
    # A task that evens a cpu-heavy node out scores above one that keeps it even.
    assert balanced_allocation((0, 2 * GI, 0), (3000, GI, 0), (4000, 4 * GI, 0)) == 87
    # GPUs not requested: ignored even if the node has them.
    assert balanced_allocation((1000, GI, 0), (0, 0, 0), (2000, 2 * GI, 8)) == 75


_WORKED_EXAMPLE = """
version: 1
name: the guide's worked example
config:
  actions: allocate
  tiers:
  - plugins: [{name: nodeorder}]
nodes:
- {name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs: [{name: j, minMember: 1, phase: Inqueue}]
tasks: [{name: p, job: j, requests: {cpu: 1, memory: 1G}}]
"""


def test_the_plugin_guide_s_worked_example() -> None:
    """docs/plugins/nodeorder.md: 63 + 68 + 300 on n1, 81 + 71 + 300 on n2."""
    from batchsched.scenario import parse_scenario, run_scenario

    scenario = parse_scenario(yaml.safe_load(_WORKED_EXAMPLE), source="<guide>")
    assert run_scenario(scenario, scores=True).scores == {
        "default/p": {"n1": 431.0, "n2": 452.0}}


def test_normalisations() -> None:
    assert default_normalize([20, 80, 0], reverse=False) == [25, 100, 0]
    assert default_normalize([0, 0], reverse=False) == [0, 0]
    assert default_normalize([0, 1, 2], reverse=True) == [100, 50, 0]
    assert default_normalize([0, 0], reverse=True) == [100, 100]
    assert inter_pod_affinity_normalize([-30, -30, 50]) == [0, 0, 100]
    assert inter_pod_affinity_normalize([10, 20, 40]) == [0, 33, 100]
    assert inter_pod_affinity_normalize([7, 7]) == [0, 0]


def test_image_locality_score() -> None:
    mib = 1024 * 1024
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("reg:5000/app") == "reg:5000/app:latest"
    assert normalized_image_name("app:1.2") == "app:1.2"
    # 500 MiB image on 2 of 3 nodes: int(500 MiB * 2/3) = 349525333 bytes.
    assert image_locality_score(349525333, 1) == 31
    assert image_locality_score(10 * mib, 1) == 0
    assert image_locality_score(5000 * mib, 1) == 100


resources = st.tuples(st.integers(0, 64_000), st.integers(0, 2**36))


@given(request=resources, used=resources, allocatable=resources)
def test_resource_scores_stay_in_range(request: tuple[int, int], used: tuple[int, int],
                                       allocatable: tuple[int, int]) -> None:
    assert 0 <= least_allocated(request, used, allocatable) <= 100
    assert 0 <= most_allocated(request, used, allocatable) <= 100
    assert 50 <= balanced_allocation((*request, 0), (*used, 0), (*allocatable, 0)) <= 100


@given(st.lists(st.integers(-500, 500), min_size=1, max_size=8))
def test_inter_pod_normalisation_in_range(raw: list[int]) -> None:
    out = inter_pod_affinity_normalize(raw)
    assert all(0 <= s <= 100 for s in out)
    if max(raw) > min(raw):
        assert out[raw.index(max(raw))] == 100 and out[raw.index(min(raw))] == 0


@given(st.lists(st.integers(0, 500), min_size=1, max_size=8), st.booleans())
def test_default_normalisation_in_range(raw: list[int], reverse: bool) -> None:
    assert all(0 <= s <= 100 for s in default_normalize(raw, reverse=reverse))


# -- through a session ---------------------------------------------------------------------------

def _session(body: str, weights: dict[str, int], *extra: dict[str, Any]) -> Session:
    return open_session(document(body, plugin("nodeorder", weights), *extra))


ZONES = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10},
   labels: {kubernetes.io/hostname: n1, zone: a}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10},
   labels: {kubernetes.io/hostname: n2, zone: b},
   taints: [{key: k, value: v, effect: PreferNoSchedule}]}
- {name: n3, allocatable: {cpu: 4, memory: 8Gi, pods: 10},
   labels: {kubernetes.io/hostname: n3, zone: c},
   taints: [{key: k, value: v, effect: PreferNoSchedule}, {key: j, effect: PreferNoSchedule}]}
jobs: [{name: pg, namespace: c1}, {name: other, namespace: c1}]
"""


def _tasks(*entries: dict[str, Any]) -> str:
    return "tasks:\n" + "\n".join(
        "- " + yaml.safe_dump(e, default_flow_style=True).strip() for e in entries)


def test_node_affinity_preferred_terms() -> None:
    pref = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 20, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]}]}},
        {"weight": 60, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b"]}]}}]}}
    body = ZONES + _tasks({"name": "p", "namespace": "c1", "job": "pg", "affinity": pref})
    ssn = _session(body, _weights(node_affinity=2))
    assert node_scores(ssn, "c1/p") == {"n1": 50, "n2": 200, "n3": 0}
    # Normalised over the candidates handed in.
    assert node_scores(ssn, "c1/p", ["n1", "n3"]) == {"n1": 200, "n3": 0}


def test_taint_toleration_prefers_fewer_untolerated_taints() -> None:
    body = ZONES + _tasks(
        {"name": "p", "namespace": "c1", "job": "pg"},
        {"name": "t", "namespace": "c1", "job": "pg",
         "tolerations": [{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}]})
    ssn = _session(body, _weights(taint=3))
    assert node_scores(ssn, "c1/p") == {"n1": 300, "n2": 150, "n3": 0}
    assert node_scores(ssn, "c1/t") == {"n1": 300, "n2": 300, "n3": 0}


def test_inter_pod_affinity_preferences_both_ways() -> None:
    zone_term = {"topologyKey": "zone"}
    existing = [
        {"name": "cache", "namespace": "c1", "job": "other", "node": "n1", "phase": "Running",
         "labels": {"app": "cache"}},
        {"name": "web", "namespace": "c1", "job": "other", "node": "n3", "phase": "Running",
         "labels": {"app": "web"}, "affinity": {"podAffinity": {
             "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {
                 "labelSelector": {"matchLabels": {"app": "api"}}, **zone_term}}]}}},
        # Required terms of placed pods weigh 0 in Volcano (HardPodAffinityWeight 0).
        {"name": "needy", "namespace": "c1", "job": "other", "node": "n2", "phase": "Running",
         "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
             {"labelSelector": {"matchLabels": {"app": "api"}}, **zone_term}]}}},
    ]
    api = {"name": "api", "namespace": "c1", "job": "pg", "labels": {"app": "api"},
           "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
               {"weight": 30, "podAffinityTerm": {
                   "labelSelector": {"matchLabels": {"app": "cache"}}, **zone_term}}]}}}
    plain = {"name": "plain", "namespace": "c1", "job": "pg", "labels": {"app": "api"}}
    nobody = {"name": "nobody", "namespace": "c1", "job": "pg", "labels": {"app": "zzz"}}
    ssn = _session(ZONES + _tasks(*existing, api, plain, nobody), _weights(pod_affinity=2))
    # raw: zone a -30 (cache repels), b 0, zone c +50 (web attracts); min-max over -30..50:
    # n1 0, n2 int(100 * 30 / 80) = 37, n3 100; times podaffinity.weight 2.
    assert node_scores(ssn, "c1/api") == {"n1": 0, "n2": 74, "n3": 200}
    assert node_scores(ssn, "c1/plain") == {"n1": 0, "n2": 0, "n3": 200}
    assert node_scores(ssn, "c1/nobody") == {"n1": 0, "n2": 0, "n3": 0}


def test_image_locality_through_the_session() -> None:
    mib = 1024 * 1024
    body = f"""
nodes:
- {{name: n1, allocatable: {{pods: 10}}, images: {{"nginx:latest": {500 * mib}}}}}
- {{name: n2, allocatable: {{pods: 10}}, images: {{nginx: {500 * mib}, "redis:7": {300 * mib}}}}}
- {{name: n3, allocatable: {{pods: 10}}}}
jobs: [{{name: pg, namespace: c1}}]
tasks:
- {{name: p, namespace: c1, job: pg, images: [nginx, "redis:7"]}}
"""
    ssn = _session(body, _weights(image=1))
    # The task's nginx is nginx:latest; the nodes' names are kept as listed (Volcano's
    # cache does), so n2's untagged nginx is another image. Two images, so the range is
    # 23 MiB .. 2000 MiB. n1: int(500 MiB * 1/3) = 174762666
    # -> 100 * (174762666 - 23 MiB) // (2000 MiB - 23 MiB) = 7; n2: redis:7 only,
    # int(300 MiB * 1/3) = 104857600 -> 3.
    assert node_scores(ssn, "c1/p") == {"n1": 7, "n2": 3, "n3": 0}


def test_best_effort_task_uses_default_requests_and_skips_balance() -> None:
    body = """
nodes: [{name: n1, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}]
jobs: [{name: pg, namespace: c1}]
tasks: [{name: p, namespace: c1, job: pg}]
"""
    ssn = open_session(document(body, plugin("nodeorder")))
    # least: cpu (2000 - 100) * 100 // 2000 = 95, memory (4Gi - 200Mi) * 100 // 4Gi = 95;
    # balanced: skipped; taint toleration: 100 * 3.
    assert node_scores(ssn, "c1/p") == {"n1": 95 + 300}


def test_zero_weights_score_nothing_and_negative_weights_subtract() -> None:
    body = ZONES + _tasks({"name": "p", "namespace": "c1", "job": "pg",
                           "requests": {"cpu": 1, "memory": "1Gi"}})
    assert node_scores(_session(body, ONLY), "c1/p") == {"n1": 0, "n2": 0, "n3": 0}
    got = node_scores(_session(body, _weights(most=-1)), "c1/p")
    # most: cpu 1000 * 100 // 4000 = 25, memory 1Gi * 100 // 8Gi = 12 -> 18, times -1.
    assert got == {"n1": -18, "n2": -18, "n3": -18}


LIVE = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs: [{name: pg, namespace: c1}]
tasks:
- {name: a, namespace: c1, job: pg, requests: {cpu: 2, memory: 4Gi}}
- {name: b, namespace: c1, job: pg, requests: {cpu: 1, memory: 1Gi}}
"""


@pytest.mark.parametrize(("with_predicates", "n1"), [(True, 31), (False, 81)])
def test_view_is_live_only_with_the_predicates_plugin(with_predicates: bool, n1: int) -> None:
    extra = [plugin("predicates")] if with_predicates else []
    ssn = _session(LIVE, _weights(least=1), *extra)
    Statement(ssn).allocate(task(ssn, "c1/a"), ssn.nodes["n1"])
    # Live: n1 holds a (2 cpu, 4Gi) -> cpu 25, memory 37 -> 31. Stale: as empty n2, 81.
    assert node_scores(ssn, "c1/b") == {"n1": n1, "n2": 81}


def test_placed_pods_preferred_terms_score_from_the_nodes_listed_at_session_open() -> None:
    """Volcano's session lists the nodes with affinity pods once, at open: a pod without
    preferred terms of its own is scored against the placed pods of those nodes only, so
    a pod placed during the session on another node counts from the next session on. A
    pod with preferred terms of its own is scored against every node."""
    attract = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "api"}},
                                           "topologyKey": "zone"}}]}}
    repel_cache = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}},
                                           "topologyKey": "zone"}}]}}
    entries = [
        {"name": "fan", "namespace": "c1", "job": "other", "labels": {"app": "fan"},
         "affinity": attract},
        {"name": "api", "namespace": "c1", "job": "pg", "labels": {"app": "api"}},
        {"name": "picky", "namespace": "c1", "job": "pg", "labels": {"app": "api"},
         "affinity": repel_cache},
    ]
    body = ZONES + _tasks(*entries)
    listed = [{"name": "old-fan", "namespace": "c1", "job": "other", "node": "n2",
               "phase": "Running", "affinity": attract}]
    for placed_on, existing, api, picky in (
        # n3 not listed: only the pod with terms of its own sees the fan there.
        ("n3", [], {"n1": 0, "n2": 0, "n3": 0}, {"n1": 0, "n2": 0, "n3": 200}),
        # n2 listed (old-fan): the fan placed there counts for both.
        ("n2", listed, {"n1": 0, "n2": 200, "n3": 0}, {"n1": 0, "n2": 200, "n3": 0}),
    ):
        ssn = _session(ZONES + _tasks(*existing, *entries) if existing else body,
                       _weights(pod_affinity=2), plugin("predicates"))
        Statement(ssn).allocate(task(ssn, "c1/fan"), ssn.nodes[placed_on])
        assert node_scores(ssn, "c1/api") == api, placed_on
        assert node_scores(ssn, "c1/picky") == picky, placed_on


def test_least_allocated_counts_the_pods_non_zero_requests_when_given() -> None:
    """``nonZeroRequests`` (what kube-scheduler's scores count for a pod with
    containers that ask nothing) replaces the stand-in worked out from the merged
    request, for the pending task and for the pods already on a node."""
    body = """
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs: [{name: pg, namespace: c1}, {name: other, namespace: c1}]
tasks:
- {name: on-n1, namespace: c1, job: other, node: n1, phase: Running,
   requests: {cpu: 1, memory: 1Gi}, nonZeroRequests: {cpu: 2, memory: 1Gi}}
- {name: on-n2, namespace: c1, job: other, node: n2, phase: Running,
   requests: {cpu: 1, memory: 1Gi}}
- {name: p, namespace: c1, job: pg, requests: {cpu: 1, memory: 1Gi}}
- {name: q, namespace: c1, job: pg, requests: {cpu: 1, memory: 1Gi},
   nonZeroRequests: {cpu: 1100m, memory: 1224Mi}}
"""
    ssn = _session(body, _weights(least=1))
    # p on n2: cpu (4000 - 2000) * 100 // 4000 = 50, memory (8 - 2) * 100 // 8 = 75
    # -> 62; on n1 the running pod counts 2 cpus: cpu 25 -> 50.
    assert node_scores(ssn, "c1/p") == {"n1": 50, "n2": 62}
    # q counts 1100m and 1224Mi: n2 cpu (4000 - 2100) * 100 // 4000 = 47, memory
    # (8192 - 2248) * 100 // 8192 = 72 -> 59.
    assert node_scores(ssn, "c1/q")["n2"] == 59


PREFERRED_GT_NOT_AN_INTEGER = """
version: 1
name: preferred-gt-not-an-integer
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
nodes:
- {name: n1, labels: {rank: "5"}, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, labels: {rank: "7"}, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs:
- {name: j, namespace: ns, minMember: 1}
tasks:
- name: t
  namespace: ns
  job: j
  requests: {cpu: 1, memory: 1Gi}
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: rank, operator: Gt, values: ["six"]}]}
"""


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_a_preferred_term_kube_cannot_parse_leaves_the_task_unplaced(
        fast_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # NodeAffinity's PreScore errors, Volcano's BatchNodeOrderFn returns the error and
    # the task gets no node (allocate's bestNode is nil); a single candidate is taken
    # unscored.
    monkeypatch.setenv("BATCHSCHED_FAST_PATH", fast_path)
    from batchsched.scenario import parse_scenario, run_scenario
    document = yaml.safe_load(PREFERRED_GT_NOT_AN_INTEGER)
    assert run_scenario(parse_scenario(document)).binds == {}
    document["nodes"] = document["nodes"][:1]
    assert run_scenario(parse_scenario(document)).binds == {"ns/t": "n1"}
    document = yaml.safe_load(PREFERRED_GT_NOT_AN_INTEGER)
    document["config"]["tiers"][1]["plugins"][1]["arguments"] = {"nodeaffinity.weight": 0}
    assert run_scenario(parse_scenario(document)).binds == {"ns/t": "n1"}


_OVERSUBSCRIBED = """
version: 1
name: oversubscription is not kube-scheduler's
config:
  actions: allocate
  tiers:
  - plugins: [{name: predicates}, {name: nodeorder}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10},
   annotations: {volcano.sh/oversubscription-cpu: "4000",
                 volcano.sh/oversubscription-memory: "8589934592"}}
- {name: n2, allocatable: {cpu: 6, memory: 12Gi, pods: 10}}
jobs:
- {name: j1, minMember: 1, phase: Inqueue}
tasks:
- {name: t1, job: j1, requests: {cpu: 1, memory: 1Gi}}
"""


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_resource_scores_divide_by_the_node_object_s_allocatable(
        fast_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Volcano scores with kube-scheduler's NodeInfo, built from the node object: the
    oversubscription Volcano adds to its own NodeInfo is not there. n1 (4 cpu, 8Gi,
    as much again oversubscribed) scores 81 + 93, n2 (6 cpu, 12Gi) 87 + 95."""
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
    from batchsched.scenario import parse_scenario, run_scenario

    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast_path)
    decisions = run_scenario(parse_scenario(yaml.safe_load(_OVERSUBSCRIBED), source="<test>"))
    assert decisions.binds == {"default/t1": "n2"}


_ASKS_NO_CPU = """
version: 1
name: a request of 0 named
config:
  actions: allocate
  tiers:
  - plugins:
    - {name: predicates}
    - name: nodeorder
      arguments: {balancedresource.weight: 0, tainttoleration.weight: 0}
nodes:
- {name: n1, allocatable: {cpu: 1, memory: 4Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 10, memory: 3Gi, pods: 10}}
jobs:
- {name: j1, minMember: 1, phase: Inqueue}
tasks:
- {name: t1, job: j1, requests: REQUESTS}
"""


@pytest.mark.parametrize(("requests", "node"), [
    ("{cpu: 0, memory: 512Mi}", "n1"),   # a named 0 counts 0: (100 + 87) / 2 against 91
    ("{memory: 512Mi}", "n2"),           # left out, it counts 100m: 88 against 91
])
def test_a_cpu_request_of_0_named_counts_0_in_the_resource_scores(
        requests: str, node: str) -> None:
    """kube's NonMissingContainerRequests: 100m and 200Mi stand in for a request a
    container leaves out, not for one it names as 0."""
    from batchsched.scenario import parse_scenario, run_scenario

    doc = yaml.safe_load(_ASKS_NO_CPU.replace("REQUESTS", requests))
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {"default/t1": node}


def test_an_init_container_leaving_memory_out_counts_200mi() -> None:
    """The init container of ``initRequests`` is a container of its own: the memory it
    leaves out counts 200Mi, and the pod counts the larger of it and the containers'."""
    from batchsched.kube.pod_view import nonzero_request
    from batchsched.scenario import parse_scenario

    doc = yaml.safe_load(_ASKS_NO_CPU.replace(
        "requests: REQUESTS", "requests: {cpu: 1, memory: 100Mi}, initRequests: {cpu: 2}"))
    (task,) = parse_scenario(doc, source="<test>").tasks
    assert nonzero_request(task) == (2000, 200 * 1024 * 1024)


_SAME_REQUESTS_OTHER_FIGURES = """
version: 1
name: same requests, different non-zero figures
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins:
    - {name: predicates}
    - {name: proportion}
    - name: nodeorder
      arguments: {leastrequested.weight: 1, mostrequested.weight: 0, balancedresource.weight: 0}
nodes:
- {name: n0, allocatable: {cpu: 2, memory: 300Mi, pods: 10}}
- {name: n1, allocatable: {cpu: 3, memory: 300Mi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 4Gi, pods: 10}}
jobs:
- {name: a, minMember: 1, phase: Inqueue, createdAt: 1}
- {name: b, minMember: 1, phase: Inqueue, createdAt: 2}
tasks:
- {name: a-0, job: a, requests: {cpu: 1, memory: 0}}
- {name: a-1, job: a, requests: {cpu: 1, memory: 0}}
- {name: b-0, job: b, requests: {cpu: 1}}
"""


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_tasks_asking_alike_with_other_non_zero_figures_are_scored_apart(
        fast_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """b-0's kept scores (memory counted 200Mi) are not a-1's (memory named 0): both
    forms send a-1 to n1."""
    from batchsched.columnar.selector import FAST_PATH_ENVIRONMENT_VARIABLE
    from batchsched.scenario import parse_scenario, run_scenario

    monkeypatch.setenv(FAST_PATH_ENVIRONMENT_VARIABLE, fast_path)
    doc = yaml.safe_load(_SAME_REQUESTS_OTHER_FIGURES)
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {
        "default/a-0": "n2", "default/b-0": "n2", "default/a-1": "n1"}
