"""Admission control of the "zmq" source through PySpark's read limits, end to end.

Every test runs a streaming query over several spools' logs and counts its batches
and their rows (``foreachBatch``) and bytes.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from trizmq.spark import _wal
from trizmq.spark._datasource import Admission, _limit_bytes

from .conftest import QUERY_TIMEOUT
from .test_source_sink import wait_for


class Batches:
    """A ``foreachBatch`` function that keeps each batch's payloads and when it ran."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.got: list[tuple[int, list[bytes], float]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        payloads = [bytes(r.payload) for r in df.select("payload").collect()]
        with self.lock:
            self.got.append((batch_id, payloads, time.monotonic()))

    def full(self) -> list[list[bytes]]:
        """The payloads of each batch that had rows, in order."""
        with self.lock:
            return [rows for _id, rows, _at in sorted(self.got) if rows]

    def times(self) -> list[float]:
        with self.lock:
            return [at for _id, rows, at in sorted(self.got) if rows]


def spool(path: Path | str, frames: list[list[bytes]]) -> Path | str:
    """A spool's log at ``path`` holding messages of these frames (appended if it exists)."""
    log = _wal.LogWriter(path, fsync=False)
    try:
        if frames:
            log.append([(0, None, f) for f in frames])
    finally:
        log.close()
    return path


def rows(prefix: bytes, n: int, size: int = 0) -> list[list[bytes]]:
    """``n`` one-frame messages ``prefix-i``, padded to ``size`` bytes."""
    return [[(b"%s-%04d" % (prefix, i)).ljust(size, b".")] for i in range(n)]


def start(spark: Any, spools: list[Path], ck: Path, batches: Batches, *,
          available_now: bool = False, **options: str) -> Any:
    reader = spark.readStream.format("zmq").option("spool", ",".join(map(str, spools)))
    for key, value in options.items():
        reader = reader.option(key, value)
    writer = reader.load().writeStream.foreachBatch(batches).option("checkpointLocation", str(ck))
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="100 milliseconds")
    return writer.start()


def every_payload(*spools: list[list[bytes]]) -> list[bytes]:
    return sorted(f[-1] for frames in spools for f in frames)


def test_max_records_per_trigger_bounds_each_batch_of_a_running_query(
    spark: Any, tmp_path: Path
) -> None:
    a, b, c = rows(b"a", 130), rows(b"b", 60), rows(b"c", 10)
    spools = [spool(tmp_path / "a", a), spool(tmp_path / "b", b), spool(tmp_path / "c", c)]
    batches = Batches()
    query = start(spark, spools, tmp_path / "ck", batches, maxRecordsPerTrigger="50")
    try:
        wait_for(lambda: sum(map(len, batches.full())) >= 200, "the 200 rows")
        # and the rows that arrive while it runs
        more = rows(b"late", 70)
        spool(tmp_path / "b", more)
        wait_for(lambda: sum(map(len, batches.full())) >= 270, "the 70 late rows")

        def progress() -> list[int]:
            return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

        wait_for(lambda: sum(progress()) >= 270, "the progress of every batch")
        sizes = [len(r) for r in batches.full()]
        assert sizes[:4] == [50, 50, 50, 50], sizes
        assert max(sizes) <= 50 and sum(sizes) == 270, sizes
        got = sorted(p for r in batches.full() for p in r)
        assert got == every_payload(a, b, c, more)
        assert progress() == sizes
        # the first batch shared the 50 rows fairly among the three spools
        first = batches.full()[0]
        assert sum(p.startswith(b"c-") for p in first) == 10
        assert sum(p.startswith(b"a-") for p in first) == 20
    finally:
        query.stop()


def test_available_now_drains_in_batches_that_respect_the_maximum(
    spark: Any, tmp_path: Path
) -> None:
    """The minimum does not hold an availableNow query back: it drains, then stops."""
    a, b = rows(b"a", 180), rows(b"b", 70)
    spools = [spool(tmp_path / "a", a), spool(tmp_path / "b", b)]
    batches = Batches()
    query = start(
        spark, spools, tmp_path / "ck", batches, available_now=True,
        maxRecordsPerTrigger="100", minRecordsPerTrigger="80", maxTriggerDelay="10m",
    )
    assert query.awaitTermination(QUERY_TIMEOUT), "the availableNow query did not finish"
    assert [len(r) for r in batches.full()] == [100, 100, 50]
    assert sorted(p for r in batches.full() for p in r) == every_payload(a, b)


@pytest.mark.parametrize(
    "options",
    [{"maxBytesPerTrigger": "1000"}, {"maxBytesPerTrigger": "1000", "maxRecordsPerTrigger": "30"}],
    ids=["bytes", "bytes-and-records"],
)
def test_max_bytes_per_trigger_counts_payload_bytes(
    spark: Any, tmp_path: Path, options: dict[str, str]
) -> None:
    a = rows(b"a", 40, size=100)
    # two frames: only the last, the payload, counts
    b = [[b"x" * 500, p] for [p] in rows(b"b", 60, size=10)]
    c = [*rows(b"big", 1, size=3000), *rows(b"c", 5, size=50)]  # a row above the limit
    spools = [spool(tmp_path / "a", a), spool(tmp_path / "b", b), spool(tmp_path / "c", c)]
    batches = Batches()
    query = start(spark, spools, tmp_path / "ck", batches, available_now=True, **options)
    assert query.awaitTermination(QUERY_TIMEOUT), "the availableNow query did not finish"
    full = batches.full()
    assert sorted(p for r in full for p in r) == every_payload(a, b, c)
    for batch in full:
        size = sum(map(len, batch))
        assert size <= 1000 or len(batch) == 1, (len(batch), size)
        if "maxRecordsPerTrigger" in options:
            assert len(batch) <= 30
    assert [b"big-0000".ljust(3000, b".")] in full, "the big row goes alone"
    assert len(full) >= 6  # the big row, and 4850 payload bytes more


def test_min_records_per_trigger_waits_for_rows(spark: Any, tmp_path: Path) -> None:
    spools = [spool(tmp_path / "a", rows(b"a", 30)), spool(tmp_path / "b", rows(b"b", 20))]
    batches = Batches()
    query = start(spark, spools, tmp_path / "ck", batches,
                  minRecordsPerTrigger="50", maxTriggerDelay="10m")
    try:
        wait_for(lambda: len(batches.full()) == 1, "the first batch (50 rows, the minimum)")
        assert len(batches.full()[0]) == 50
        spool(tmp_path / "a", rows(b"a2", 20))  # a burst under the minimum: no batch
        deadline = time.monotonic() + 2.0  # twenty triggers of the running query
        while time.monotonic() < deadline:
            assert len(batches.full()) == 1, "a batch ran under the minimum"
            time.sleep(0.1)
        spool(tmp_path / "b", rows(b"b2", 40))  # now 60 rows: one batch
        wait_for(lambda: len(batches.full()) == 2, "the batch of the burst")
        assert len(batches.full()[1]) == 60
    finally:
        query.stop()


def test_max_trigger_delay_lets_fewer_rows_through(spark: Any, tmp_path: Path) -> None:
    spools = [spool(tmp_path / "a", rows(b"a", 10)), spool(tmp_path / "b", rows(b"b", 5))]
    batches = Batches()
    started = time.monotonic()
    query = start(spark, spools, tmp_path / "ck", batches,
                  minRecordsPerTrigger="1000", maxTriggerDelay="3s")
    try:
        wait_for(lambda: len(batches.full()) == 1, "the batch after the delay")
        assert len(batches.full()[0]) == 15
        assert batches.times()[0] - started >= 3.0
        spool(tmp_path / "a", rows(b"a2", 7))
        wait_for(lambda: len(batches.full()) == 2, "the next batch after the delay")
        assert len(batches.full()[1]) == 7
    finally:
        query.stop()


def test_a_bad_admission_option_is_refused_by_name(spark: Any, tmp_path: Path) -> None:
    log = spool(tmp_path / "a", rows(b"a", 1))
    for key, value, name in [
        ("maxTriggerDelay", "5", "maxTriggerDelay"),  # a duration needs its unit
        ("maxBytesPerTrigger", "0", "maxBytesPerTrigger"),
    ]:
        batches = Batches()
        with pytest.raises(Exception, match=name):
            options = {key: value, "minRecordsPerTrigger": "10"}
            start(spark, [log], tmp_path / f"ck-{key}", batches, **options).processAllAvailable()
    for options, message in [
        ({"maxtriggerdelay": "5s"}, "maxTriggerDelay applies only with minRecordsPerTrigger"),
        ({"minrecordspertrigger": "10", "maxtriggerdelay": "soon"}, "maxTriggerDelay"),
        ({"minrecordspertrigger": "10", "maxrecordspertrigger": "5"}, "above maxRecordsPerTrigger"),
        ({"maxrecordspertrigger": "many"}, "maxRecordsPerTrigger"),
    ]:
        with pytest.raises(ValueError, match=message):
            Admission.from_options(options)


def test_byte_shares_are_fair_and_take_at_least_one_row(tmp_path: Path) -> None:
    """Without Spark: the payload index of two logs and the byte limit's shares."""
    spool(tmp_path / "a", rows(b"a", 20, size=100))
    spool(tmp_path / "b", [*rows(b"b", 1, size=500), *rows(b"b", 20, size=10)])
    sizes = {name: _wal.PayloadIndex(tmp_path / name) for name in ("a", "b")}
    sizes["a"].extend(0, 20)
    sizes["b"].extend(0, 21)
    assert sizes["a"].size(0, 20) == 2000 and sizes["b"].size(1, 21) == 200
    start_, ends = {"a": 0, "b": 1}, {"a": 20, "b": 21}
    assert _limit_bytes(start_, ends, 400, sizes) == {"a": 2, "b": 21}
    assert _limit_bytes({"a": 0, "b": 0}, ends, 50, sizes) == {"a": 1, "b": 0}
    assert _limit_bytes(start_, start_, 400, sizes) == start_
    sizes["a"].forget(10)
    assert sizes["a"].size(10, 20) == 1000
