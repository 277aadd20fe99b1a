"""A short run of benchmarks/soak.py, so the soak cannot rot and its verdicts hold.

The real soak runs for minutes (`python benchmarks/soak.py`) and is not part of the
suite; this runs every scenario for about two seconds, with real processes killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parent.parent / "benchmarks" / "soak.py"


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
def test_soak_separates_loss_from_lag(tmp_path: Path, transport: str) -> None:
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SOAK),
            "--duration",
            "6",
            "--restarts",
            "2",
            "--quiet",
            "1",
            "--transport",
            transport,
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    report = json.loads(out.read_text())

    pipeline = report["pipeline"]
    assert pipeline["worker_kills"] > 0
    assert pipeline["lost_among_live"] == 0
    assert pipeline["duplicates"] == 0 and pipeline["reordered"] == 0
    assert pipeline["lost_in_killed_workers"] <= pipeline["lost_bound"]
    assert pipeline["received"] + pipeline["lost_in_killed_workers"] == pipeline["sent"]

    binder = report["binder"]
    assert binder["binder_restarts"] == 2 and binder["queued_while_down"] > 0
    assert binder["received"] == binder["sent"] > 0
    assert binder["gaps"] == 0 and binder["duplicates_or_reordered"] == 0

    subscribers = report["subscribers"]
    assert subscribers["subscribers_opened"] > 50
    assert subscribers["peers_left"] == 0 and subscribers["subscriptions_left"] == 0
    fds_before, fds_after = subscribers["fds_before_after"].split("/")
    assert fds_before == fds_after
    tasks_before, tasks_after = subscribers["tasks_before_after"].split("/")
    assert tasks_before == tasks_after
