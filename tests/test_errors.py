"""The errors a user catches keep their message and data across processes (a sweep's
replays run in worker processes and on dask workers, which pickle what they raise)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from batchsched.errors import (
    BatchSchedError,
    CacheError,
    ConfigError,
    PluginError,
    QuantityError,
    ScenarioError,
    SchedulingError,
    WorkloadError,
)
from batchsched.simulation.sweep import Replay, sweep

ERRORS = [
    QuantityError("1Qi", "unknown suffix"),
    ConfigError("no such plugin", source="s.yaml", key="tiers[0].plugins[1]", known=("gang",)),
    PluginError("raised", plugin="p", point="on_session_open"),
    ScenarioError('"1Qi" is not a quantity', source="s.yaml", path="tasks[3].requests.memory"),
    SchedulingError("no such node"),
    WorkloadError("field 4 is not a number", source="t.swf", line=12),
    CacheError("bind failed", operation="bind", obj="ns/p"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_survives_pickling_whole(error: BatchSchedError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert vars(copy) == vars(error)


def test_a_sweep_in_worker_processes_raises_what_one_process_raises(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxNodes: 4\n; MaxProcs: 4\n"
                     "1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "2 x -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    specs = [Replay(str(trace), None), Replay(str(trace), None, first_job=1)]
    errors = []
    for workers in (1, 2):
        with pytest.raises(WorkloadError) as caught:
            sweep(specs, workers=workers)
        errors.append(caught.value)
    assert str(errors[0]) == str(errors[1])
    assert (errors[1].source, errors[1].line) == (str(trace), 4)  # the file as given


def test_obvious_api_misuse_is_named() -> None:
    """What a first-time user types, told what to type instead."""
    import batchsched
    from batchsched import (
        ConfigError,
        MemoryCache,
        NodeInfo,
        Resource,
        Scheduler,
        SchedulingError,
        Session,
        TaskInfo,
        run_actions,
    )

    with pytest.raises(TypeError, match=r"allocatable must be a Resource \(Resource\.from_"):
        NodeInfo.create("n1", {"cpu": 4})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="requests must be a Resource"):
        TaskInfo.create("ns", "t", "ns/j", {"cpu": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="parse_configuration"):
        Scheduler(MemoryCache(), {"actions": "allocate"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="configuration_from_text"):
        Scheduler(MemoryCache(), 'actions: "allocate"\ntiers: []\n')
    cache = MemoryCache()
    cache.add_node(NodeInfo.create("n1", Resource.from_mapping({"cpu": 1, "pods": 10})))
    ssn = Session.open(cache)
    ssn.close()
    with pytest.raises(SchedulingError, match="is closed"):
        run_actions(ssn)
    assert {"CacheError", "WorkloadError", "DryRunError"} <= set(batchsched.__all__)
