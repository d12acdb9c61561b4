"""Plugins tell the host when their answers change with time alone
(``Session.wake_up_at``); the host reads the earliest (``Session.next_wake_up``)."""

from __future__ import annotations

import math

from batchsched import MemoryCache, Scheduler


def test_the_earliest_future_wake_up_of_each_plugin_is_kept() -> None:
    ssn = Scheduler(MemoryCache(now=100.0)).run_once()
    assert ssn.next_wake_up is None
    for at in (100.0, 99.0, math.inf, math.nan, -math.inf):
        ssn.wake_up_at("sla", at)  # now, past, never, NaN: no wake-up
    assert ssn.wake_ups == {} and ssn.next_wake_up is None
    ssn.wake_up_at("sla", 300.0)
    ssn.wake_up_at("sla", 200.0)
    ssn.wake_up_at("sla", 250.0)
    ssn.wake_up_at("tdm", 150.0)
    assert ssn.wake_ups == {"sla": 200.0, "tdm": 150.0}
    assert ssn.next_wake_up == 150.0
