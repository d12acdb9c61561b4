from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# The suite must not depend on what else is installed in the environment.
os.environ.setdefault("BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD", "1")



@pytest.fixture(autouse=True)
def _warnings_said_once_per_process_are_said_again_per_test() -> Iterator[None]:
    """Some warnings are logged once per process (a plugin is built for every session);
    each test sees them as a fresh process would."""
    from batchsched.framework import arguments

    said = [set(once) for once in arguments._ONCE_SETS]
    for once in arguments._ONCE_SETS:
        once.clear()
    yield
    said += [set() for _ in range(len(arguments._ONCE_SETS) - len(said))]  # made meanwhile
    for once, before in zip(arguments._ONCE_SETS, said, strict=True):
        once.clear()
        once.update(before)
