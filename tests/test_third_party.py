"""A separate distribution (examples/plugins/batchsched-launch) is discovered through its
entry point, and its action and plugin run in a session, without touching batchsched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
LAUNCH = ROOT / "examples" / "plugins" / "batchsched-launch"
SCENARIO = """
version: 1
name: launch spreads tasks
config:
  actions: launch
  tiers: [{plugins: [{name: predicates}, {name: fewest-tasks}]}]
nodes:
- {name: n1, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
- {name: n2, allocatable: {cpu: 4, memory: 8Gi, pods: 10}}
jobs: [{name: pg1, namespace: c1, minMember: 2}]
tasks:
- {name: p1, namespace: c1, job: pg1, requests: {cpu: 1, memory: 1Gi}}
- {name: p2, namespace: c1, job: pg1, requests: {cpu: 1, memory: 1Gi}}
"""


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                   check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def installed() -> Iterator[None]:
    pip("install", "--no-deps", "--no-build-isolation", str(LAUNCH))
    try:
        yield
    finally:
        pip("uninstall", "-y", "batchsched-launch")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD"}
    return subprocess.run([sys.executable, "-m", "batchsched", *args], capture_output=True,
                          text=True, env=env, check=False)


@pytest.mark.slow
def test_entry_point_is_discovered_and_its_action_runs(installed: None, tmp_path: Path) -> None:
    listing = cli("plugins")
    assert listing.returncode == 0, listing.stderr
    assert "launch" in listing.stdout and "batchsched-launch 0.1.0" in listing.stdout
    assert "fewest-tasks" in listing.stdout
    path = tmp_path / "launch.yaml"
    path.write_text(SCENARIO)
    result = cli("run", str(path), "--output", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["binds"] == {"c1/p1": "n1", "c1/p2": "n2"}


@pytest.mark.slow
def test_autoload_can_be_turned_off(installed: None) -> None:
    env = {**os.environ, "BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD": "1"}
    listing = subprocess.run([sys.executable, "-m", "batchsched", "plugins"], capture_output=True,
                             text=True, env=env, check=True)
    assert "launch" not in listing.stdout.split("extension points")[0]
