"""Every bundled example scenario runs, and those with an ``expect`` decide as it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchsched.scenario import check_scenario, load_scenario, run_scenario

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_the_example_runs_as_documented(path: Path) -> None:
    scenario = load_scenario(path)
    if scenario.expect:
        result = check_scenario(scenario)
        assert result.passed, "\n".join(result.differences)
    else:
        run_scenario(scenario)


def test_the_extending_guide_s_action_places_tasks_under_volcano_s_default_plugins() -> None:
    """The guide's LaunchAction, as printed, with the predicates plugin enabled (its
    per-task state needs the action's pre_predicate call)."""
    import re

    from batchsched import hookimpl
    from batchsched.framework.registry import Registry
    from batchsched.plugin import ActionSpec
    from batchsched.scenario import parse_scenario

    guide = (Path(__file__).parent.parent / "docs" / "extending.md").read_text()
    section = guide[guide.index("## An action"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(code[1], namespace)  # the guide's own code
    action = namespace["LaunchAction"]

    class Launch:
        @hookimpl
        def batchsched_register_actions(self) -> list[ActionSpec]:
            return [ActionSpec(name="launch", factory=action)]  # type: ignore[arg-type]

    registry = Registry(autoload=False)
    registry.register(Launch(), name="guide-launch")
    scenario = parse_scenario({
        "version": 1, "name": "guide",
        "config": {"actions": "enqueue, launch",
                   "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
                             {"plugins": [{"name": "drf"}, {"name": "predicates"},
                                          {"name": "proportion"}, {"name": "nodeorder"}]}]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}],
        "jobs": [{"name": "pg", "minMember": 2}],
        "tasks": [{"name": f"p{i}", "job": "pg", "requests": {"cpu": 1}} for i in range(2)],
    })
    result = run_scenario(scenario, registry=registry)
    assert result.binds == {"default/p0": "n1", "default/p1": "n1"}
