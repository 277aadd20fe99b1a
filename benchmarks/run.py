"""The benchmark suite: trizmq next to pyzmq (sync and zmq.asyncio) and pyomq in one run.

    python -m benchmarks [--quick | --full] [--json PATH] [--png PATH] [--only TEXT]
    python benchmarks/run.py ...          (the same)

Method: every measurement runs in fresh processes (``multiprocessing``, spawn
context): the receiver binds and reports ready on a pipe, the sender connects, and
the receiver times from its first message to the last, like libzmq's
local_thr/remote_thr (inproc: one process, two tasks, or two threads for pyzmq
sync). The implementations of a case are measured interleaved (A, B, C, A, B, C, …)
and each cell is the median of the repetitions, with min-max. Ratios are
trizmq / other: above 1 is better for throughput, below 1 for latency. A process
that hangs is killed after ``--timeout`` seconds and its cell counted as failed.

pyomq (omq.rs, the Rust ZeroMQ, through its sync binding) runs pyzmq's sync workers in
its own interpreter (Python >= 3.12, ``make venv-omq``; see benchmarks/omq.py), beside
pyzmq in every case pyzmq has but the mixed and memory ones; where there is no omq
interpreter its column is left out and the report says so.

``run(argv)`` is the function a command line can call; it returns the exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python benchmarks/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import omq, workers

KIB = 1024
MIB = 1024 * 1024

TZ, SYNC, OMQ, AIO, RAW = "trizmq", "pyzmq", "pyomq", "zmq.asyncio", "raw trio"
#: table columns: the implementation measured in each, per case
COLUMNS = (TZ, SYNC, OMQ, AIO, RAW)
COLUMN_TITLES = {
    TZ: "trizmq",
    SYNC: "pyzmq sync",
    OMQ: "pyomq sync",
    AIO: "zmq.asyncio",
    RAW: "raw trio",
}
RATIOS = (
    (SYNC, "trizmq/pyzmq"),
    (OMQ, "trizmq/pyomq"),
    (AIO, "trizmq/zmq.asyncio"),
    (RAW, "trizmq/raw trio"),
)


class BenchFailure(Exception):
    """A measurement that timed out, crashed or reported an error."""


@dataclass
class Case:
    """One row of the table: a workload and the implementations it compares."""

    id: str
    label: str
    kind: str  # "throughput", "inproc", "latency" or "memory"
    params: dict[str, Any]
    #: column -> (sender impl, receiver impl); for latency (client, server)
    columns: dict[str, tuple[str, str]]
    metric: str = "msgs_s"
    receivers: int = 1

    @property
    def unit(self) -> str:
        return {"msgs_s": "msg/s", "p50_us": "µs", "p99_us": "µs", "peak_rss_mib": "MiB"}[
            self.metric
        ]


@dataclass
class Settings:
    repetitions: int
    duration: float
    latency_duration: float
    timeout: float
    mem_messages: int
    mode: str
    sizes: tuple[int, ...] = field(default=())


# -- processes -----------------------------------------------------------------------------
class Processes:
    """A group of spawned worker processes, each with a pipe; killed on close."""

    def __init__(self, specs: list[dict[str, Any]], deadline: float) -> None:
        self.deadline = deadline
        self.ctx = multiprocessing.get_context("spawn")
        self.procs: list[Any] = []
        self.conns: list[Connection] = []
        self.failed = False
        for spec in specs:
            if spec["impl"] == OMQ:  # in the omq interpreter, not a multiprocessing child
                omq_proc = omq.OmqProcess(spec)
                self.conns.append(omq_proc.start())
                self.procs.append(omq_proc)
                continue
            parent, child = self.ctx.Pipe()
            proc = self.ctx.Process(target=workers.main, args=(child, spec), daemon=True)
            proc.start()
            child.close()
            self.procs.append(proc)
            self.conns.append(parent)

    def expect(self, index: int, kind: str) -> Any:
        """The payload of the next message ``kind`` from process ``index``."""
        try:
            return self._expect(index, kind)
        except BenchFailure:
            self.failed = True
            raise

    def _expect(self, index: int, kind: str) -> Any:
        conn, proc = self.conns[index], self.procs[index]
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise BenchFailure(f"timeout waiting for {kind}")
            if wait([conn, proc.sentinel], min(remaining, 0.5)):
                if conn.poll():
                    try:
                        got, payload = conn.recv()
                    except EOFError:
                        raise BenchFailure(f"process exited ({proc.exitcode})") from None
                    if got == "error":
                        raise BenchFailure(str(payload))
                    if got == kind:
                        return payload
                elif not proc.is_alive():
                    raise BenchFailure(f"process exited ({proc.exitcode}) before {kind}")

    def send(self, index: int, message: tuple[str, Any]) -> None:
        try:
            self.conns[index].send(message)
        except (BrokenPipeError, OSError) as exc:
            raise BenchFailure(f"process {index} is gone: {exc}") from None

    def close(self) -> None:
        for conn, proc in zip(self.conns, self.procs, strict=True):
            if proc.is_alive():
                with contextlib.suppress(OSError):
                    conn.send(("stop", None))
        # a failed group is killed at once; a good one gets time to close its sockets
        end = time.monotonic() + (0.2 if self.failed else 5)
        for proc in self.procs:
            proc.join(max(0.0, end - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        for conn in self.conns:
            conn.close()


def measure(case: Case, column: str, settings: Settings, ipc_dir: str) -> dict[str, float]:
    """One measurement of one column of ``case``; raises BenchFailure."""
    sender, receiver = case.columns[column]
    base = dict(case.params, duration=settings.duration)
    deadline = time.monotonic() + settings.timeout
    if case.kind == "inproc":
        group = Processes([dict(base, impl=sender, role="inproc")], deadline)
        try:
            return dict(group.expect(0, "result"))
        finally:
            group.close()
    if case.kind == "memory":
        return measure_memory(case, settings, deadline)
    if case.kind == "latency":
        base["duration"] = settings.latency_duration
        server_role, client_role = "server", "client"
    else:
        server_role, client_role = "receiver", "sender"
    if base.get("transport") == "ipc":
        base["ipc_path"] = os.path.join(ipc_dir, uuid.uuid4().hex[:12])
    n = case.receivers
    specs = [dict(base, impl=receiver, role=server_role) for _ in range(n)]
    specs.append(dict(base, impl=sender, role=client_role))
    group = Processes(specs, deadline)
    try:
        endpoints = [group.expect(i, "ready") for i in range(n)]
        group.send(n, ("go", endpoints))
        if case.kind == "latency":
            return dict(group.expect(n, "result"))
        results = [group.expect(i, "result") for i in range(n)]
        total = sum(r["msgs_s"] for r in results)
        return {"msgs_s": total, "mb_s": total * case.params["size"] / 1e6}
    finally:
        group.close()


def measure_memory(case: Case, settings: Settings, deadline: float) -> dict[str, float]:
    params = dict(case.params, messages=settings.mem_messages)
    group = Processes(
        [
            dict(params, impl=TZ, role="mem-publisher"),
            dict(params, impl=SYNC, role="mem-subscribers"),
        ],
        deadline,
    )
    try:
        endpoint = group.expect(0, "ready")
        group.send(1, ("go", [endpoint]))
        group.expect(1, "result")
        group.send(0, ("go", None))
        return dict(group.expect(0, "result"))
    finally:
        group.close()


# -- the cases -------------------------------------------------------------------------------
def hwm_for(size: int) -> int:
    """High-water mark: 1000 (the default) unless that would queue more than ~32 MiB."""
    return max(16, min(1000, 32 * MIB // size))


def size_label(size: int) -> str:
    if size >= MIB:
        return f"{size // MIB} MiB"
    if size >= KIB:
        return f"{size // KIB} KiB"
    return f"{size} B"


def _curve_keys() -> dict[str, str]:
    """A server and a client CURVE key pair (Z85 text) for the CURVE rows."""
    import trizmq

    server_public, server_secret = trizmq.curve_keypair()
    client_public, client_secret = trizmq.curve_keypair()
    return {
        "server_public": server_public.decode(),
        "server_secret": server_secret.decode(),
        "client_public": client_public.decode(),
        "client_secret": client_secret.decode(),
    }


def all_cases() -> list[Case]:
    with_omq = omq.versions() is not None
    #: pyomq beside pyzmq, where there is an omq interpreter
    pyomq = {OMQ: (OMQ, OMQ)} if with_omq else {}
    same = {TZ: (TZ, TZ), SYNC: (SYNC, SYNC), **pyomq, AIO: (AIO, AIO)}
    cases: list[Case] = []
    for transport, sizes in (
        ("tcp", (16, 64, 256, 4 * KIB, 64 * KIB, MIB)),
        ("ipc", (16, 256, 4 * KIB, 64 * KIB, MIB)),
        ("inproc", (16, 64, 256, 4 * KIB, 64 * KIB, MIB)),
    ):
        for size in sizes:
            columns = dict(same)
            if transport == "tcp" and size == 64:
                columns[RAW] = (RAW, RAW)
            cases.append(
                Case(
                    id=f"pushpull-{transport}-{size}",
                    label=f"PUSH/PULL {transport} {size_label(size)}",
                    kind="inproc" if transport == "inproc" else "throughput",
                    params={
                        "pattern": "pushpull",
                        "transport": transport,
                        "size": size,
                        "hwm": hwm_for(size),
                    },
                    columns=columns,
                )
            )
    # 1→16 and 1→64 (issue 19): how the cost grows with each subscriber (each SUB is
    # its own process, as for 1→4)
    for subs in (1, 4, 16, 64):
        cases.append(
            Case(
                id=f"pubsub-tcp-64-{subs}",
                label=f"PUB/SUB tcp 64 B 1→{subs} (sum)",
                kind="throughput",
                params={
                    "pattern": "pubsub",
                    "transport": "tcp",
                    "size": 64,
                    "hwm": 1000,
                    "settle": 0.3,
                },
                columns=dict(same),
                receivers=subs,
            )
        )
    for pattern, name in (("reqrep", "REQ/REP"), ("dealerrouter", "DEALER/ROUTER")):
        columns = dict(same)
        if pattern == "reqrep":
            columns[RAW] = (RAW, RAW)
        for metric in ("p50_us", "p99_us"):
            cases.append(
                Case(
                    id=f"{pattern}-tcp-64-{metric[:3]}",
                    label=f"{name} tcp 64 B {metric[:3]}",
                    kind="latency",
                    params={"pattern": pattern, "transport": "tcp", "size": 64},
                    columns=columns,
                    metric=metric,
                )
            )
    # CURVE (issue 19): the same library at both ends, one key set for every run
    curve = _curve_keys()
    for size in (64, 4 * KIB):
        cases.append(
            Case(
                id=f"curve-pushpull-tcp-{size}",
                label=f"CURVE PUSH/PULL tcp {size_label(size)}",
                kind="throughput",
                params={
                    "pattern": "pushpull",
                    "transport": "tcp",
                    "size": size,
                    "hwm": hwm_for(size),
                    "curve": curve,
                },
                columns={TZ: (TZ, TZ), SYNC: (SYNC, SYNC), **pyomq},
            )
        )
    cases.append(
        Case(
            id="curve-reqrep-tcp-64-p50",
            label="CURVE REQ/REP tcp 64 B p50",
            kind="latency",
            params={"pattern": "reqrep", "transport": "tcp", "size": 64, "curve": curve},
            columns={TZ: (TZ, TZ), SYNC: (SYNC, SYNC), **pyomq},
            metric="p50_us",
        )
    )
    for sender, receiver, name in ((TZ, SYNC, "trizmq→libzmq"), (SYNC, TZ, "libzmq→trizmq")):
        cases.append(
            Case(
                id=f"mixed-{sender}-{receiver}-tcp-64".replace(".", ""),
                label=f"PUSH/PULL tcp 64 B {name}",
                kind="throughput",
                params={"pattern": "pushpull", "transport": "tcp", "size": 64, "hwm": 1000},
                columns={TZ: (sender, receiver), SYNC: (SYNC, SYNC)},
            )
        )
    cases.append(
        Case(
            id="memory-pub-100-stalled",
            label="PUB, 100 stalled SUBs, 1 KiB, HWM 1000: peak RSS",
            kind="memory",
            params={"size": KIB, "hwm": 1000, "subscribers": 100, "settle": 0.5},
            columns={TZ: (TZ, SYNC)},
            metric="peak_rss_mib",
        )
    )
    return cases


QUICK_IDS = (
    "pushpull-tcp-64",
    "pushpull-inproc-64",
    "pubsub-tcp-64-1",
    "reqrep-tcp-64-p50",
    "reqrep-tcp-64-p99",
    "mixed-trizmq-pyzmq-tcp-64",
    "memory-pub-100-stalled",
)


def settings_for(mode: str) -> Settings:
    if mode == "quick":
        return Settings(1, 0.1, 0.1, 20.0, 5_000, mode)
    if mode == "full":
        return Settings(5, 1.0, 1.0, 60.0, 50_000, mode)
    return Settings(3, 0.5, 0.5, 30.0, 20_000, mode)


# -- running ---------------------------------------------------------------------------------
def run_cases(
    cases: list[Case],
    settings: Settings,
    log: Any = sys.stderr,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, dict[str, list[Any]]]:
    """Measure every case; returns {case id: {column: [result dict or error text, ...]}}.

    ``progress(done, total)`` is called after each measurement (the CLI draws a bar).
    """
    samples: dict[str, dict[str, list[Any]]] = {}
    # latency cases that share their measurements (p50 and p99 of the same runs)
    shared: dict[tuple[str, ...], str] = {}
    total = sum(settings.repetitions * len(c.columns) for c in cases)
    done = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trizmq-bench-") as ipc_dir:
        for case in cases:
            key = (case.kind, *sorted(case.params.items()), *sorted(case.columns.items()))
            if case.kind == "latency" and str(key) in shared:
                samples[case.id] = samples[shared[str(key)]]
                done += settings.repetitions * len(case.columns)
                continue
            shared[str(key)] = case.id
            reps = 1 if case.kind == "memory" else settings.repetitions
            per_column: dict[str, list[Any]] = {column: [] for column in case.columns}
            for rep in range(reps):
                for column in case.columns:  # interleaved: A, B, C, A, B, C, ...
                    t = time.monotonic()
                    try:
                        result: Any = measure(case, column, settings, ipc_dir)
                        shown = format_value(result[case.metric], case.metric)
                    except BenchFailure as exc:
                        result = f"failed: {exc}"
                        shown = result
                    per_column[column].append(result)
                    done += 1
                    print(
                        f"[{done:3}/{total} {time.monotonic() - started:5.0f}s] {case.label}"
                        f" | {describe(case, column)} | rep {rep + 1}/{reps}: {shown}"
                        f" ({time.monotonic() - t:.1f}s)",
                        file=log,
                        flush=True,
                    )
                    if progress is not None:
                        progress(done, total)
            if reps < settings.repetitions:
                done += (settings.repetitions - reps) * len(case.columns)
            samples[case.id] = per_column
    return samples


def describe(case: Case, column: str) -> str:
    sender, receiver = case.columns[column]
    return sender if sender == receiver else f"{sender} → {receiver}"


def summarize(cases: list[Case], samples: dict[str, dict[str, list[Any]]]) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        cells: dict[str, Any] = {}
        for column, results in samples[case.id].items():
            good = [r for r in results if isinstance(r, dict)]
            values = [r[case.metric] for r in good]
            cell: dict[str, Any] = {
                "impl": describe(case, column),
                "values": values,
                "failed": len(results) - len(good),
                "errors": [r for r in results if not isinstance(r, dict)],
            }
            if values:
                cell.update(median=statistics.median(values), min=min(values), max=max(values))
                if case.metric == "msgs_s":
                    cell["mb_s"] = cell["median"] * case.params["size"] / 1e6
                if case.kind == "memory":
                    cell["details"] = good[-1]
            cells[column] = cell
        ratios = {}
        tz = cells.get(TZ, {}).get("median")
        for column, name in RATIOS:
            other = cells.get(column, {}).get("median")
            if tz and other:
                ratios[name] = tz / other
        rows.append(
            {
                "id": case.id,
                "label": case.label,
                "kind": case.kind,
                "metric": case.metric,
                "unit": case.unit,
                "params": case.params,
                "cells": cells,
                "ratios": ratios,
            }
        )
    return rows


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets of issue 7, judged on this run's rows (None: not measured)."""
    by_id = {row["id"]: row for row in rows}

    def ratio(row_id: str, name: str) -> float | None:
        row = by_id.get(row_id)
        return row["ratios"].get(name) if row else None

    def value(row_id: str, column: str) -> float | None:
        row = by_id.get(row_id)
        return row["cells"].get(column, {}).get("median") if row else None

    checks: list[tuple[str, float | None, str, float]] = [
        (
            "PUSH/PULL tcp 64 B vs zmq.asyncio",
            ratio("pushpull-tcp-64", "trizmq/zmq.asyncio"),
            ">=",
            10.0,
        ),
        ("PUSH/PULL tcp 64 B vs pyzmq sync", ratio("pushpull-tcp-64", "trizmq/pyzmq"), ">=", 0.5),
        (
            "PUSH/PULL tcp 4 KiB vs pyzmq sync",
            ratio("pushpull-tcp-4096", "trizmq/pyzmq"),
            ">=",
            0.8,
        ),
        (
            "PUSH/PULL tcp 1 MiB vs pyzmq sync",
            ratio(f"pushpull-tcp-{MIB}", "trizmq/pyzmq"),
            ">=",
            0.6,
        ),
        ("PUB/SUB 1→4 vs pyzmq sync", ratio("pubsub-tcp-64-4", "trizmq/pyzmq"), ">=", 0.5),
        ("REQ/REP p50 vs zmq.asyncio", ratio("reqrep-tcp-64-p50", "trizmq/zmq.asyncio"), "<=", 0.7),
        ("REQ/REP p50 vs raw trio echo", ratio("reqrep-tcp-64-p50", "trizmq/raw trio"), "<=", 1.3),
        ("inproc 64 B msg/s", value("pushpull-inproc-64", TZ), ">=", 1e6),
        ("inproc 64 B vs pyzmq inproc", ratio("pushpull-inproc-64", "trizmq/pyzmq"), ">", 1.0),
        ("PUB memory, 100 stalled SUBs (MiB)", value("memory-pub-100-stalled", TZ), "<", 150.0),
    ]
    out = []
    for name, measured, op, bound in checks:
        met = None
        if measured is not None:
            met = {
                ">=": measured >= bound,
                ">": measured > bound,
                "<=": measured <= bound,
                "<": measured < bound,
            }[op]
        out.append({"target": name, "op": op, "bound": bound, "measured": measured, "met": met})
    return out


# -- output ----------------------------------------------------------------------------------
def format_value(value: float, metric: str) -> str:
    if metric == "msgs_s":
        if value >= 1e6:
            return f"{value / 1e6:.2f}M"
        if value >= 1e3:
            return f"{value / 1e3:.1f}k"
        return f"{value:.0f}"
    if metric == "peak_rss_mib":
        return f"{value:.1f}"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def format_cell(cell: dict[str, Any] | None, metric: str) -> str:
    if not cell:
        return ""
    if "median" not in cell:
        return "failed"
    text = format_value(cell["median"], metric)
    if len(cell["values"]) > 1:
        lo, hi = format_value(cell["min"], metric), format_value(cell["max"], metric)
        text += f" [{lo}-{hi}]"
    if cell["failed"]:
        text += f" ({cell['failed']} failed)"
    return text


def table(rows: list[dict[str, Any]]) -> str:
    header = ["case", "unit", *(COLUMN_TITLES[c] for c in COLUMNS), *(n for _, n in RATIOS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [format_cell(row["cells"].get(c), row["metric"]) for c in COLUMNS]
        for column in (TZ, SYNC):
            cell = row["cells"].get(column)
            if cell and cell["impl"] not in (TZ, SYNC) and cell.get("median"):
                cells[COLUMNS.index(column)] = f"{cell['impl']}: {cells[COLUMNS.index(column)]}"
        ratios = [f"{row['ratios'][n]:.2f}" if n in row["ratios"] else "" for _, n in RATIOS]
        lines.append("| " + " | ".join([row["label"], row["unit"], *cells, *ratios]) + " |")
    return "\n".join(lines)


def mb_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | trizmq MB/s | pyzmq sync MB/s | pyomq sync MB/s | zmq.asyncio MB/s |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        if row["metric"] != "msgs_s" or row["id"].startswith("mixed"):
            continue
        cells = [row["cells"].get(c, {}).get("mb_s") for c in (TZ, SYNC, OMQ, AIO)]
        lines.append(
            f"| {row['label']} | "
            + " | ".join("" if v is None else f"{v:.1f}" for v in cells)
            + " |"
        )
    return "\n".join(lines)


def targets_table(checks: list[dict[str, Any]]) -> str:
    lines = ["| target | goal | measured | met |", "|---|---|---|---|"]
    for check in checks:
        measured = check["measured"]
        if measured is None:
            shown = "not measured"
        elif check["bound"] >= 1000:
            shown = f"{measured / 1e6:.2f}M"
        else:
            shown = f"{measured:.2f}"
        bound = check["bound"]
        goal = f"{check['op']} {bound / 1e6:.0f}M" if bound >= 1e6 else f"{check['op']} {bound:g}"
        met = {True: "yes", False: "**no**", None: "n/a"}[check["met"]]
        lines.append(f"| {check['target']} | {goal} | {shown} | {met} |")
    return "\n".join(lines)


def draw_png(rows: list[dict[str, Any]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels: list[str] = []
    bars: dict[str, list[float]] = {name: [] for _, name in RATIOS}
    for row in rows:
        if not row["ratios"]:
            continue
        latency = row["kind"] == "latency"
        labels.append(row["label"] + (" (latency, inverted)" if latency else ""))
        for _, name in RATIOS:
            ratio = row["ratios"].get(name, math.nan)
            # one direction for every bar: right of 1 is trizmq doing better
            bars[name].append(1 / ratio if latency and ratio else ratio)
    height = 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(labels) + 1.6))
    colours = {
        "trizmq/pyzmq": "#1f77b4",
        "trizmq/pyomq": "#d62728",
        "trizmq/zmq.asyncio": "#ff7f0e",
        "trizmq/raw trio": "#2ca02c",
    }
    for i, (name, values) in enumerate(bars.items()):
        ys = [j + (i - (len(bars) - 1) / 2) * height for j in range(len(labels))]
        label = "vs " + name.split("/", 1)[1].replace("pyzmq", "pyzmq sync")
        ax.barh(ys, values, height=height, label=label, color=colours[name])
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel(
        "trizmq / other for throughput, other / trizmq for latency: > 1 is trizmq better"
        " (medians, log scale)"
    )
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine() -> dict[str, Any]:
    import trio
    import zmq

    found = omq.versions()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "trio": trio.__version__,
        "pyzmq": zmq.__version__,
        "libzmq": zmq.zmq_version(),
        "pyomq": None if found is None else found["pyomq"],
        "pyomq_python": None if found is None else found["python"],
    }


# -- profile -----------------------------------------------------------------------------------
def profile(directory: str, settings: Settings) -> None:
    """Run trizmq PUSH/PULL tcp 64 B once under cProfile in both processes; print hot spots."""
    import pstats

    os.makedirs(directory, exist_ok=True)
    case = next(c for c in all_cases() if c.id == "pushpull-tcp-64")
    out = {role: os.path.join(directory, f"{role}.pstats") for role in ("receiver", "sender")}
    deadline = time.monotonic() + settings.timeout
    base = dict(case.params, duration=max(settings.duration, 1.0))
    group = Processes(
        [
            dict(base, impl=TZ, role="receiver", profile=out["receiver"]),
            dict(base, impl=TZ, role="sender", profile=out["sender"]),
        ],
        deadline,
    )
    try:
        group.send(1, ("go", [group.expect(0, "ready")]))
        result = group.expect(0, "result")
        print(f"under cProfile: {format_value(result['msgs_s'], 'msgs_s')} msg/s")
    finally:
        group.close()
    for role, path in out.items():
        print(f"\n== {role}: top functions by own time ({path}) ==")
        pstats.Stats(path).sort_stats("tottime").print_stats(15)


# -- entry point -------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="trizmq vs pyzmq (sync and zmq.asyncio) and pyomq, measured interleaved.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a tiny subset (< 30 s), for tests")
    mode.add_argument("--full", action="store_true", help="5 repetitions of 1 s (slow)")
    parser.add_argument("--repetitions", type=int, help="repetitions per cell (median taken)")
    parser.add_argument("--duration", type=float, help="seconds each sender sends")
    parser.add_argument("--timeout", type=float, help="seconds before a measurement is killed")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="run the cases whose id contains this text (repeatable)",
    )
    parser.add_argument(
        "--impl",
        action="append",
        default=[],
        choices=COLUMNS,
        help="measure only this column (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list the case ids and exit")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--png", metavar="PATH", help="draw the ratios (needs matplotlib)")
    parser.add_argument(
        "--replot",
        metavar="JSON",
        help="print the tables of a saved --json run and redraw --png; measure nothing",
    )
    parser.add_argument(
        "--profile", metavar="DIR", help="profile trizmq PUSH/PULL tcp 64 B with cProfile instead"
    )
    return parser.parse_args(argv)


def report(
    meta: dict[str, Any], rows: list[dict[str, Any]], checks: list[dict[str, Any]], png: str | None
) -> None:
    """Print the tables of a run; draw the chart to ``png`` if given."""
    print(
        f"\ntrizmq benchmarks, {meta['mode']} mode: {meta['repetitions']} repetitions of "
        f"{meta['duration_s']:g} s, {meta['cpus']} CPUs, Python {meta['python']}, "
        f"pyzmq {meta['pyzmq']} (libzmq {meta['libzmq']}), trio {meta['trio']}, "
        + (
            f"pyomq {meta['pyomq']} (omq.rs, on Python {meta['pyomq_python']})"
            if meta.get("pyomq")
            else "no pyomq (no omq interpreter: `make venv-omq` builds one from a "
            "Python >= 3.12): its column is left out"
        )
        + f"; {meta['elapsed_s']:.0f} s\n"
    )
    print(table(rows))
    print("\nThroughput in MB/s (medians):\n")
    print(mb_table(rows))
    print("\nTargets (the speed targets of docs/performance.md):\n")
    print(targets_table(checks))
    if png:
        title = (
            f"trizmq relative to the others, {meta['mode']} mode, "
            f"median of {meta['repetitions']}, {meta['cpus']} CPUs"
        )
        draw_png(rows, png, title)


def run(argv: list[str] | None = None, progress: Callable[[int, int], None] | None = None) -> int:
    """Run the suite with command-line arguments ``argv``; return the exit status.

    ``progress(done, total)`` is called after each measurement.
    """
    args = parse_args(argv)
    mode = "quick" if args.quick else "full" if args.full else "default"
    settings = settings_for(mode)
    if args.repetitions:
        settings.repetitions = args.repetitions
    if args.duration:
        settings.duration = settings.latency_duration = args.duration
    if args.timeout:
        settings.timeout = args.timeout
    if args.profile:
        profile(args.profile, settings)
        return 0
    if args.replot:
        with open(args.replot) as f:
            saved = json.load(f)
        report(saved["meta"], saved["rows"], saved["targets"], args.png)
        return 0
    cases = all_cases()
    if args.list:
        for case in cases:
            print(f"{case.id:32} {case.label}")
        return 0
    if args.only:
        cases = [c for c in cases if any(text in c.id for text in args.only)]
    elif mode == "quick":
        cases = [c for c in cases if c.id in QUICK_IDS]
    if args.impl:
        for case in cases:
            case.columns = {k: v for k, v in case.columns.items() if k in args.impl}
        cases = [c for c in cases if c.columns]
    if not cases:
        print("no case matches", file=sys.stderr)
        return 2
    started = time.time()
    samples = run_cases(cases, settings, progress=progress)
    rows = summarize(cases, samples)
    checks = targets(rows)
    elapsed = time.time() - started
    meta = {
        "mode": mode,
        "repetitions": settings.repetitions,
        "duration_s": settings.duration,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "elapsed_s": round(elapsed, 1),
        **machine(),
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows, "targets": checks}, f, indent=1)
    report(meta, rows, checks, args.png)
    failed = sum(cell["failed"] for row in rows for cell in row["cells"].values())
    if failed:
        print(f"\n{failed} measurement(s) failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run())
