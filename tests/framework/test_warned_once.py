"""What a plugin warns about once per process is said by every run a test makes.

batchsched.testing.run collects the warnings of its session (collect_warnings); a
plugin that keeps its own once-per-process memory must not hide from the second run
what it said in the first.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchsched.framework.arguments import collect_warnings, warned_once
from batchsched.testing import ScenarioBuilder, run


def _task_topology() -> ScenarioBuilder:
    b = ScenarioBuilder(config={"actions": "enqueue, allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "task-topology"}, {"name": "predicates"}]}]})
    b.node("n1", cpu=4, memory="4Gi")
    b.job("j", min_member=1,
          annotations={"volcano.sh/task-topology-affinity": "ps,nosuchrole"})
    b.document["tasks"].append({"name": "t0", "namespace": "default", "job": "j",
                                "requests": {"cpu": 1}, "role": "ps"})
    return b


def _deviceshare() -> ScenarioBuilder:
    b = ScenarioBuilder(config={"actions": "enqueue, allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "predicates"},
        {"name": "deviceshare", "arguments": {"deviceshare.VGPUEnable": True}}]}]})
    b.node("n1", cpu=4, memory="4Gi")
    b.job("j", min_member=1)
    b.task("t0", job="j", cpu=1)
    b.document["configMaps"] = [{"namespace": "kube-system",
                                 "name": "volcano-vgpu-device-config",
                                 "data": {"other.yaml": "x"}}]
    return b


def _cdp() -> dict[str, Any]:
    # Volcano's "preempt low priority job in same queue" with cdp on and a victim
    # whose cooldown does not parse: preempt still evicts it, and says why it ignored
    # the cooldown.
    document: dict[str, Any] = yaml.safe_load(_PREEMPT_CASE.read_text())
    document.pop("expect")
    document["config"]["tiers"][0]["plugins"].append({"name": "cdp"})
    document["tasks"][0]["labels"]["volcano.sh/cooldown-time"] = "bogus"
    return document


_PREEMPT_CASE = (Path(__file__).parents[1] / "conformance" / "volcano" / "actions"
                 / "preempt-04-preempt-low-priority-job-in-same-queue.yaml")


@pytest.mark.parametrize(("build", "said"), [
    (_task_topology, "task 'nosuchrole' does not exist in job default/j"),
    (_deviceshare, "has no device-config.yaml"),
    (_cdp, "invalid time duration volcano.sh/cooldown-time=bogus"),
])
def test_every_run_says_what_a_plugin_warns_about_once(build: Any, said: str) -> None:
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run(build())
        assert any(said in str(w.message) for w in caught)


def test_a_set_made_inside_a_block_is_empty_after_it(
        caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("batchsched")
    with collect_warnings() as collected:
        said = warned_once()  # as a plugin module first imported inside the block
        said.add("problem")
        log.warning("problem")
    assert collected == ["problem"] and said == set()  # collected, never logged yet
