"""Helpers for the node-plugin tests (predicates, nodeorder, binpack, nodegroup, tdm,
resource-strategy-fit): open a session on a scenario document written in YAML, with
one tier of plugins, and read predicates and scores the way actions do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import yaml

from batchsched.api import FitError, NodeInfo, TaskInfo
from batchsched.framework.registry import Registry
from batchsched.framework.session import Session
from batchsched.scenario import parse_scenario
from batchsched.scenario.runner import session_scores

ALL_FLAGS = ("enablePredicate", "enableNodeOrder", "enablePreemptable", "enabledVictim",
             "enableJobOrder", "enableJobPipelined", "enableJobStarving")


@lru_cache(maxsize=1)
def registry() -> Registry:
    """The built-ins only (no third-party entry points)."""
    return Registry(autoload=False)


def plugin(name: str, arguments: Mapping[str, Any] | None = None, **flags: bool) -> dict[str, Any]:
    """A plugin entry; every flag not given is on (the configuration-file default)."""
    entry: dict[str, Any] = {"name": name, **flags}
    if arguments:
        entry["arguments"] = dict(arguments)
    return entry


def document(body: str, *plugins: Mapping[str, Any], actions: str = "") -> dict[str, Any]:
    """A scenario document from YAML (nodes, jobs, tasks, ...) with one tier of plugins."""
    doc: dict[str, Any] = yaml.safe_load(body) or {}
    doc.setdefault("version", 1)
    doc.setdefault("name", "node plugin test")
    doc["config"] = {"actions": actions, "tiers": [{"plugins": [dict(p) for p in plugins]}]}
    return doc


def open_session(doc: Mapping[str, Any]) -> Session:
    parsed = parse_scenario(doc, source="<test>")
    return Session.open(parsed.build_cache(), parsed.configuration, registry=registry())


def task(ssn: Session, uid: str) -> TaskInfo:
    for job in ssn.jobs.values():
        if uid in job.tasks:
            return job.tasks[uid]
    raise KeyError(uid)


def predicates(ssn: Session, uid: str) -> dict[str, FitError | None]:
    """The session predicate of one task on every node, after its pre-predicate."""
    t = task(ssn, uid)
    ssn.pre_predicate(t)
    return {node.name: ssn.predicate(t, node) for node in ssn.node_list}


def passing(ssn: Session, uid: str) -> list[str]:
    return [name for name, err in predicates(ssn, uid).items() if err is None]


def reasons(err: FitError | None) -> list[tuple[int, str]]:
    """(code, reason) of every status of a FitError ([] when it passed)."""
    return [] if err is None else [(int(s.code), s.reason) for s in err.statuses]


def scores(ssn: Session) -> dict[str, dict[str, float]]:
    """The scenario format's ``scores`` (node order + batch order over passing nodes)."""
    return session_scores(ssn)


def node_scores(ssn: Session, uid: str, nodes: Sequence[str] | None = None) -> dict[str, float]:
    """Node order + batch node order of one task over the given nodes (default: all)."""
    t = task(ssn, uid)
    chosen: list[NodeInfo] = [ssn.nodes[n] for n in nodes] if nodes else list(ssn.node_list)
    out = {n.name: ssn.node_order(t, n) for n in chosen}
    for name, score in ssn.batch_node_order(t, chosen).items():
        out[name] += score
    return out
