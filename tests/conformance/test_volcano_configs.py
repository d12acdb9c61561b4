"""Volcano's own scheduler configurations (its Helm chart's, and those of its user
guides) validate, and nothing in them is ignored: ``batchsched conf validate --strict``
exits 0.

A configuration that still names something batchsched cannot honour is marked
``xfail(strict=True)`` with the reason: the day it passes, the mark must go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batchsched.cli import main

CONFIGS = Path(__file__).parent / "volcano" / "configs"

MOVED = ("the configuration for Volcano v1.8.2 and earlier: predicate.GPU*Enable, which "
         "Volcano reads from deviceshare since (and ignores here, as batchsched reports)")
KNOWN_GAPS = {
    "how_to_use_gpu_sharing-1.conf": MOVED,
    "how_to_use_gpu_number-1.conf": MOVED,
}
PATHS = sorted(CONFIGS.rglob("*.conf"))


@pytest.mark.parametrize("path", [
    pytest.param(path, id=path.name,
                 marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[path.name]))
    if path.name in KNOWN_GAPS else pytest.param(path, id=path.name)
    for path in PATHS
])
def test_volcano_s_configuration_validates_with_nothing_ignored(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["conf", "validate", "--strict", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ignored" not in out


def test_every_known_gap_names_a_file() -> None:
    assert set(KNOWN_GAPS) <= {path.name for path in PATHS}
