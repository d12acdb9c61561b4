"""capacity's hierarchy where Volcano's code decides something unusual: parents in a
cycle hang off no root (nothing else is refused, unless a job sits in the cycle), and
quota names ``NewResource`` does not count are not quotas."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from batchsched.scenario import parse_scenario, run_scenario

CONFIG = """
version: 1
name: capacity edges
config:
  actions: "enqueue, allocate"
  tiers:
  - plugins:
    - name: gang
    - name: capacity
      enableHierarchy: true
    - name: predicates
nodes:
- {name: n1, allocatable: {cpu: 16, memory: 32Gi, pods: 100}}
"""


def binds(text: str) -> dict[str, str]:
    doc: dict[str, Any] = yaml.safe_load(CONFIG + text)
    return run_scenario(parse_scenario(doc, source="<test>")).binds


def test_queues_whose_parents_form_a_cycle_do_not_stop_the_others() -> None:
    assert binds("""
queues:
- {name: root}
- {name: q1}
- {name: a, parent: b}
- {name: b, parent: a}
- {name: c, parent: a}
jobs:
- {name: j1, queue: q1, minMember: 1, minResources: {cpu: 1}}
- {name: j2, queue: c, minMember: 1, minResources: {cpu: 1}}
tasks:
- {name: t1, job: j1, requests: {cpu: 1}}
- {name: t2, job: j2, requests: {cpu: 1}}
""") == {"default/t1": "n1"}  # c hangs under the cycle: no root, no capability


def test_a_job_in_a_queue_of_a_cycle_is_in_a_queue_with_children(
        caplog: pytest.LogCaptureFixture) -> None:
    # Volcano records each queue of the cycle as the next one's child: the job's queue
    # is no leaf, and the whole tree is refused (q1's job too).
    assert binds("""
queues:
- {name: root}
- {name: q1}
- {name: a, parent: b}
- {name: b, parent: a}
jobs:
- {name: j1, queue: q1, minMember: 1, minResources: {cpu: 1}}
- {name: ja, queue: a, minMember: 1, minResources: {cpu: 1}}
tasks:
- {name: t1, job: j1, requests: {cpu: 1}}
- {name: ta, job: ja, requests: {cpu: 1}}
""") == {}
    assert "queue 'a' of job default/ja is not a leaf queue (its parents form a cycle)" \
        in caplog.text


def test_a_queue_that_is_its_own_parent_hangs_off_no_root() -> None:
    assert binds("""
queues:
- {name: root}
- {name: q1}
- {name: a, parent: a}
jobs:
- {name: j1, queue: q1, minMember: 1, minResources: {cpu: 1}}
tasks:
- {name: t1, job: j1, requests: {cpu: 1}}
""") == {"default/t1": "n1"}


def test_a_capability_naming_only_uncounted_resources_bounds_nothing() -> None:
    """Volcano's NewResource drops count/pods: the root's capability is empty, so
    unbounded."""
    assert binds("""
queues:
- {name: root, capability: {count/pods: 3}}
- {name: dev}
jobs:
- {name: j1, queue: dev, minMember: 1}
tasks:
- {name: t1, job: j1, requests: {cpu: 1, memory: 1Gi}}
""") == {"default/t1": "n1"}


def test_a_tree_that_does_not_add_up_is_logged_and_scheduled(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # Volcano's checkHierarchicalQueue logs these three and goes on; they were silent.
    from batchsched.plugins.capacity import hierarchy

    monkeypatch.setattr(hierarchy, "_SAID", set())
    assert binds("""
queues:
- {name: root}
- {name: p, capability: {cpu: 2}, deserved: {cpu: 1}, guarantee: {cpu: 1}}
- {name: c, parent: p, capability: {cpu: 8}, deserved: {cpu: 6}, guarantee: {cpu: 3}}
jobs:
- {name: j, queue: c, minMember: 1, minResources: {cpu: 1}}
tasks:
- {name: t, job: j, requests: {cpu: 1}}
""") == {"default/t": "n1"}
    assert ("capacity: child queue c capability (cpu 8) exceeds parent queue p capability "
            "(cpu 2) on cpu") in caplog.text
    assert "sum of child queue deserved (cpu 6) exceeds parent queue p deserved (cpu 1)" \
        in caplog.text
    assert "sum of child queue guarantees (cpu 3) exceeds parent queue p guarantee (cpu 1)" \
        in caplog.text
    caplog.clear()
    binds("""
queues:
- {name: root}
- {name: p, capability: {cpu: 2}, deserved: {cpu: 1}, guarantee: {cpu: 1}}
- {name: c, parent: p, capability: {cpu: 8}, deserved: {cpu: 6}, guarantee: {cpu: 3}}
""")
    assert "exceeds" not in caplog.text  # once per process: a replay opens many sessions


def test_every_run_of_the_testing_helpers_reports_the_tree_messages() -> None:
    """``batchsched.testing.run`` says what each run logs whatever ran before it: the
    hierarchy messages too (they were said once per process, then never again)."""
    import warnings

    from batchsched.testing import run

    doc: dict[str, Any] = yaml.safe_load(CONFIG + """
queues:
- {name: root}
- {name: p, capability: {cpu: 2}}
- {name: c, parent: p, capability: {cpu: 3}}
jobs:
- {name: j, queue: c, minMember: 1, minResources: {cpu: 1}}
tasks:
- {name: t, job: j, requests: {cpu: 1}}
""")
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run(doc)
        assert any("child queue c capability (cpu 3) exceeds parent queue p" in str(w.message)
                   for w in caught), [str(w.message) for w in caught]
