"""extender: which tasks the extender is asked about (Volcano
pkg/scheduler/plugins/extender/extender_test.go TestIsInterested, commit
ed72c7c815a9fd547a787134676f73d42e9d049c, Apache-2.0).

Volcano's ``extenderPlugin.IsInterested`` is ``ExtenderPlugin.interested``. Five of the
six cases are transcribed. "container has managed resource in limits" is not: a
TaskInfo holds only requests (``resreq``/``init_resreq``), no container limits, so a
pod whose gpu appears only under ``limits`` cannot be written. (The kubectl loader
copies a limit-only resource into the requests, as the API server's defaulting does,
so such a pod would be interested there too, but through its requests, not its
limits.)
"""

from __future__ import annotations

import pytest

from batchsched.api import Resource, TaskInfo
from batchsched.framework import Arguments
from batchsched.plugins.extender import ExtenderPlugin


@pytest.mark.parametrize(
    ("case", "managed", "requests", "init_requests", "expected"),
    [
        ("empty managed resources - should return true",
         [], {"cpu": "100m"}, None, True),
        ("container has managed resource in requests",
         ["nvidia.com/gpu"], {"cpu": "100m", "nvidia.com/gpu": "1"}, None, True),
        ("init container has managed resource",
         ["nvidia.com/gpu"], {"cpu": "100m"}, {"nvidia.com/gpu": "1"}, True),
        ("no managed resources in containers",
         ["nvidia.com/gpu"], {"cpu": "100m", "memory": "128Mi"}, None, False),
        ("multiple managed resources - one match",
         ["nvidia.com/gpu", "amd.com/gpu"], {"cpu": "100m", "amd.com/gpu": "1"}, None, True),
    ],
)
def test_is_interested(case: str, managed: list[str], requests: dict[str, str],
                       init_requests: dict[str, str] | None, expected: bool) -> None:
    plugin = ExtenderPlugin(Arguments({"extender.managedResources": managed}))
    task = TaskInfo.create(
        "default", "p1", "default/j1", Resource.from_mapping(requests),
        init_requests=None if init_requests is None else Resource.from_mapping(init_requests))
    assert plugin.interested(task) is expected, case
