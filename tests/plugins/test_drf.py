"""drf: dominant shares, job order, preemption, events, hierarchical DRF, and the
configuration rule against hierarchical drf with proportion (Volcano's plugins/drf)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import open_scenario, registry, scenario
from queue_support import assert_total_order

from batchsched.conf import configuration_from_text, load_configuration, parse_configuration
from batchsched.errors import ConfigError
from batchsched.framework import Session, Statement
from batchsched.plugins.drf import DrfPlugin
from batchsched.plugins.drf.hierarchy import HierarchyNode, compare_queue_paths
from batchsched.scenario import check_scenario, load_scenario, parse_scenario


def drf_of(ssn: Session) -> DrfPlugin:
    plugin = ssn.plugins["drf"]
    assert isinstance(plugin, DrfPlugin)
    return plugin


def doc(jobs: str, tasks: str, *, queues: str = "[{name: q1}]", hierarchy: bool = False,
        node: str = "{cpu: 10, memory: 20Gi, pods: 100}") -> dict[str, Any]:
    flag = str(hierarchy).lower()
    return scenario(f"""
config: {{actions: "", tiers: [{{plugins: [{{name: drf, enableHierarchy: {flag}}}]}}]}}
queues: {queues}
nodes: [{{name: n1, allocatable: {node}}}]
jobs: {jobs}
tasks: {tasks}
""")


# -- shares and job order -------------------------------------------------------------------

def test_share_is_the_largest_fraction_of_the_cluster_a_job_holds() -> None:
    ssn = open_scenario(doc(
        "[{name: a, queue: q1}, {name: b, queue: q1}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2, memory: 8Gi}},"
        " {name: b1, job: b, node: n1, phase: Running, requests: {cpu: 3, memory: 1Gi}}]",
    ))
    drf = drf_of(ssn)
    assert drf.job_share("default/a") == pytest.approx(0.4)   # memory 8/20 dominates cpu 2/10
    assert drf.job_share("default/b") == pytest.approx(0.3)   # cpu 3/10
    assert ssn.job_order_fn(ssn.jobs["default/b"], ssn.jobs["default/a"])


def test_equal_shares_leave_the_order_to_creation_time() -> None:
    ssn = open_scenario(doc(
        "[{name: late, queue: q1, createdAt: 100}, {name: early, queue: q1, createdAt: 50}]",
        "[{name: l1, job: late, requests: {cpu: 1}}, {name: e1, job: early, requests: {cpu: 1}}]",
    ))
    late, early = ssn.jobs["default/late"], ssn.jobs["default/early"]
    assert drf_of(ssn).job_order(late, early) == 0
    assert ssn.job_order_fn(early, late)


def test_allocate_evict_and_discard_keep_shares_current() -> None:
    ssn = open_scenario(doc(
        "[{name: a, queue: q1}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: a2, job: a, requests: {cpu: 3}}]",
    ))
    drf = drf_of(ssn)
    tasks = ssn.jobs["default/a"].tasks
    stmt = Statement(ssn)
    stmt.allocate(tasks["default/a2"], "n1")
    assert drf.job_share("default/a") == pytest.approx(0.5)
    stmt.evict(tasks["default/a1"])
    assert drf.job_share("default/a") == pytest.approx(0.3)
    stmt.discard()
    assert drf.job_share("default/a") == pytest.approx(0.2)


def test_a_waiting_job_placed_does_not_move_the_other_waiting_jobs_shares() -> None:
    # Jobs that hold nothing share one state until one of them is placed.
    ssn = open_scenario(doc(
        "[{name: a, queue: q1}, {name: b, queue: q1}]",
        "[{name: a1, job: a, requests: {cpu: 2}}, {name: b1, job: b, requests: {cpu: 3}}]",
    ))
    drf = drf_of(ssn)
    stmt = Statement(ssn)
    stmt.allocate(ssn.jobs["default/a"].tasks["default/a1"], "n1")
    assert drf.job_share("default/a") == pytest.approx(0.2)
    assert drf.job_share("default/b") == 0.0
    stmt.discard()
    stmt = Statement(ssn)
    stmt.allocate(ssn.jobs["default/b"].tasks["default/b1"], "n1")
    assert (drf.job_share("default/a"), drf.job_share("default/b")) == (0.0, pytest.approx(0.3))


# -- preemptable ----------------------------------------------------------------------------

def test_preemptable_while_victim_share_stays_at_least_the_preemptors() -> None:
    ssn = open_scenario(doc(
        "[{name: p, queue: q1}, {name: v, queue: q1}]",
        "[{name: p0, job: p, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: p1, job: p, requests: {cpu: 1}},"
        + ",".join(f"{{name: v{i}, job: v, node: n1, phase: Running, requests: {{cpu: 1}}}}"
                   for i in range(5)) + "]",
    ))
    preemptor = ssn.jobs["default/p"].tasks["default/p1"]
    candidates = [ssn.jobs["default/v"].tasks[f"default/v{i}"] for i in range(4)]
    # Preemptor's job would hold 2/10. The victim job goes 5 -> 4 -> 3 -> 2 -> 1 as the
    # candidates are taken off one after another: 0.4, 0.3, 0.2 (equal: allowed), 0.1.
    victims = ssn.preemptable(preemptor, candidates)
    assert [v.name for v in victims] == ["v0", "v1", "v2"]


def test_preemptor_of_an_unknown_job_gets_no_victims() -> None:
    ssn = open_scenario(doc("[{name: v, queue: q1}]",
                            "[{name: v0, job: v, node: n1, phase: Running, requests: {cpu: 1}}]"))
    stranger = ssn.jobs["default/v"].tasks["default/v0"].clone()
    stranger.job = "default/elsewhere"
    assert drf_of(ssn).preemptable(stranger, list(ssn.jobs["default/v"].tasks.values())) == []


# -- hierarchical DRF -------------------------------------------------------------------------

HQUEUES = """[
  {name: qa, annotations: {volcano.sh/hierarchy: root/a, volcano.sh/hierarchy-weights: 1/1}},
  {name: qb, annotations: {volcano.sh/hierarchy: root/b, volcano.sh/hierarchy-weights: 1/1}},
  {name: qc, annotations: {volcano.sh/hierarchy: root/c, volcano.sh/hierarchy-weights: 1/4}}]"""


def test_hierarchy_is_read_from_the_plugin_option() -> None:
    flat = open_scenario(doc("[]", "[]", queues=HQUEUES))
    assert not drf_of(flat).hierarchy
    assert "drf" not in flat.registered("queue_order")
    deep = open_scenario(doc("[]", "[]", queues=HQUEUES, hierarchy=True))
    assert drf_of(deep).hierarchy
    assert "drf" in deep.registered("queue_order") and "drf" in deep.registered("reclaimable")


def test_saturated_subtree_goes_after_a_demanding_one() -> None:
    # a's job holds all it asked for (saturated); b's holds more of the cluster but wants more.
    ssn = open_scenario(doc(
        "[{name: a, queue: qa}, {name: b, queue: qb}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: a2, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        + ",".join(f"{{name: b{i}, job: b, node: n1, phase: Running, requests: {{cpu: 1}}}}"
                   for i in range(3))
        + ", {name: b3, job: b, requests: {cpu: 1}}]",
        queues=HQUEUES, hierarchy=True,
    ))
    q = ssn.queues
    assert ssn.queue_order_fn(q["qb"], q["qa"])
    assert not ssn.queue_order_fn(q["qa"], q["qb"])


def test_weight_divides_the_share_of_a_subtree() -> None:
    # Both jobs hold 2 cpu and want more; c's weight 4 makes its share count a quarter.
    ssn = open_scenario(doc(
        "[{name: b, queue: qb}, {name: c, queue: qc}]",
        "[{name: b1, job: b, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: b2, job: b, requests: {cpu: 2}},"
        " {name: c1, job: c, node: n1, phase: Running, requests: {cpu: 2}},"
        " {name: c2, job: c, requests: {cpu: 2}}]",
        queues=HQUEUES, hierarchy=True,
    ))
    q = ssn.queues
    assert ssn.queue_order_fn(q["qc"], q["qb"])


@pytest.mark.parametrize(("weight", "first"), [
    ("4", "qa"),        # a's share counts a quarter: a goes first
    (" 4", "qb"),       # Go's ParseFloat refuses blanks: 0, raised to 1
    ("0x1p2", "qa"),    # a hexadecimal float, 4
    ("1_0", "qa"),      # underscores between digits, 10
    ("nan", "qa"),      # NaN stays NaN (NaN < 1 is false): no order, the names decide
])
def test_hierarchy_weights_are_read_as_go_reads_them(weight: str, first: str) -> None:
    # Both jobs hold cpu and want more; a holds 2 of 8, b 1 of 8.
    queues = (f'[{{name: qa, annotations: {{volcano.sh/hierarchy: "root/a", '
              f'volcano.sh/hierarchy-weights: "1/{weight}"}}}},'
              ' {name: qb, annotations: {volcano.sh/hierarchy: "root/b", '
              'volcano.sh/hierarchy-weights: "1/1"}}]')
    ssn = open_scenario(doc(
        "[{name: a, queue: qa, phase: Running}, {name: b, queue: qb, phase: Running}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 2, memory: 1Gi}},"
        " {name: a2, job: a, requests: {cpu: 5, memory: 1Gi}},"
        " {name: b1, job: b, node: n1, phase: Running, requests: {cpu: 1, memory: 1Gi}},"
        " {name: b2, job: b, requests: {cpu: 5, memory: 1Gi}}]",
        queues=queues, hierarchy=True, node="{cpu: 8, memory: 8Gi, pods: 110}",
    ))
    q = ssn.queues
    other = "qb" if first == "qa" else "qa"
    assert ssn.queue_order_fn(q[first], q[other])
    assert not ssn.queue_order_fn(q[other], q[first])


def test_a_weights_list_shorter_than_the_path_is_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    queues = ('[{name: qa, annotations: {volcano.sh/hierarchy: "root/eng/a", '
              'volcano.sh/hierarchy-weights: "1/2"}}]')
    ssn = open_scenario(doc("[{name: a, queue: qa}]", "[{name: a1, job: a, requests: {cpu: 1}}]",
                            queues=queues, hierarchy=True))
    assert ssn.queues["qa"]
    assert ("volcano.sh/hierarchy-weights '1/2' has fewer weights than volcano.sh/hierarchy "
            "'root/eng/a' has elements; the missing ones are 1") in caplog.text


def test_hierarchical_reclaim_judges_each_candidate_alone() -> None:
    ssn = open_scenario(doc(
        "[{name: a, queue: qa}, {name: b, queue: qb}, {name: small, queue: qa}]",
        "[{name: a1, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: a2, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: a3, job: a, node: n1, phase: Running, requests: {cpu: 1}},"
        " {name: a4, job: a, requests: {cpu: 1}},"
        " {name: b1, job: b, requests: {cpu: 1}}, {name: b2, job: b, requests: {cpu: 1}}]",
        queues=HQUEUES, hierarchy=True, node="{cpu: 4, memory: 4Gi, pods: 100}",
    ))
    reclaimer = ssn.jobs["default/b"].tasks["default/b1"]
    candidates = list(ssn.jobs["default/a"].tasks.values())[:3]
    # With b1 placed (1/4) and one of a's tasks gone (2/4), b still comes first: each
    # candidate alone is a victim.
    assert [v.name for v in drf_of(ssn).reclaimable(reclaimer, candidates)] == ["a1", "a2", "a3"]


def test_queue_order_treats_an_unknown_path_as_empty() -> None:
    root = HierarchyNode("root", 1.0)
    assert compare_queue_paths(root, "root/x", "root/y") == 0
    assert compare_queue_paths(root, "", "root/y") == 0


# -- the drf-with-hierarchy / proportion rule --------------------------------------------------

SAME_TIER = """
actions: allocate
tiers:
- plugins:
  - {name: drf, enableHierarchy: true}
  - {name: proportion}
"""


def test_configuration_file_rejects_hierarchical_drf_with_proportion_in_one_tier(
    tmp_path: Path,
) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(SAME_TIER)
    with pytest.raises(ConfigError, match=r"tiers\[0\]: proportion and drf with hierarchy "
                                          r"enabled conflicts"):
        load_configuration(path)


@pytest.mark.parametrize("text", [
    "tiers: [{plugins: [{name: drf, enableHierarchy: true}]}, {plugins: [{name: proportion}]}]",
    "tiers: [{plugins: [{name: drf}, {name: proportion}]}]",
    "tiers: [{plugins: [{name: drf, enableHierarchy: false}, {name: proportion}]}]",
])
def test_other_combinations_load(text: str) -> None:
    configuration_from_text(text)


def test_configurations_built_in_code_or_scenarios_may_combine_them() -> None:
    # Volcano applies the rule only when parsing its configuration file; its own HDRF
    # test builds this tier in code, and intent/drf-01 transcribes that test.
    configuration = parse_configuration({"tiers": [{"plugins": [
        {"name": "drf", "enableHierarchy": True}, {"name": "proportion"}]}]})
    configuration.validate(registry())
    parsed = parse_scenario(scenario(
        "config: {actions: allocate, tiers: [{plugins: "
        "[{name: drf, enableHierarchy: true}, {name: proportion}]}]}"), source="<test>")
    ssn = Session.open(parsed.build_cache(), parsed.configuration, registry=registry())
    assert drf_of(ssn).hierarchy and "proportion" in ssn.plugins


# -- properties -------------------------------------------------------------------------------

running_jobs = st.lists(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=3),
    min_size=2, max_size=5,
)


def _jobs_doc(jobs: list[list[tuple[int, int]]], *, hierarchy: bool = False) -> dict[str, Any]:
    queues = "[" + ", ".join(
        f"{{name: q{g}{leaf}, annotations: {{volcano.sh/hierarchy: root/g{g}/l{leaf},"
        f" volcano.sh/hierarchy-weights: 1/{g + 1}/{leaf + 1}}}}}"
        for g in range(2) for leaf in range(2)) + "]"
    job_list = ", ".join(f"{{name: j{i}, queue: q{i % 2}{i // 2 % 2}}}" for i in range(len(jobs)))
    tasks = ", ".join(
        f"{{name: t{i}-{k}, job: j{i}, node: n1, phase: Running,"
        f" requests: {{cpu: {cpu}, memory: {mem}Gi}}}}"
        for i, job in enumerate(jobs) for k, (cpu, mem) in enumerate(job))
    pending = ", ".join(f"{{name: w{i}, job: j{i}, requests: {{cpu: 1}}}}"
                        for i in range(0, len(jobs), 2))
    return doc(f"[{job_list}]", f"[{tasks}, {pending}]", queues=queues, hierarchy=hierarchy,
               node="{cpu: 64, memory: 64Gi, pods: 100}")


@settings(max_examples=50, deadline=None)
@given(running_jobs)
def test_job_order_is_antisymmetric_and_transitive(jobs: list[list[tuple[int, int]]]) -> None:
    ssn = open_scenario(_jobs_doc(jobs))
    assert_total_order(list(ssn.jobs.values()), drf_of(ssn).job_order)


@settings(max_examples=50, deadline=None)
@given(running_jobs)
def test_hierarchical_queue_order_is_antisymmetric_and_transitive(
    jobs: list[list[tuple[int, int]]],
) -> None:
    # Queues sit at the same depth: a queue whose path is a prefix of another's ties
    # with every queue below it (Volcano compares paths only as deep as the shorter),
    # as `default` and `root` (both without a hierarchy annotation) do.
    ssn = open_scenario(_jobs_doc(jobs, hierarchy=True))
    queues = [q for name, q in sorted(ssn.queues.items()) if name not in ("default", "root")]
    assert_total_order(queues, drf_of(ssn).queue_order)


def test_hierarchical_queues_leave_allocate_s_heap_as_go_s_heap_lets_them() -> None:
    # A queue's hierarchical value moves while it waits in the heap; which queue is
    # popped then depends on the heap's steps, and Volcano's are Go's container/heap.
    scenario = load_scenario(Path(__file__).parent / "data" / "drf" / "hdrf-heap-order.yaml")
    result = check_scenario(scenario, registry=registry())
    assert result.passed, result.differences
