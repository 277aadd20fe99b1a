"""The benchmark suite's quick mode, run once so the suite cannot rot.

Speed is measured by ``python -m benchmarks``, never asserted here: this only checks
that every quick row ran and produced positive numbers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import omq

ROOT = Path(__file__).resolve().parent.parent

QUICK_ROWS = {
    "pushpull-tcp-64": ("msgs_s", {"trizmq", "pyzmq", "zmq.asyncio", "raw trio"}),
    "pushpull-inproc-64": ("msgs_s", {"trizmq", "pyzmq", "zmq.asyncio"}),
    "pubsub-tcp-64-1": ("msgs_s", {"trizmq", "pyzmq", "zmq.asyncio"}),
    "reqrep-tcp-64-p50": ("p50_us", {"trizmq", "pyzmq", "zmq.asyncio", "raw trio"}),
    "reqrep-tcp-64-p99": ("p99_us", {"trizmq", "pyzmq", "zmq.asyncio", "raw trio"}),
    "mixed-trizmq-pyzmq-tcp-64": ("msgs_s", {"trizmq", "pyzmq"}),
    "memory-pub-100-stalled": ("peak_rss_mib", {"trizmq"}),
}
#: the rows that gain a pyomq column where there is an omq interpreter
PYOMQ_ROWS = ("pushpull-tcp-64", "pushpull-inproc-64", "pubsub-tcp-64-1", "reqrep-tcp-64-p50")
PYOMQ_ROWS += ("reqrep-tcp-64-p99",)


def test_quick_benchmarks_produce_every_row(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["meta"]["mode"] == "quick"
    rows = {row["id"]: row for row in report["rows"]}
    assert set(rows) == set(QUICK_ROWS)
    with_omq = omq.versions() is not None
    assert report["meta"]["pyomq"] == (omq.versions() or {}).get("pyomq")
    for row_id, (metric, columns) in QUICK_ROWS.items():
        row = rows[row_id]
        assert row["metric"] == metric
        if with_omq and row_id in PYOMQ_ROWS:
            columns = columns | {"pyomq"}
            assert row["ratios"]["trizmq/pyomq"] > 0
        assert set(row["cells"]) == columns, row_id
        for column, cell in row["cells"].items():
            assert cell["failed"] == 0, (row_id, column, cell["errors"])
            assert cell["median"] > 0, (row_id, column)
            if metric == "msgs_s":
                assert cell["mb_s"] > 0
    for row_id in QUICK_ROWS:
        if row_id != "memory-pub-100-stalled":
            assert rows[row_id]["ratios"]["trizmq/pyzmq"] > 0
    memory = rows["memory-pub-100-stalled"]["cells"]["trizmq"]["details"]
    assert memory["live_peers"] == 100
    assert {t["target"] for t in report["targets"]}
    assert "PUSH/PULL tcp 64 B" in done.stdout  # the table


def test_quick_scaling_produces_every_row(tmp_path: Path) -> None:
    """``python -m benchmarks.scaling --quick``: every row measured on both sides."""
    out = tmp_path / "scaling.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.scaling",
            "--quick",
            "--repetitions",
            "1",
            "--duration",  # rows measured, not their figures: a fifth of a second each
            "0.2",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [row["id"] for row in rows] == [
        "idle-pull-0",
        "idle-pull-100",
        "idle-router-0",
        "idle-router-100",
        "idle-memory-pull-100",
        "idle-memory-router-100",
        "idle-rep-0",
        "idle-rep-10",
        "fanin-1",
        "fanin-4",
        "fanout-1",
        "fanout-4",
        "lengths-1",
        "lengths-8",
        "connect-100",
    ]
    for row in rows:
        for impl in ("trizmq", "pyzmq"):
            cell = row[impl]
            values = cell.values() if isinstance(cell, dict) else [cell]
            assert all(isinstance(v, float) and v > 0 for v in values), (row["id"], cell)


def test_quick_ws_benchmark_measures_both_transports(tmp_path: Path) -> None:
    """``python -m benchmarks.ws --quick``: every row over ws (or wss) and over tcp,
    then the codecs alone."""
    out = tmp_path / "ws.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.ws", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert [row["id"] for row in rows] == [
        "pushpull-64",
        "pushpull-4k",
        "reqrep-64-p50",
        "reqrep-64-p99",
        "pushpull-4k-wss",
    ]
    for row in rows:
        assert row["ws"] > 0 and row["tcp"] > 0 and row["ratio"] > 0, row
        assert len(row["pairs"]) == 1, row
    # the frame codec alone and the whole ZWS codec, each side; wsproto's own cost
    # (before issue 42); what the 0.5x bar leaves per side
    sides = {"client_send_us", "server_receive_us", "server_send_us", "client_receive_us"}
    for key in ("frame_codec_alone", "zws_codec"):
        assert set(result[key]) == {"64 B", "4096 B"}
        for cost in result[key].values():
            assert set(cost) == sides and all(v > 0 for v in cost.values()), cost
    assert set(result["wsproto_alone"]) == {"64 B", "4096 B"}
    for cost in result["wsproto_alone"].values():
        assert cost["client_send_us"] > 0 and cost["server_receive_us"] > 0, cost
    assert result["budget_us_4k"] > 0
    for title in ("frame codec alone", "ZWS codec", "wsproto alone"):
        assert title in done.stdout


def test_the_simple_harness_compares_both_libraries() -> None:
    """``python -m benchmarks.simple``: one process per side, a fixed count."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.simple", "--count", "3000", "--repetitions", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "trizmq" in done.stdout and "pyzmq" in done.stdout and "ratio" in done.stdout


def test_curve_rows_measure_both_libraries(tmp_path: Path) -> None:
    """The CURVE rows (issue 19): both ends trizmq, then both ends libzmq."""
    out = tmp_path / "curve.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "curve-pushpull-tcp-64",
         "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads(out.read_text())["rows"]
    assert row["id"] == "curve-pushpull-tcp-64"
    assert all(cell["median"] > 0 for cell in row["cells"].values()), row


def test_samecode_sees_a_change_of_code_and_not_a_rename_or_a_move(tmp_path: Path) -> None:
    """``python -m benchmarks.samecode``: bytecode compared without line numbers and
    local names; a copy of the tree shows nothing changed, traced or not."""
    from benchmarks.samecode import canonical

    def code_of(source: str) -> Any:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<test>", "exec"), namespace)
        return namespace["f"].__code__

    base = code_of("def f(a):\n    b = [a + x for x in a]\n    return b\n")
    renamed = code_of("\n\ndef f(a):\n    c = [a + y for y in a]\n    return c\n")
    edited = code_of("def f(a):\n    b = [a + x for x in a]\n    return b, 1\n")
    assert canonical(base) == canonical(renamed)
    assert canonical(base) != canonical(edited)

    shutil.copytree(ROOT / "trizmq", tmp_path / "trizmq")
    argv = [sys.executable, "-m", "benchmarks.samecode", "--compare", str(tmp_path)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert " 0 listed" in done.stdout, done.stdout
    argv += ["--trace", "inproc64", "-n", "2000"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("inproc64, 2000 messages:"), done.stdout
    assert "| changed |" not in done.stdout, done.stdout


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (callgrind)")
def test_instructions_counts_a_message() -> None:
    """``python -m benchmarks.instructions``: callgrind's count, start-up cancelled."""
    argv = [sys.executable, "-m", "benchmarks.instructions", "--only", "inproc64"]
    argv += ["-n", "500", "--repeats", "1"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| inproc64 |")]
    per_message = int(row.split("|")[2].replace(",", ""))
    assert 1_000 < per_message < 1_000_000, row


def test_the_compression_table_on_loopback() -> None:
    """``python -m benchmarks.compression --only loopback``: a row for every payload and
    transport, with its throughput and, for trizmq, its bytes on the wire."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.compression",
            "--only",
            "loopback",
            "--messages",
            "300",
            "--markdown",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines()[2:]]
    trizmq_rows = {(r[1].strip(), r[2].strip()): r for r in rows if r[3].strip() == "trizmq"}
    assert set(trizmq_rows) == {
        (kind, scheme) for kind in ("records", "noise") for scheme in ("tcp", "lz4+tcp", "zstd+tcp")
    }
    for (kind, scheme), row in trizmq_rows.items():
        assert float(row[4].replace(",", "")) > 0
        wire = int(row[6].replace(",", ""))
        assert (
            (wire < 600)
            if (kind, scheme) in {("records", "lz4+tcp"), ("records", "zstd+tcp")}
            else wire >= 1024
        )
