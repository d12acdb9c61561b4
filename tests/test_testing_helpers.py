from __future__ import annotations

from typing import Any

import pytest

from batchsched.testing import ScenarioBuilder, assert_decisions, run


def test_builder_round_trips_through_the_scenario_format() -> None:
    built = (ScenarioBuilder(actions="")
             .node("n1", cpu=4, memory="8Gi")
             .job("pg1", namespace="c1", min_member=1)
             .task("p1", job="pg1", namespace="c1", cpu=1, memory="1Gi"))
    decisions = run(built)
    assert decisions.binds == {}
    assert_decisions(decisions, evicted=[], pod_group_phases={"c1/pg1": "Pending"})
    with pytest.raises(AssertionError, match="podGroupPhases: c1/pg1 expected Running"):
        assert_decisions(decisions, pod_group_phases={"c1/pg1": "Running"})
    assert "name: p1" in built.to_yaml()


def test_a_built_workload_replays_over_time() -> None:
    from batchsched.testing import simulate

    timeline = simulate(
        ScenarioBuilder(actions="enqueue, allocate")
        .node("n1", cpu=2, memory="4Gi")
        .job("a", min_member=2, submit=0, requested_runtime="2m")
        .task("a0", job="a", cpu=1, memory="1Gi", run_time=60)
        .task("a1", job="a", cpu=1, memory="1Gi", run_time="1m")
        .job("b", min_member=1, submit=10)
        .task("b0", job="b", cpu=1, memory="1Gi", run_time=5)
    )
    a, b = timeline.jobs["default/a"], timeline.jobs["default/b"]
    assert (a.start, a.end) == (0.0, 60.0)
    assert (b.start, b.end) == (60.0, 65.0)  # waited for a's gang to leave
    assert timeline.metrics()["averageWait"] == 25.0


def test_assert_decisions_takes_every_expect_key_and_refuses_unknown_ones() -> None:
    decisions = run(ScenarioBuilder(actions="").node("n1", cpu=1).job("pg1", min_member=1)
                    .task("p1", job="pg1", cpu=1))
    assert_decisions(decisions, bind_failures=[], gpu_devices={}, nominated={})
    with pytest.raises(TypeError, match="unknown key 'bind_failurs'"):
        assert_decisions(decisions, bind_failurs=[])


def test_simulate_leaves_out_a_job_too_large_for_the_cluster_as_the_command_does() -> None:
    from batchsched.testing import simulate

    builder = (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=1)
               .job("huge", min_member=1, submit=0).task("h0", job="huge", cpu=4, run_time=5)
               .job("small", min_member=1, submit=0).task("s0", job="small", cpu=1, run_time=5))
    with pytest.warns(UserWarning, match="default/huge skipped"):
        timeline = simulate(builder)
    assert set(timeline.jobs) == {"default/small"}


def test_a_workload_job_without_a_run_time_for_a_task_is_named() -> None:
    from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo
    from batchsched.errors import WorkloadError
    from batchsched.simulation import Simulator
    from batchsched.simulation.workload import Workload, WorkloadJob

    task = TaskInfo.create("default", "c-0", "default/c", Resource.from_mapping({"cpu": 1}))
    job = JobInfo.from_podgroup(PodGroup("c", min_member=1), tasks=[task])
    workload = Workload(name="w", nodes=(), jobs=(WorkloadJob(job, 0.0, {"c-0": 5.0}),))
    with pytest.raises(WorkloadError, match="job default/c: no run time for task default/c-0"):
        Simulator(workload, None)


def test_the_cache_refuses_what_a_host_gets_wrong() -> None:
    from batchsched import MemoryCache, NodeInfo
    from batchsched.api import JobInfo, PodGroup, Resource, TaskInfo, TaskStatus
    from batchsched.errors import SchedulingError

    cache = MemoryCache(now=0.0)
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 2, "pods": 10})))
    running = TaskInfo.create("default", "t0", "default/j", Resource.from_mapping({"cpu": 1}),
                              node_name="n1", status=TaskStatus.RUNNING)
    cache.add_job(JobInfo.from_podgroup(PodGroup("j", min_member=1), tasks=[running]))
    # The same job again is refused (replacing it would leave its pod on the node, or
    # give back claims and CPUs its running pod still holds): delete_job first.
    fresh = TaskInfo.create("default", "t9", "default/j", Resource.from_mapping({"cpu": 1}))
    with pytest.raises(SchedulingError, match="job default/j: the cache holds it already"):
        cache.add_job(JobInfo.from_podgroup(PodGroup("j", min_member=1), tasks=[fresh]))
    assert list(cache.nodes["n1"].tasks) == ["default/t0"]
    cache.delete_job("default/j")
    cache.add_job(JobInfo.from_podgroup(PodGroup("j", min_member=1), tasks=[fresh]))
    assert list(cache.nodes["n1"].tasks) == []
    cache.nodes["n1"].check_invariants()
    # A task naming its job by name, not uid, is refused; the cache is unchanged.
    stray = TaskInfo.create("default", "x0", "late", Resource.from_mapping({"cpu": 1}))
    with pytest.raises(SchedulingError, match="job is 'late', not this job's uid 'default/late'"):
        cache.add_job(JobInfo.from_podgroup(PodGroup("late", min_member=1), tasks=[stray]))
    assert "default/late" not in cache.jobs
    # A pending task cannot start.
    with pytest.raises(SchedulingError, match="only a placed task starts"):
        cache.task_started("default/j", "default/t9")


def test_run_says_what_the_loader_says_and_a_bind_diff_says_where_it_went() -> None:
    builder = (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=2).node("n2", cpu=2)
               .job("pg1", min_member=1, queue="nosuch").task("p1", job="pg1", cpu=1)
               .job("pg2", min_member=1).task("p2", job="pg2", cpu=1))
    with pytest.warns(UserWarning, match="queue 'nosuch' does not exist"):
        decisions = run(builder)
    placed = decisions.binds["default/p2"]
    other = "n2" if placed == "n1" else "n1"
    with pytest.raises(AssertionError, match=f"made elsewhere {{'default/p2': '{placed}'}}"):
        assert_decisions(decisions, binds={"default/p2": other})


def test_pipelined_expectations_take_the_decisions_own_shape_exactly() -> None:
    from batchsched.scenario.compare import compare_decisions

    got = {"pipelined": {"ns/j": {"ns/t0": "n1"}}}
    assert compare_decisions({"pipelined": {"ns/j": {"ns/t0": "n1"}}}, got) == []
    assert compare_decisions({"pipelined": {"ns/j": {"ns/t0": "n2"}}}, got) == [
        "pipelined: ns/j expected {'ns/t0': 'n2'}, got {'ns/t0': 'n1'}"]
    assert compare_decisions({"pipelined": {"ns/j": ["n1", "n2"]}}, got) == []


def test_a_replay_survives_a_bind_the_host_refused_and_a_gang_taken_back() -> None:
    """The host refuses a1's first binds: a0's bind is taken back (the gang below its
    minimum), and the replay neither starts a0 on no node nor stops; the job waits."""
    from batchsched.scenario import parse_scenario
    from batchsched.simulation import Simulator
    from batchsched.simulation.scenario_workload import workload_from

    builder = (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=4)
               .job("a", min_member=2, submit=0).task("a0", job="a", cpu=1, run_time=60)
               .task("a1", job="a", cpu=1, run_time=60)
               .job("b", min_member=1, submit=30).task("b0", job="b", cpu=1, run_time=5))
    scenario = parse_scenario(builder.document)
    sim = Simulator(workload_from(scenario), scenario.configuration)
    tries = {"a1": 0}

    def binder(task: object, node: str) -> bool:
        if getattr(task, "name", "") == "a1":
            tries["a1"] += 1
            return tries["a1"] > 1
        return True

    sim.cache.binder = binder
    timeline = sim.run()
    assert [u.task for u in sim.cache.unbinds] == ["default/a0"]
    # b's arrival at 30 brings a session, in which the gang starts whole.
    assert timeline.jobs["default/a"].start == 30.0


def test_assert_decisions_reads_x_keys_and_refuses_unknown_ones() -> None:
    decisions = run(ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=1)
                    .job("pg1", min_member=1).task("p1", job="pg1", cpu=1))
    assert_decisions(decisions, x_node_bind_counts={"n1": 1})
    with pytest.raises(AssertionError, match="nodeBindCounts: n1 expected 2"):
        assert_decisions(decisions, **{"x-nodeBindCounts": {"n1": 2}})
    with pytest.raises(TypeError, match="unknown key 'x-typo'"):
        assert_decisions(decisions, **{"x-typo": 1})


@pytest.mark.parametrize(("expect", "key"), [
    ({"pipelined": {"default/pg1": "n10"}}, "pipelined"),  # "n1" in "n10" would pass
    ({"bind_count": "1"}, "bindCount"),
    ({"bind_count": True}, "bindCount"),
    ({"evicted": "default/p1"}, "evicted"),
])
def test_assert_decisions_refuses_a_value_not_of_its_key_s_shape(
        expect: dict[str, object], key: str) -> None:
    decisions = run(ScenarioBuilder(actions="").node("n1", cpu=1).job("pg1", min_member=1)
                    .task("p1", job="pg1", cpu=1))
    with pytest.raises(TypeError, match=f"assert_decisions: {key} has the wrong shape"):
        assert_decisions(decisions, **expect)


def test_to_yaml_quotes_text_the_configuration_would_read_otherwise(tmp_path: object) -> None:
    """A scenario file's config is read as Volcano's yaml.v2 reads it: text such as "n"
    or "1.5e0" is written quoted, so the file decides as the built scenario does."""
    import yaml as pyyaml

    from batchsched.scenario import load_scenario

    built = (ScenarioBuilder(actions="enqueue, allocate")
             .node("n1", cpu=1).job("pg1", min_member=1).task("p1", job="pg1", cpu=1))
    built.document["config"]["tiers"] = [{"plugins": [{"name": "gang", "arguments": {
        "a": "n", "b": "1.5e0", "c": "plain"}}]}]
    text = built.to_yaml()
    assert "'n'" in text and "'1.5e0'" in text and "c: plain" in text
    assert pyyaml.safe_load(text) == built.document
    from pathlib import Path
    path = Path(str(tmp_path)) / "s.yaml"
    path.write_text(text)
    arguments = load_scenario(path).configuration.tiers[0].plugins[0].arguments
    assert dict(arguments) == {"a": "n", "b": "1.5e0", "c": "plain"}


def _preempting() -> ScenarioBuilder:
    """One session in which preempt evicts l0 and pipelines h0 on n1."""
    return (ScenarioBuilder(actions="enqueue, allocate, preempt")
            .priority_class("lo", 1).priority_class("hi", 100)
            .node("n1", cpu=1).node("n2", cpu=1)
            .job("low", min_member=1, priorityClassName="lo", phase="Running")
            .task("l0", job="low", cpu=1, node="n1", phase="Running", priorityClassName="lo")
            .task("l1", job="low", cpu=1, node="n2", phase="Running", priorityClassName="lo")
            .job("high", min_member=1, priorityClassName="hi")
            .task("h0", job="high", cpu=1, priorityClassName="hi"))


def test_nothing_pipelined_is_asserted_and_a_pipelined_task_is_named_where_a_bind_was_wanted(
) -> None:
    decisions = run(_preempting())
    assert_decisions(decisions, pipelined={"default/high": {"default/h0": "n1"}})
    with pytest.raises(AssertionError, match=r"pipelined: expected \{\}, got"):
        assert_decisions(decisions, pipelined={})
    with pytest.raises(AssertionError, match="default/h0 is pipelined on n1, not bound"):
        assert_decisions(decisions, binds={"default/h0": "n1"})
    with pytest.raises(AssertionError, match=r"run the scenario with scores=True"):
        assert_decisions(decisions, scores={"default/h0": {"n1": 0}})


def test_expectations_accumulate_for_the_file_and_run_leaves_them_to_assert_decisions() -> None:
    built = (ScenarioBuilder(actions="enqueue, allocate").node("n1", cpu=1)
             .job("j", min_member=1).task("t", job="j", cpu=1)
             .expect(binds={"default/t": "n1"}).expect(evicted=[]))
    assert built.document["expect"] == {"binds": {"default/t": "n1"}, "evicted": []}
    assert run(built).binds == {"default/t": "n1"}


def test_builder_misuse_is_named() -> None:
    with pytest.raises(TypeError, match="config must be the scenario's config mapping"):
        ScenarioBuilder(config="actions: allocate")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ScenarioBuilder.job: name must be a string "
                                         r"without '/', not 'a/b'"):
        ScenarioBuilder().job("a/b")
    with pytest.raises(ValueError, match=r"ScenarioBuilder\.node: name must be a string"):
        ScenarioBuilder().node(1)  # type: ignore[arg-type]
    tiers = [{"plugins": [{"name": "gang"}]}]
    built = ScenarioBuilder(config={"actions": "allocate", "tiers": tiers})
    built.document["config"]["tiers"][0]["plugins"].append({"name": "drf"})
    assert tiers == [{"plugins": [{"name": "gang"}]}]  # the caller's stays as it was


def test_to_yaml_names_a_value_yaml_cannot_write() -> None:
    from decimal import Decimal

    built = ScenarioBuilder().node("n1", cpu=Decimal("1.5"))
    with pytest.raises(TypeError, match=r"nodes\[0\].allocatable.cpu \(Decimal\('1.5'\)\)"):
        built.to_yaml()


@pytest.mark.parametrize("attempt", [1, 2])
def test_an_argument_a_plugin_does_not_read_is_said_on_every_run(attempt: int) -> None:
    """Logged once per process, the warning is still a warning of every run: what a
    test sees does not hang on which tests ran before it."""
    built = ScenarioBuilder(config={"actions": "allocate", "tiers": [{"plugins": [
        {"name": "binpack", "arguments": {"binpack.wieght": 5}}]}]}).node("n1", cpu=1)
    with pytest.warns(UserWarning, match="binpack.wieght"):
        run(built)


def _pytest_on(tmp_path: Any, source: str) -> Any:
    import subprocess
    import sys

    (tmp_path / "test_marked.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "test_marked.py")], capture_output=True, text=True,
                          cwd=tmp_path, check=False)


def test_a_misused_plugin_marker_is_a_usage_error_not_a_silent_pass(tmp_path: Any) -> None:
    misspelt = _pytest_on(tmp_path, (
        "import pytest\n\n"
        "@pytest.mark.batchsched_plugin('binpack', argumnets={'binpack.weight': 2})\n"
        "def test_x(batchsched_plugin_check):\n    batchsched_plugin_check()\n"))
    assert misspelt.returncode != 0
    said = misspelt.stdout + misspelt.stderr
    assert "takes the plugin name and arguments=, not argumnets" in said
    unchecked = _pytest_on(tmp_path, (
        "import pytest\n\n"
        "@pytest.mark.batchsched_plugin('nonexistent-plugin')\n"
        "def test_x():\n    pass\n"))
    assert unchecked.returncode != 0
    assert "must take the batchsched_plugin_check argument" in unchecked.stdout + unchecked.stderr
    # A module's mark marks its other tests too: they are left alone.
    module_wide = _pytest_on(tmp_path, (
        "import pytest\n\npytestmark = pytest.mark.batchsched_plugin('gang')\n\n"
        "def test_checks(batchsched_plugin_check):\n    batchsched_plugin_check()\n\n"
        "def test_plain():\n    pass\n"))
    assert module_wide.returncode == 0, module_wide.stdout



def test_run_says_what_plugins_warned_even_when_the_run_fails() -> None:
    """A warning is often why a run fails (a plugin distribution that did not load):
    it is said all the same."""
    from batchsched.errors import PluginError
    from batchsched.framework.arguments import Arguments, warn_unreadable
    from batchsched.framework.registry import Registry
    from batchsched.plugin import PluginSpec, hookimpl

    class Fragile:
        name = "fragile"

        def __init__(self, arguments: Arguments) -> None:
            warn_unreadable(self.name, "depth", "deep", "an integer", 1)

        def on_session_open(self, ssn: Any) -> None:
            raise RuntimeError("cannot open")

        def on_session_close(self, ssn: Any) -> None:
            pass

    class Provides:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("fragile", Fragile)]

    registry = Registry()
    registry.register(Provides(), name="fragile-provider")
    scenario = ScenarioBuilder(config={"actions": "allocate",
                                       "tiers": [{"plugins": [{"name": "fragile"}]}]})
    scenario.node("n1", cpu=1)
    with pytest.warns(UserWarning, match="argument 'depth' = 'deep'"), \
            pytest.raises(PluginError, match="cannot open"):
        run(scenario, registry=registry)


def test_the_builder_s_expect_takes_snake_case_and_refuses_unknown_keys() -> None:
    scenario = ScenarioBuilder(actions="allocate").node("n1", cpu=1)
    scenario.expect(bind_count=0, pod_group_phases={}, x_team_note="kept")
    assert scenario.document["expect"] == {"bindCount": 0, "podGroupPhases": {},
                                           "x-teamNote": "kept"}
    with pytest.raises(TypeError, match=r"ScenarioBuilder\.expect: unknown key 'bind_cuont'"):
        scenario.expect(bind_cuont=0)


def test_simulate_takes_its_plugins_from_the_registry_given() -> None:
    """A plugin registered in a Registry, not packaged: ``simulate(registry=...)``
    replays with it as ``run(registry=...)`` runs with it."""
    from batchsched.framework.registry import Registry
    from batchsched.plugin import PluginSpec, hookimpl
    from batchsched.testing import simulate

    class FewestTasks:
        name = "fewest-tasks"

        def __init__(self, arguments: Any) -> None:
            pass

        def on_session_open(self, ssn: Any) -> None:
            ssn.add_node_order_fn(self.name, lambda task, node: -len(node.tasks))

        def on_session_close(self, ssn: Any) -> None:
            pass

    class Distribution:
        @hookimpl
        def batchsched_register_plugins(self) -> list[PluginSpec]:
            return [PluginSpec("fewest-tasks", FewestTasks)]

    registry = Registry(autoload=False)
    registry.register(Distribution(), name="mine")
    config = {"actions": "enqueue, allocate",
              "tiers": [{"plugins": [{"name": "gang"}, {"name": "fewest-tasks"}]}]}
    builder = (ScenarioBuilder(config=config).node("n1", cpu=2)
               .job("a", min_member=1, submit=0).task("a0", job="a", cpu=1, run_time=10))
    assert simulate(builder, registry=registry).jobs["default/a"].start == 0.0


@pytest.mark.parametrize(("build", "message"), [
    (lambda b: b.node("n1", cpu=64, allocatable={"nvidia.com/gpu": 1}),
     "build_node: allocatable and cpu both given"),
    (lambda b: b.task("t", job="j", cpu=8, requests={"nvidia.com/gpu": 1}),
     "build_task: requests and cpu both given"),
    (lambda b: b.job("j", submit=0, createdAt=5), "build_job: createdAt and submit both given"),
    (lambda b: b.job("j", min_member=2, minMember=3),
     "build_job: minMember and min_member both given"),
])
def test_a_keyword_and_the_format_field_meaning_the_same_are_refused(
        build: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        build(ScenarioBuilder())


def test_a_field_given_in_the_format_alone_is_taken() -> None:
    builder = ScenarioBuilder().node("n1", allocatable={"cpu": 2, "pods": 5})
    assert builder.document["nodes"][0]["allocatable"] == {"cpu": 2, "pods": 5}


@pytest.mark.parametrize(("expect", "message"), [
    ({"task_status_counts": {"default/trian": {"Pending": 0}}},
     "no job 'default/trian' in these decisions \\(a job whose queue does not exist"),
    ({"task_status_counts": {"default/train": {"Pendng": 0}}}, "not a task status"),
    ({"task_status_counts": {"train": {"Pending": 0}}}, "a job id is namespace/name"),
    ({"pod_group_phases": {"default/train": "Runing"}}, "is not a pod group phase"),
])
def test_assert_decisions_refuses_a_job_or_status_that_does_not_exist(
        expect: dict[str, Any], message: str) -> None:
    decisions = run(ScenarioBuilder().node("n1", cpu=2, memory="4Gi")
                    .job("train", min_member=1).task("t0", job="train", cpu=1, memory="1Gi"))
    with pytest.raises(TypeError, match=message):
        assert_decisions(decisions, **expect)


@pytest.mark.parametrize("expect", [{"binds": "n1"}, {"bind_count": "2"}])
def test_builder_expect_refuses_what_no_scenario_file_could_hold(expect: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="has the wrong shape for a scenario file's expect"):
        ScenarioBuilder().expect(**expect)


def test_builder_expect_takes_pipelined_tasks_as_run_writes_them() -> None:
    # A scenario file takes job -> task -> node now (what --output json writes).
    ScenarioBuilder().expect(pipelined={"default/online": {"default/o0": "n1"}})


def test_simulate_says_a_plugin_s_warning_at_every_replay() -> None:
    from batchsched.testing import simulate

    config = {"actions": "enqueue, allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "binpack", "arguments": {"binpack.wieght": 2}}]}]}

    def replay() -> list[str]:
        with pytest.warns(UserWarning) as said:
            simulate(ScenarioBuilder(config=config).node("n1", cpu=2, memory="4Gi")
                     .job("a", min_member=1, submit=0)
                     .task("a0", job="a", cpu=1, memory="1Gi", run_time=10))
        return [str(warning.message) for warning in said]
    assert any("binpack.wieght" in text for text in replay())
    assert any("binpack.wieght" in text for text in replay())  # not said once per process


def test_assert_decisions_of_something_else_than_decisions_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match="decisions must be the Decisions run\\(\\) returns, "
                                        "not dict"):
        assert_decisions({"binds": {}}, binds={})  # type: ignore[arg-type]


def test_the_builder_takes_the_format_s_fields_in_snake_case_too() -> None:
    """Its own keywords are snake_case (min_member, run_time), as assert_decisions's:
    the format's other fields are taken either way (priority_class_name was an unknown
    key of the format)."""
    import pytest

    from batchsched.testing import Decisions, ScenarioBuilder, run

    builder = (ScenarioBuilder().priority_class("high", 100, preemption_policy="Never")
               .node("n1", cpu=2, memory="1Gi")
               .job("j0", min_member=1, priority_class_name="high")
               .task("t0", job="j0", cpu=1, node_selector={}))
    decisions: Decisions = run(builder)
    assert decisions.binds == {"default/t0": "n1"}
    assert builder.document["jobs"][0]["priorityClassName"] == "high"
    assert builder.document["priorityClasses"][0]["preemptionPolicy"] == "Never"
    with pytest.raises(TypeError, match="priorityClassName given twice "
                                        r"\(priority_class_name and priorityClassName\)"):
        ScenarioBuilder().job("j", priority_class_name="a", priorityClassName="b")
