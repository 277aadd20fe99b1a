"""examples/spark_pipeline.py runs end to end: it prints the windows it was asked for and
exits 0, or says how many it printed and exits 1 when its timeout passes first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import spark_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "spark_pipeline.py"

#: a line of the subscriber: "17:13:58-17:14:00 north:  250 events, mean 19.90"
WINDOW = re.compile(
    r"^(\d\d):(\d\d):(\d\d)-(\d\d):(\d\d):(\d\d) +(north|south|east): +(\d+) events, "
    r"mean (-?\d+\.\d\d)$",
    re.M,
)


def run_example(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        cwd=ROOT,
        env=spark_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def errors(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.splitlines()
    found = [line for line in lines if "Error" in line or "Exception" in line]
    return "\n".join(found[:40] + lines[-10:])


@pytest.mark.needs_java
def test_spark_pipeline_example_prints_windows() -> None:
    proc = run_example("--windows", "3", "--timeout", "150", timeout=300)
    assert proc.returncode == 0, errors(proc)
    lines = list(WINDOW.finditer(proc.stdout))
    # exactly the windows asked for, and nothing else on stdout
    assert len(lines) == 3 == len(proc.stdout.splitlines()), proc.stdout[-2000:] + errors(proc)
    for m in lines:
        h1, m1, s1, h2, m2, s2 = map(int, m.groups()[:6])
        sensor, events, mean = m.group(7), int(m.group(8)), float(m.group(9))
        start, end = h1 * 3600 + m1 * 60 + s1, h2 * 3600 + m2 * 60 + s2
        assert (end - start) % 86400 == 2, m.group(0)  # 2-second windows
        assert start % 2 == 0, m.group(0)
        assert sensor in ("north", "south", "east"), m.group(0)
        assert events > 0, m.group(0)
        assert 5.0 < mean < 35.0, m.group(0)  # values are gauss(20, 3)
    assert "timed out" not in proc.stderr


@pytest.mark.needs_java
def test_spark_pipeline_example_times_out() -> None:
    proc = run_example("--windows", "1000", "--timeout", "20", timeout=200)
    assert proc.returncode == 1, errors(proc)
    message = re.search(r"timed out after 20 s: printed (\d+) of 1000 windows", proc.stderr)
    assert message, errors(proc)
    assert int(message.group(1)) == len(WINDOW.findall(proc.stdout))
