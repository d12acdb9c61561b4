"""Compare decisions with a scenario's ``expect``; every difference as one readable line."""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

from batchsched.kube.quantity import parse_quantity

__all__ = ["compare_decisions"]

SCORE_TOLERANCE = 1e-6


def compare_decisions(
    expect: Mapping[str, Any], got: Mapping[str, Any], task_jobs: Mapping[str, str] | None = None
) -> list[str]:
    """Differences between ``expect`` and decisions in JSON form (empty: they agree).

    ``task_jobs`` (task id -> job id) is needed only for ``x-jobBindCounts``.
    """
    diffs: list[str] = []
    binds: Mapping[str, str] = got.get("binds") or {}
    if "binds" in expect:
        want = dict(expect["binds"] or {})
        if want != dict(binds):
            missing = {k: v for k, v in want.items() if binds.get(k) != v}
            extra = {k: v for k, v in binds.items() if k not in want}
            elsewhere = {k: binds[k] for k in missing if k in binds}
            diffs.append(f"binds: expected but not made {missing}; made but not expected {extra}"
                         + (f"; made elsewhere {elsewhere}" if elsewhere else ""))
    if "bindCount" in expect and len(binds) != expect["bindCount"]:
        diffs.append(f"bindCount: expected {expect['bindCount']}, got {len(binds)}")
    if "x-nodeBindCounts" in expect:
        per_node = collections.Counter(binds.values())
        for node, n in (expect["x-nodeBindCounts"] or {}).items():
            if per_node.get(node, 0) != n:
                diffs.append(f"nodeBindCounts: {node} expected {n}, got {per_node.get(node, 0)}")
    if "x-jobBindCounts" in expect:
        jobs = task_jobs or {}
        per_job = collections.Counter(jobs.get(t) for t in binds)
        for job, allowed in (expect["x-jobBindCounts"] or {}).items():
            options = allowed if isinstance(allowed, list) else [allowed]
            if per_job.get(job, 0) not in options:
                diffs.append(f"jobBindCounts: {job} expected one of {options}, "
                             f"got {per_job.get(job, 0)}")
    if "bindFailures" in expect:
        want_failed = collections.Counter(expect["bindFailures"] or [])
        have_failed = collections.Counter(got.get("bindFailures") or [])
        if want_failed != have_failed:
            diffs.append(f"bindFailures: expected {sorted(want_failed.elements())}, "
                         f"got {sorted(have_failed.elements())}")
    if "gpuDevices" in expect:
        want_devices = {task: list(devices) for task, devices
                        in dict(expect["gpuDevices"] or {}).items()}
        have_devices = dict(got.get("gpuDevices") or {})
        if want_devices != have_devices:
            diffs.append(f"gpuDevices: expected {want_devices}, got {have_devices}")
    if "vgpuDevices" in expect:
        want_vgpus = dict(expect["vgpuDevices"] or {})
        have_vgpus = dict(got.get("vgpuDevices") or {})
        if want_vgpus != have_vgpus:
            diffs.append(f"vgpuDevices: expected {want_vgpus}, got {have_vgpus}")
    if "vnpuDevices" in expect:
        want_vnpus = dict(expect["vnpuDevices"] or {})
        have_vnpus = dict(got.get("vnpuDevices") or {})
        if want_vnpus != have_vnpus:
            diffs.append(f"vnpuDevices: expected {want_vnpus}, got {have_vnpus}")
    if "claimAllocations" in expect:
        want_claims = dict(expect["claimAllocations"] or {})
        have_claims = dict(got.get("claimAllocations") or {})
        if want_claims != have_claims:
            diffs.append(f"claimAllocations: expected {want_claims}, got {have_claims}")
    if "nominated" in expect:
        want_nominated = dict(expect["nominated"] or {})
        have_nominated = dict(got.get("nominated") or {})
        if want_nominated != have_nominated:
            diffs.append(f"nominated: expected {want_nominated}, got {have_nominated}")
    evicted: Sequence[str] = got.get("evicted") or []
    if "evicted" in expect:
        want_ev = collections.Counter(expect["evicted"] or [])
        if want_ev != collections.Counter(evicted):
            diffs.append(f"evicted: expected {sorted(want_ev.elements())}, got {sorted(evicted)}")
    if "evictCount" in expect and len(evicted) != expect["evictCount"]:
        diffs.append(f"evictCount: expected {expect['evictCount']}, got {len(evicted)}")
    if "pipelined" in expect:
        have = got.get("pipelined") or {}
        for job, nodes in (expect["pipelined"] or {}).items():
            tasks = have.get(job) or {}
            if not tasks:
                diffs.append(f"pipelined: {job} has no pipelined task (expected on {nodes})")
                continue
            if isinstance(nodes, Mapping):
                # The decisions' own shape (task -> node), from the Python API: exactly.
                if dict(tasks) != dict(nodes):
                    diffs.append(f"pipelined: {job} expected {dict(nodes)}, got {dict(tasks)}")
                continue
            wrong = {t: n for t, n in tasks.items() if n not in nodes}
            if wrong:
                diffs.append(f"pipelined: {job} tasks {wrong} not on {nodes}")
    if "podGroupPhases" in expect:
        have = got.get("podGroupPhases") or {}
        for job, phase in (expect["podGroupPhases"] or {}).items():
            if have.get(job) != phase:
                diffs.append(f"podGroupPhases: {job} expected {phase}, got {have.get(job)}")
    if "taskStatusCounts" in expect:
        have = got.get("taskStatusCounts") or {}
        for job, counts in (expect["taskStatusCounts"] or {}).items():
            have_job = have.get(job) or {}
            for status, n in counts.items():
                if have_job.get(status, 0) != n:
                    diffs.append(f"taskStatusCounts: {job} {status} expected {n}, "
                                 f"got {have_job.get(status, 0)}")
    if "queueStatus" in expect:
        diffs.extend(_queue_status_differences(expect["queueStatus"] or {},
                                               got.get("queueStatus") or {}))
    if "events" in expect:
        want_events = collections.Counter(_event_key(e) for e in expect["events"] or [])
        have_events = collections.Counter(_event_key(e) for e in got.get("events") or [])
        if want_events != have_events:
            unrecorded = sorted((want_events - have_events).elements())
            unexpected = sorted((have_events - want_events).elements())
            diffs.append(f"events: expected but not recorded {unrecorded}; recorded but not "
                         f"expected {unexpected}")
    if "scores" in expect:
        have = got.get("scores") or {}
        for task, nodes in (expect["scores"] or {}).items():
            for node, score in nodes.items():
                value = (have.get(task) or {}).get(node)
                if value is None or abs(float(value) - float(score)) > SCORE_TOLERANCE:
                    diffs.append(f"scores: {task} on {node} expected {score}, got {value}")
    return diffs


def _event_key(event: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (event["object"], event["type"], event["reason"], event["message"])


def _queue_status_differences(want: Mapping[str, Any], have: Mapping[str, Any]) -> list[str]:
    """Each queue's listed resources (compared as quantities: ``1Gi`` is ``1024Mi``)
    and listed pod-group counts, as ``podGroupPhases`` and ``taskStatusCounts`` compare
    what they list."""
    diffs = []
    for queue, status in want.items():
        if queue not in have:
            diffs.append(f"queueStatus: no queue {queue!r} in the session")
            continue
        have_status = have[queue]
        have_allocated = have_status.get("allocated") or {}
        for name, amount in ((status or {}).get("allocated") or {}).items():
            got_amount = have_allocated.get(name, "0")
            if parse_quantity(amount) != parse_quantity(got_amount):
                diffs.append(f"queueStatus: {queue} allocated {name} expected {amount}, "
                             f"got {got_amount}")
        have_groups = have_status.get("podGroups") or {}
        for phase, count in ((status or {}).get("podGroups") or {}).items():
            if phase not in have_groups:
                diffs.append(f"queueStatus: {queue} podGroups: {phase!r} is not a pod group "
                             f"phase (known: {', '.join(have_groups)})")
            elif have_groups[phase] != count:
                diffs.append(f"queueStatus: {queue} podGroups {phase} expected {count}, "
                             f"got {have_groups[phase]}")
    return diffs
