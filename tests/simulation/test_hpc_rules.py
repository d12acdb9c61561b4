"""strict-allocate and easy-backfill on small cases worked out by hand: a held head
keeps its queue's place, the extra at the reserved start counts every task ending then,
and the reserved start is when the head's gang (its minMember) can start (the
last two failed before their fix)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from batchsched.cli import main

DATA = Path(__file__).parent / "data" / "hpc"
STRICT = 'actions: "strict-allocate"\ntiers: [{plugins: [{name: gang}]}]\n'
HOLD = STRICT + ("configurations: [{name: strict-allocate, arguments: "
                 "{holdBlockedHead: true}}]\n")
EASY = 'actions: "strict-allocate, easy-backfill"\ntiers: [{plugins: [{name: gang}]}]\n'
EXTRA = EASY + "configurations: [{name: easy-backfill, arguments: {extraNodes: true}}]\n"


def starts(tmp_path: Path, workload: str, config: str) -> dict[str, float]:
    path = tmp_path / "conf.yaml"
    path.write_text(config)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["simulate", str(DATA / workload), "--config", str(path), "--output", "json",
              "--no-progress"])
    return {job["job"]: job["start"] for job in json.loads(out.getvalue())["perJob"]}


def test_a_held_head_keeps_its_queue_s_place_and_queues_take_their_turns(
        tmp_path: Path) -> None:
    # holdBlockedHead pins a queue's head, not the queue order: j3 (queue qa, visited
    # first) starts at 2, before the held head j2 (queue qb), as without the hold;
    # test_contract's test_a_held_head_waits_for_its_queue_s_turn is the other side.
    for config in (HOLD, STRICT):
        got = starts(tmp_path, "two-queues-blocked-head.yaml", config)
        assert (got["default/j2"], got["default/j3"]) == (1002, 2)


def test_the_extra_at_the_reserved_start_counts_every_task_ending_then(tmp_path: Path) -> None:
    # At 100 all five of job 1's tasks end: 8 free, 2 beyond the head's 6. Jobs 3 and
    # 4 fit in them and start at 2 (the extra was counted as 0: they waited until 100).
    got = starts(tmp_path, "extra-at-the-reserved-start.swf", EXTRA)
    assert (got["swf/job-2"], got["swf/job-3"], got["swf/job-4"]) == (100, 2, 2)
    assert got["swf/job-5"] > 2


def test_the_reserved_start_is_when_the_head_s_gang_can_start(tmp_path: Path) -> None:
    # h needs 4 of its 5 tasks: it can start at 100 (a's end), so c (ending at 152)
    # must not be backfilled at 2 (the reservation counted all 5 tasks: 200).
    got = starts(tmp_path, "gang-reserved-start.yaml", EASY)
    assert got["default/c"] >= 100 and got["default/h"] < 200


def test_a_head_with_per_role_minimums_reserves_all_its_pending_tasks(
        tmp_path: Path) -> None:
    # h's workers come first in task order: at 100 allocate places all four and then
    # cannot fit the master, so h needs its 6 cpus (b's end, 200). Its first three
    # tasks (3 cpus) reserved 100 with 2 extra: c was backfilled at 2 and delayed h
    # until 1002.
    got = starts(tmp_path, "roles-reserved-start.yaml", EXTRA)
    assert got["default/h"] == 200 and got["default/c"] >= 200


@pytest.mark.parametrize("config", [EASY, EXTRA])
def test_a_role_head_whose_pending_tasks_never_fit_at_once_is_still_reserved_for(
        tmp_path: Path, config: str) -> None:
    # The reservation summed h's seven pending cpus: more than the node, so h was read
    # as never starting and c was backfilled at 2, holding h back until 1002. Walking
    # h's tasks as allocate does, h starts at 100 (all its tasks have started by 150,
    # as without backfilling).
    got = starts(tmp_path, "roles-minimum-fits.yaml", config)
    assert got == starts(tmp_path, "roles-minimum-fits.yaml", STRICT)
    assert got["default/h"] == 150 and got["default/c"] >= 150


def test_a_held_head_stays_held_while_another_queue_blocks(tmp_path: Path) -> None:
    # The hold went to qb's B when B blocked first at 50: qa's order was read again
    # and A2 (arriving at 60, shorter) started at 100 before A.
    hold_sjf = ('actions: "strict-allocate"\ntiers: [{plugins: [{name: gang}, {name: sjf}]},'
                ' {plugins: [{name: proportion}]}]\nconfigurations: [{name: strict-allocate, '
                'arguments: {holdBlockedHead: true}}]\n')
    got = starts(tmp_path, "hold-across-queues.yaml", hold_sjf)
    assert got["default/A"] == 100 and got["default/A2"] > 100


@pytest.mark.parametrize("config", [EASY, EXTRA])
def test_a_head_that_never_starts_by_the_estimates_is_delayed_by_no_candidate(
        tmp_path: Path, config: str) -> None:
    # C states no requested time: it never ends "before" a never reserved start, and
    # waited for X's end at 100.
    got = starts(tmp_path, "reserved-start-never.yaml", config)
    assert got["default/C"] == 2
