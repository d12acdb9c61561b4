"""Scenario files: load, run for one session, compare with ``expect``.

>>> # from batchsched.scenario import load_scenario, run_scenario, check_scenario
>>> # decisions = run_scenario(load_scenario("examples/two-jobs.yaml"))
>>> # decisions.binds
"""

from __future__ import annotations

from pathlib import Path

import attrs

from batchsched.framework.registry import Registry
from batchsched.scenario.compare import compare_decisions
from batchsched.scenario.loader import Scenario, load_scenario, parse_scenario
from batchsched.scenario.runner import Decisions, run_scenario, session_scores

__all__ = [
    "CheckResult",
    "Decisions",
    "Scenario",
    "check_scenario",
    "compare_decisions",
    "load_scenario",
    "parse_scenario",
    "run_scenario",
    "scenario_files",
    "session_scores",
]


@attrs.frozen
class CheckResult:
    scenario: Scenario
    decisions: Decisions
    differences: list[str]

    @property
    def passed(self) -> bool:
        return not self.differences


def check_scenario(scenario: Scenario, *, registry: Registry | None = None) -> CheckResult:
    """Run a scenario and compare its decisions with its ``expect``."""
    decisions = run_scenario(scenario, registry=registry, consume=True)
    task_jobs = {t.uid: t.job for t in scenario.tasks}
    diffs = compare_decisions(scenario.expect, decisions.to_json(), task_jobs)
    return CheckResult(scenario, decisions, diffs)


def scenario_files(*paths: str | Path) -> list[Path]:
    """Scenario files named, and those under named folders (.yaml, .yml, .json), sorted."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*")
                              if p.suffix in (".yaml", ".yml", ".json") and p.is_file()))
        else:
            out.append(path)
    return out
