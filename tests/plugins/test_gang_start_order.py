"""Ordered start (seed 001 §4): a Spark-like job, a driver and executors with per-role
minimums, on room for two tasks. Volcano's task order (creation, then name) takes two
executors and starts nothing; ``batchsched.io/start-order`` starts the driver and one
executor."""

from __future__ import annotations

from typing import Any

import pytest

from batchsched.scenario import parse_scenario, run_scenario


def spark(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {"name": "spark", "minMember": 2,
                           "minTaskMember": {"driver": 1, "executor": 1}, "phase": "Inqueue"}
    if annotations:
        job["annotations"] = annotations
    return {
        "version": 1, "name": "spark on room for two",
        "config": {"actions": "enqueue, allocate", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "proportion"},
                         {"name": "nodeorder"}]}]},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 1, "memory": "4Gi", "pods": 10}}
                  for i in (1, 2)],
        "jobs": [job],
        "tasks": [*({"name": f"executor-{i}", "job": "spark", "role": "executor",
                     "requests": {"cpu": 1}} for i in range(3)),
                  {"name": "spark-driver", "job": "spark", "role": "driver",
                   "requests": {"cpu": 1}}],
    }


def bound(doc: dict[str, Any]) -> list[str]:
    return sorted(run_scenario(parse_scenario(doc, source="<test>")).binds)


def test_without_an_order_the_executors_take_the_room_and_nothing_starts() -> None:
    assert bound(spark()) == []


@pytest.mark.parametrize("order", ["minimums", "driver,executor"])
def test_the_start_order_starts_the_driver_and_one_executor(order: str) -> None:
    assert bound(spark({"batchsched.io/start-order": order})) == [
        "default/executor-0", "default/spark-driver"]


def test_roles_listed_first_start_first_even_past_their_minimum() -> None:
    doc = spark({"batchsched.io/start-order": "executor,driver"})
    doc["jobs"][0]["minTaskMember"] = {"driver": 0, "executor": 2}
    doc["jobs"][0]["minMember"] = 2
    assert bound(doc) == ["default/executor-0", "default/executor-1"]
