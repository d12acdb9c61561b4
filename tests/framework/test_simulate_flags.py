"""The simulated add/remove-task points are enabled by enablePreemptable *or*
enabledAllocatable (Volcano's SimulateAddTaskFn / SimulateRemoveTaskFn), so a
queue plugin that only checks allocatable still follows a topology-aware dry run."""

from __future__ import annotations

import pytest

from batchsched.api.cluster import ClusterInfo
from batchsched.conf import configuration_from_text
from batchsched.framework.arguments import Arguments
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.plugin import PluginSpec, hookimpl


class _Simulating:
    name = "simulating"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_simulate_add_task_fn(self.name, lambda *_: None)
        ssn.add_simulate_remove_task_fn(self.name, lambda *_: None)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _Specs:
    @hookimpl
    def batchsched_register_plugins(self) -> list[PluginSpec]:
        return [PluginSpec("simulating", _Simulating)]


@pytest.mark.parametrize(("preemptable", "allocatable", "enabled"), [
    (True, True, True),
    (True, False, True),
    (False, True, True),
    (False, False, False),
])
def test_simulated_task_moves_follow_either_flag(
    preemptable: bool, allocatable: bool, enabled: bool
) -> None:
    registry = Registry(autoload=False)
    registry.register(_Specs(), name="simulating-specs")
    configuration = configuration_from_text(f"""
actions: ""
tiers:
  - plugins:
      - name: simulating
        enablePreemptable: {str(preemptable).lower()}
        enabledAllocatable: {str(allocatable).lower()}
""")
    ssn = Session.open(ClusterInfo(), configuration, registry=registry)
    assert ssn.has("simulate_add_task") is enabled
    assert ssn.has("simulate_remove_task") is enabled
