"""Helpers for testing with batchsched: build a scenario in Python, run it, assert.

Import what you use (pytest loads only the fixtures of
:mod:`batchsched.testing.pytest_plugin`, which add nothing to a test that does not ask
for them)::

    from batchsched.testing import ScenarioBuilder, assert_decisions, run

    scenario = (
        ScenarioBuilder(actions="enqueue, allocate")
        .queue("q1")
        .node("n1", cpu=4, memory="8Gi")
        .job("pg1", namespace="c1", queue="q1", min_member=2)
        .task("p1", job="pg1", namespace="c1", cpu=1, memory="1Gi")
        .task("p2", job="pg1", namespace="c1", cpu=1, memory="1Gi")
    )
    decisions = run(scenario)
    assert decisions.binds == {"c1/p1": "n1", "c1/p2": "n1"}
    assert_decisions(decisions, evicted=[])

The builders write scenario documents (the public scenario format), so a
scenario built here behaves exactly as the same scenario in a file; ``to_yaml``
gives that file. The builder names follow Volcano's test helpers (BuildNode,
BuildPod, BuildPodGroup, BuildQueue).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from batchsched.api.job import REQUESTED_RUNTIME_ANNOTATION
from batchsched.conf import DEFAULT_CONFIGURATION_YAML
from batchsched.framework.arguments import collect_warnings
from batchsched.framework.registry import Registry
from batchsched.scenario import Decisions, compare_decisions, parse_scenario, run_scenario
from batchsched.simulation.scenario_workload import RESTART_ANNOTATION, RUN_TIME_ANNOTATION

if TYPE_CHECKING:
    from batchsched.simulation.timeline import Timeline

__all__ = [
    "Decisions",
    "ScenarioBuilder",
    "assert_decisions",
    "build_job",
    "build_node",
    "build_queue",
    "build_task",
    "run",
    "simulate",
]


def _resources(cpu: object = None, memory: object = None, pods: object = None,
               extra: Mapping[str, object] | None = None) -> dict[str, object]:
    out: dict[str, object] = {}
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    if pods is not None:
        out["pods"] = pods
    out.update(extra or {})
    return out


def build_node(name: str, *, cpu: object = None, memory: object = None, pods: object = 110,
               scalars: Mapping[str, object] | None = None, **fields: Any) -> dict[str, Any]:
    """A node entry (Volcano's ``BuildNode``); ``pods`` defaults to 110 like a kubelet.
    An ``allocatable`` given whole is taken as it is, and with ``cpu``, ``memory`` or
    ``scalars`` too is a TypeError (one would drop the other)."""
    fields = _camel_case("build_node", fields)
    if "allocatable" in fields:
        _refuse_both("build_node", "allocatable", cpu=cpu, memory=memory, scalars=scalars)
        return {"name": name, **fields}
    return {"name": name, "allocatable": _resources(cpu, memory, pods, scalars), **fields}


def _camel_case(owner: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The format's fields given as keywords, snake_case taken too (``priority_class_name``
    is ``priorityClassName``), as :func:`assert_decisions` takes it; a field given both
    ways is a TypeError."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in fields.items():
        head, *rest = key.split("_")
        camel = head + "".join(part[:1].upper() + part[1:] for part in rest)
        if camel in out:
            raise TypeError(f"{owner}: {camel} given twice ({given[camel]} and {key}): "
                            "give one")
        out[camel], given[camel] = value, key
    return out


def _refuse_both(owner: str, field: str, **keywords: object) -> None:
    """A TypeError when the format's ``field`` and a keyword meaning the same are given."""
    given = [name for name, value in keywords.items() if value is not None]
    if given:
        raise TypeError(f"{owner}: {field} and {', '.join(given)} both given (one would "
                        f"replace the other): give one")


def _annotate(entry: dict[str, Any], **values: object) -> None:
    annotations = dict(entry.get("annotations") or {})
    for key, value in values.items():
        if value is not None:
            annotations[key] = str(value)
    if annotations:
        entry["annotations"] = annotations


def build_task(name: str, *, job: str, namespace: str = "default", cpu: object = None,
               memory: object = None, scalars: Mapping[str, object] | None = None,
               run_time: object = None, **fields: Any) -> dict[str, Any]:
    """A task (pod) entry (Volcano's ``BuildPod``); other fields in the format's camelCase.

    ``run_time`` (seconds or a Go duration) is how long the task runs in a simulation
    (the ``batchsched.io/run-time`` annotation).
    """
    fields = _camel_case("build_task", fields)
    if "requests" in fields:
        _refuse_both("build_task", "requests", cpu=cpu, memory=memory, scalars=scalars)
    entry: dict[str, Any] = {"name": name, "namespace": namespace, "job": job}
    requests = _resources(cpu, memory, None, scalars)
    if requests:
        entry["requests"] = requests
    entry.update(fields)
    _annotate(entry, **{RUN_TIME_ANNOTATION: run_time})
    return entry


def build_job(name: str, *, namespace: str = "default", queue: str = "default",
              min_member: int = 0, submit: object = None, requested_runtime: object = None,
              restart: str | None = None, **fields: Any) -> dict[str, Any]:
    """A job (pod group) entry (Volcano's ``BuildPodGroup``).

    For a simulation: ``submit`` is when the job arrives (its ``createdAt``: seconds,
    a timestamp, or a time relative to the scenario's ``now`` such as ``"-10s"``; give
    the builder a ``now`` for a relative one, else it counts from the real time and
    the replay is not repeatable),
    ``requested_runtime`` its time limit and ``restart`` (``gang`` or ``task``) what an
    eviction restarts (the ``batchsched.io/...`` annotations).
    """
    fields = _camel_case("build_job", fields)
    if "createdAt" in fields:
        _refuse_both("build_job", "createdAt", submit=submit)
    if "minMember" in fields:
        _refuse_both("build_job", "minMember", min_member=min_member or None)
    entry: dict[str, Any] = {"name": name, "namespace": namespace, "queue": queue,
                             "minMember": min_member, **fields}
    if submit is not None:
        entry["createdAt"] = submit
    _annotate(entry, **{REQUESTED_RUNTIME_ANNOTATION: requested_runtime,
                        RESTART_ANNOTATION: restart})
    return entry


def build_queue(name: str, *, weight: int = 1, **fields: Any) -> dict[str, Any]:
    """A queue entry (Volcano's ``BuildQueue``)."""
    return {"name": name, "weight": weight, **_camel_case("build_queue", fields)}


_SINGULAR = {"queues": "queue", "nodes": "node", "jobs": "job", "tasks": "task",
             "priorityClasses": "priority_class"}


class ScenarioBuilder:
    """Accumulates a scenario document; every method returns the builder."""

    def __init__(self, *, actions: str | None = None, config: Mapping[str, Any] | None = None,
                 name: str = "built scenario", now: object = None) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"ScenarioBuilder: config must be the scenario's config mapping "
                            f"(actions, tiers, configurations), not {type(config).__name__}; "
                            "a configuration file's text reads with yaml.safe_load")
        # A copy of its own: the caller's tiers are not changed by the builder's.
        base = copy.deepcopy(dict(config)) if config is not None else \
            yaml.safe_load(DEFAULT_CONFIGURATION_YAML)
        if actions is not None:
            base["actions"] = actions
        self.document: dict[str, Any] = {"version": 1, "name": name, "config": base,
                                         "queues": [], "nodes": [], "jobs": [], "tasks": []}
        if now is not None:
            self.document["now"] = now

    def _append(self, section: str, entry: dict[str, Any]) -> ScenarioBuilder:
        for field in ("name", "namespace"):
            value = entry.get(field)
            if field in entry and not (isinstance(value, str) and "/" not in value):
                # A "/" would make "a/b" in default and "b" in default/a one object.
                raise ValueError(f"ScenarioBuilder.{_SINGULAR[section]}: {field} must be a "
                                 f"string without '/', not {value!r}")
        self.document.setdefault(section, []).append(entry)
        return self

    def queue(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("queues", build_queue(name, **kw))

    def node(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("nodes", build_node(name, **kw))

    def job(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("jobs", build_job(name, **kw))

    def task(self, name: str, **kw: Any) -> ScenarioBuilder:
        return self._append("tasks", build_task(name, **kw))

    def priority_class(self, name: str, value: int, **kw: Any) -> ScenarioBuilder:
        return self._append("priorityClasses", {"name": name, "value": value,
                                                **_camel_case("priority_class", kw)})

    def expect(self, **expect: Any) -> ScenarioBuilder:
        """Add the scenario format's ``expect`` keys (camelCase) to the document, for the
        file :meth:`to_yaml` writes (``batchsched check`` checks them). :func:`run` does
        not check them: assert with :func:`assert_decisions`. A key given again
        replaces its earlier value; the other keys stay. snake_case is taken too, as
        :func:`assert_decisions` takes it; a key ``expect`` does not know is a TypeError."""
        from batchsched.scenario.loader import misshapen_expectation

        given = {_expect_key(key, "ScenarioBuilder.expect", extensions=True): value
                 for key, value in expect.items()}
        wrong = misshapen_expectation(given)
        if wrong is not None:
            # The file's shapes (pipelined: job -> nodes), or no file runs.
            raise TypeError(f"ScenarioBuilder.expect: {wrong} has the wrong shape for a "
                            f"scenario file's expect: {given[wrong]!r}")
        self.document.setdefault("expect", {}).update(given)
        return self

    def to_yaml(self) -> str:
        """The scenario as a file ``batchsched run`` reads to the same decisions. A value
        YAML cannot write (a numpy number, a Decimal) is a TypeError naming its place."""
        try:
            return yaml.dump(self.document, Dumper=_ScenarioDumper, sort_keys=False)
        except yaml.representer.RepresenterError:
            where = _unwritable(self.document, "")
            raise TypeError(f"ScenarioBuilder.to_yaml: {where or 'a value'} cannot be "
                            "written to YAML (give a str, int, float or bool)") from None


class _ScenarioDumper(yaml.SafeDumper):
    """Quotes the text a scenario file's configuration would read as something else:
    its ``config`` is read as Volcano's yaml.v2 reads it (``n`` is false, ``1.5e0`` a
    number), where PyYAML writes such text plain."""


def _unwritable(value: Any, path: str) -> str | None:
    """The place (``nodes[0].allocatable.cpu``) of the first value YAML cannot write."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _unwritable(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _unwritable(item, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    try:
        yaml.dump(value, Dumper=_ScenarioDumper)
    except yaml.representer.RepresenterError:
        return f"{path} ({value!r})"
    return None


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    from batchsched.kube.go_yaml import resolve

    if text and resolve(text)[0] != "tag:yaml.org,2002:str":
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="'")
    return dumper.represent_str(text)


_ScenarioDumper.add_representer(str, _represent_text)


def run(scenario: ScenarioBuilder | Mapping[str, Any], *, scores: bool | None = None,
        registry: Registry | None = None) -> Decisions:
    """Run one session on a built scenario (or a scenario document) and return its decisions."""
    document = scenario.document if isinstance(scenario, ScenarioBuilder) else scenario
    built = parse_scenario(document, source="<built scenario>")
    for warning in built.warnings:  # what the loader says, as batchsched run prints it
        warnings.warn(warning, stacklevel=2)
    # What plugins say they will not honour (an argument they do not read) is logged
    # once per process; every run says it here, as every batchsched run prints it,
    # so that what a test sees does not hang on the tests that ran before it.
    said: list[str] = []
    try:
        with collect_warnings() as said:
            decisions = run_scenario(built, scores=scores, registry=registry)
    finally:
        # Said even when the run fails: a warning (a plugin distribution that did not
        # load, say) is often why.
        for warning in said:
            warnings.warn(warning, stacklevel=2)
    return decisions


def simulate(scenario: ScenarioBuilder | Mapping[str, Any], *,
             registry: Registry | None = None, **options: Any) -> Timeline:
    """Replay a built workload over time (jobs arrive at ``submit``, tasks run
    ``run_time``) and return its timeline; ``options`` are the
    :class:`~batchsched.simulation.Simulator`'s (``until``, ``schedule_period``,
    ``observe``)::

        timeline = simulate(
            ScenarioBuilder(actions="enqueue, allocate")
            .node("n1", cpu=2)
            .job("a", min_member=2, submit=0).task("a0", job="a", cpu=1, run_time=60)
            .task("a1", job="a", cpu=1, run_time=60)
            .job("b", min_member=1, submit=10).task("b0", job="b", cpu=1, run_time=5)
        )
        assert timeline.jobs["default/b"].start == 60.0
    """
    from batchsched.scenario.loader import missing_queue_warning
    from batchsched.simulation import Simulator
    from batchsched.simulation.scenario_workload import workload_from

    document = scenario.document if isinstance(scenario, ScenarioBuilder) else scenario
    built = parse_scenario(document, source="<built scenario>")
    # As ``batchsched simulate`` replays it: a job that could never start on the cluster
    # (larger than it, of a queue it does not have) is left out, with a warning naming
    # it (the command says it on stderr); the loader's warning of the latter would say
    # it twice.
    workload = workload_from(built).without_oversized(built.configuration, registry=registry)
    missing_queue = {missing_queue_warning(built.source, job.uid, job.queue)
                     for job in built.jobs}
    for warning in built.warnings:
        if warning not in missing_queue:
            warnings.warn(warning, stacklevel=2)
    for skipped in workload.skipped:
        if skipped.oversized:
            warnings.warn(f"{skipped.job} skipped: {skipped.reason}", stacklevel=2)
    # As run(): what plugins say they will not honour is said at every replay.
    said: list[str] = []
    try:
        with collect_warnings() as said:
            timeline = Simulator(workload, built.configuration, registry=registry,
                                 **options).run()
    finally:
        for warning in said:
            warnings.warn(warning, stacklevel=2)
    return timeline


def _expect_key(key: str, owner: str, *, extensions: bool = False) -> str:
    """An ``expect`` key given in snake_case or camelCase, as the scenario format spells
    it; a TypeError naming ``owner`` for a key it does not know (a typo must not pass
    unchecked), but, with ``extensions``, an ``x-`` key (a file's ``expect`` takes any)."""
    from batchsched.scenario.loader import EXPECT_KEYS

    known = EXPECT_KEYS | {"x-nodeBindCounts"}
    extension = key.startswith(("x_", "x-"))
    head, *rest = (key[2:] if extension else key).split("_")
    name = ("x-" if extension else "") + head + "".join(part.title() for part in rest)
    if name not in known and not (extensions and extension):
        raise TypeError(f"{owner}: unknown key {key!r} (known: "
                        f"{', '.join(sorted(known))}, in snake_case or camelCase)")
    return name


def assert_decisions(decisions: Decisions, **expect: Any) -> None:
    """Assert decisions with the scenario format's ``expect`` keys, in snake_case or camelCase
    (``binds``, ``evicted``, ``bind_count``, ``pod_group_phases``, ``bind_failures``, ...),
    checked as ``expect`` checks them; one line per difference. ``pipelined`` given in the
    decisions' own shape (job -> task -> node), or as ``{}``, is the whole of it: no
    other job has a pipelined task (``expect``'s shape, job -> nodes, checks the jobs
    it names, and in a scenario file's ``expect`` even ``{}`` names none). ``scores``
    are there only from ``run(..., scores=True)``. A key
    ``expect`` does not know, or a value not of its shape (a node name where a list of
    them is wanted, text where a count is), is a TypeError naming it (a typo must not
    pass unchecked)."""
    from batchsched.scenario.loader import misshapen_expectation, unknown_in_expectation

    if not isinstance(decisions, Decisions):
        raise TypeError(f"assert_decisions: decisions must be the Decisions run() returns, "
                        f"not {type(decisions).__name__} (a run's JSON compares with "
                        "batchsched.scenario.compare_decisions)")
    wanted = {_expect_key(key, "assert_decisions"): value for key, value in expect.items()}
    # The decisions' own shape of pipelined tasks (job -> task -> node) is taken too.
    wrong = misshapen_expectation({key: value for key, value in wanted.items()
                                   if not (key == "pipelined" and _task_nodes(value))})
    if wrong is not None:
        # As the scenario format's expect: "n1" is no list of nodes, "1" no count.
        raise TypeError(f"assert_decisions: {wrong} has the wrong shape: {wanted[wrong]!r}")
    got = decisions.to_json()
    unknown = unknown_in_expectation(wanted, set(got.get("podGroupPhases") or {}))
    if unknown is not None:
        # The decisions know the session's jobs only: a job of a queue that does not
        # exist was left out of it, though the scenario has it.
        aside = (" in these decisions (a job whose queue does not exist is left out of "
                 "the session)") if unknown[1].startswith("no job") else ""
        raise TypeError(f"assert_decisions: {unknown[0]}: {unknown[1]}{aside}")
    whole = wanted.get("pipelined")
    if whole is not None and (whole == {} or _task_nodes(whole)):
        del wanted["pipelined"]
    diffs = compare_decisions(wanted, got)
    if whole is not None and "pipelined" not in wanted:
        have = {job: dict(tasks) for job, tasks in (got.get("pipelined") or {}).items()}
        expected = {job: dict(tasks) for job, tasks in whole.items()}
        if have != expected:
            diffs.append(f"pipelined: expected {expected}, got {have}")
    pipelined_on = {task: node for tasks in (got.get("pipelined") or {}).values()
                    for task, node in tasks.items()}
    # A task expected bound that the session pipelined instead: say so.
    diffs.extend(f"binds: {task} is pipelined on {pipelined_on[task]}, not bound"
                 for task in (wanted.get("binds") or {})
                 if task in pipelined_on and task not in got.get("binds", {}))
    if "scores" in wanted and got.get("scores") is None:
        diffs.append("scores: the decisions have none (run the scenario with scores=True)")
    if diffs:
        raise AssertionError("decisions differ:\n  " + "\n  ".join(diffs))


def _task_nodes(value: Any) -> bool:
    """Whether ``value`` is the decisions' ``pipelined``: job -> task -> node."""
    return isinstance(value, Mapping) and all(
        isinstance(job, str) and isinstance(tasks, Mapping) and tasks and all(
            isinstance(task, str) and isinstance(node, str) for task, node in tasks.items())
        for job, tasks in value.items())
