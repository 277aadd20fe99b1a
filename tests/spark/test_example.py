"""examples/spark_pipeline.py runs end to end: windows come out on the subscriber."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import spark_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.needs_java
def test_spark_pipeline_example_prints_windows() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "spark_pipeline.py"), "--seconds", "20"],
        cwd=ROOT,
        env=spark_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    errors = [line for line in proc.stderr.splitlines() if "Error" in line or "Exception" in line]
    assert proc.returncode == 0, "\n".join(errors[:40])
    windows = re.findall(r"^\S+-\S+ +(north|south|east): +\d+ events, mean", proc.stdout, re.M)
    assert windows, proc.stdout[-2000:] + proc.stderr[-2000:]
